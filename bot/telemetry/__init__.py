"""What queuebot tells its operators: logs (redacted) and its own Prometheus metrics."""
