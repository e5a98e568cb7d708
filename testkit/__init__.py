"""What the tests and the benchmarks share: servers on free local ports, the real Prometheus,
Alertmanager and PostgreSQL they start, the app running against the lab's stand-ins, webhook
bodies from tests/fixtures, and fleets read as the bot reads them."""
