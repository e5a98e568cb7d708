"""The HTTP routes of the bot's aiohttp application."""

SLACK_EVENTS_PATH = "/slack/events"
GRAFANA_WEBHOOK_PATH = "/webhooks/grafana"
HEALTHZ_PATH = "/healthz"
METRICS_PATH = "/metrics"
OPENAPI_PATH = "/openapi.json"
