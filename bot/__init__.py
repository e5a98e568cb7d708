"""queuebot: Grafana queueing alerts as Slack conversations for the CI runner fleet's on-call."""

__version__ = "0.1.0"
