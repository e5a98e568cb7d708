"""Local stand-ins for the systems queuebot talks to, for the tests and `queuebot demo`.

- `queuebot_lab.sandbox.slack`: a Slack-compatible workspace (Web API, response URLs, files, Socket
  Mode, interactivity and a web page that renders the channel);
- `queuebot_lab.sandbox.grafana`: Grafana's Alertmanager-compatible silence and alert API;
- `queuebot_lab.sandbox.github`: GitHub's REST API for self-hosted runner lists;
- `queuebot_lab.sandbox.serving`: one way to serve any of them on a real port.
"""
