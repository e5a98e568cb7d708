"""The shipped Prometheus rules and Alertmanager configuration, checked by the tools that load
them: `promtool check rules` and the rules' own unit tests (`promtool test rules`), and
`amtool check-config`; and the rules say what queuebot's message reads."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from testkit.integration import require_binary

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
RULES = DEPLOY / "prometheus" / "rules.yml"
INSTALL = "apt-get install -y prometheus prometheus-alertmanager"


def run(*command: str) -> str:
    done = subprocess.run(  # noqa: S603 - promtool and amtool on the shipped files
        command, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def test_the_rules_pass_promtools_check_and_their_unit_tests() -> None:
    promtool = require_binary("promtool", INSTALL)
    assert "SUCCESS: 1 rules found" in run(promtool, "check", "rules", str(RULES))
    assert "SUCCESS" in run(promtool, "test", "rules", str(RULES.with_name("rules_test.yml")))


def test_the_unit_tests_fail_when_the_rule_is_wrong(tmp_path: Path) -> None:
    """The unit tests can tell: with a threshold changed, they fail."""
    promtool = require_binary("promtool", INSTALL)
    changed = RULES.read_text().replace(") > 5)", ") > 10)")
    assert changed != RULES.read_text()
    (tmp_path / "rules.yml").write_text(changed)
    tests = tmp_path / "rules_test.yml"
    tests.write_text(RULES.with_name("rules_test.yml").read_text())
    done = subprocess.run(  # noqa: S603 - promtool on a copy of the shipped rules
        [promtool, "test", "rules", str(tests)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "linux.arm64.2xlarge" in done.stdout + done.stderr


def test_the_rule_carries_what_queuebot_renders() -> None:
    (group,) = yaml.safe_load(RULES.read_text())["groups"]
    (rule,) = group["rules"]
    assert rule["labels"]["priority"] == "P2" and rule["labels"]["team"]
    annotations = rule["annotations"]
    for key in ("summary", "description", "runbook_url", "dashboard"):
        assert annotations[key].strip(), key
    # The message's values, named as queuebot names them.
    assert annotations["queued_jobs"] == "{{ $value }}"
    assert "queuebot_queue_longest_wait_seconds" in annotations["longest_wait_minutes"]
    assert "max by (runner_type)" in rule["expr"]


def test_the_alertmanager_configuration_passes_amtool() -> None:
    amtool = require_binary("amtool", INSTALL)
    config = DEPLOY / "alertmanager" / "alertmanager.yml"
    assert "SUCCESS" in run(amtool, "check-config", str(config))
    receiver = yaml.safe_load(config.read_text())["receivers"][0]["webhook_configs"][0]
    assert receiver["url"].endswith("/webhooks/grafana")
    assert receiver["send_resolved"] is True
    assert receiver["http_config"]["authorization"]["type"] == "Bearer"
