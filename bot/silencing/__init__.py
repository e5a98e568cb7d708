"""Silencing from Slack: Grafana's silence API, the service, the ledger, the watcher and who may."""
