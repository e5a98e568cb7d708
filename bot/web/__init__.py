"""HTTP edges: the Grafana/Alertmanager webhook, OpenAPI, health and metrics."""
