"""The HTTP routes of the bot's aiohttp application."""

SLACK_EVENTS_PATH = "/slack/events"
GRAFANA_WEBHOOK_PATH = "/webhooks/grafana"
GITHUB_WEBHOOK_PATH = "/webhooks/github"
HEALTHZ_PATH = "/healthz"
METRICS_PATH = "/metrics"
OPENAPI_PATH = "/openapi.json"
