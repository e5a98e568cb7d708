"""The lab's own tests: the local Slack workspace, the GitHub and Grafana stand-ins, the
simulator and the demo."""
