"""queuebot's lab: what lets queuebot be tried and tested without Slack, Grafana or a fleet of
its own, kept out of the product's package. A local Slack workspace and stand-ins for GitHub's
and Grafana's APIs (`sandbox`), a simulated CI fleet (`simulator`), and `queuebot demo`
(`demo`), which puts them together."""
