"""Configuration (bot.config) and how `queuebot serve` reports a bad setting."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import time
from pathlib import Path

import pytest

from bot.config import ConfigError, Settings, load_settings
from bot.domain.notifications import parse_webhook
from bot.incidents.routing import route_channel
from bot.render.values import KnownValue, ValueNaming
from testkit.payloads import encoded, reference
from tests.documentation import DOCS, section, settings_examples

SERVE_ENV = {
    "SLACK_BOT_TOKEN": "xoxb-test-token",
    "SLACK_SIGNING_SECRET": "signing-secret",
    "QUEUEBOT_CHANNEL": "#alerts",
    "QUEUEBOT_WEBHOOK_TOKEN": "webhook-token",
}


def _serve(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [sys.executable, "-m", "bot", "serve"],
        env=base | env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


class TestSettings:
    def test_secrets_are_hidden(self) -> None:
        """Secrets never show in the settings' text form."""
        settings = load_settings(SERVE_ENV, for_serve=True)
        assert "xoxb-test-token" not in repr(settings) and "signing-secret" not in str(settings)

    @pytest.mark.parametrize("missing", sorted(SERVE_ENV))
    def test_serve_names_missing_variable(self, missing: str) -> None:
        """Each variable serve needs is named when it is missing."""
        env = {k: v for k, v in SERVE_ENV.items() if k != missing}
        with pytest.raises(ConfigError, match=missing):
            load_settings(env, for_serve=True)

    def test_malformed_port(self) -> None:
        """A port that is not a number is named, with what was given."""
        with pytest.raises(ConfigError, match=r"^PORT is malformed.*'eighty'"):
            load_settings(SERVE_ENV | {"PORT": "eighty"})

    def test_bad_yaml_names_the_file(self, tmp_path: Path) -> None:
        """A YAML syntax error names QUEUEBOT_CONFIG and the line."""
        path = tmp_path / "queuebot.yml"
        path.write_text("routes:\n  - channel: [unclosed\n")
        with pytest.raises(ConfigError, match=r"QUEUEBOT_CONFIG .* line \d+"):
            load_settings(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)})

    def test_unknown_key_in_yaml(self, tmp_path: Path) -> None:
        """A misspelt key in the YAML file is refused rather than ignored."""
        path = tmp_path / "queuebot.yml"
        path.write_text("rutes: []\n")
        with pytest.raises(ConfigError, match="rutes"):
            load_settings(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)})

    def test_silence_policy_refuses_a_handle_for_an_id(self, tmp_path: Path) -> None:
        """allowed_groups takes user group ids; a handle like @oncall is named as the fault."""
        path = tmp_path / "queuebot.yml"
        path.write_text("silence:\n  allowed_groups: ['@oncall']\n")
        with pytest.raises(ConfigError, match=r"silence\.allowed_groups\.0 is malformed"):
            load_settings(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)})

    def test_webhook_auth_none_with_a_token_is_refused(self) -> None:
        """Opting out of webhook auth while setting a token is a contradiction, named."""
        with pytest.raises(ConfigError, match="QUEUEBOT_WEBHOOK_AUTH=none contradicts"):
            load_settings(SERVE_ENV | {"QUEUEBOT_WEBHOOK_AUTH": "none"}, for_serve=True)

    def test_webhook_auth_takes_only_none(self) -> None:
        """QUEUEBOT_WEBHOOK_AUTH is `none` or unset; anything else is named as malformed."""
        with pytest.raises(ConfigError, match=r"^QUEUEBOT_WEBHOOK_AUTH is malformed"):
            load_settings(SERVE_ENV | {"QUEUEBOT_WEBHOOK_AUTH": "off"})

    def test_an_hmac_secret_alone_is_webhook_auth(self) -> None:
        """Grafana's HMAC signature is enough: no token is needed beside it."""
        env = {k: v for k, v in SERVE_ENV.items() if k != "QUEUEBOT_WEBHOOK_TOKEN"}
        settings = load_settings(env | {"QUEUEBOT_WEBHOOK_HMAC_SECRET": "s"}, for_serve=True)
        assert settings.webhook_hmac_secret is not None

    def test_silence_check_interval_must_be_positive(self) -> None:
        with pytest.raises(ConfigError, match=r"^QUEUEBOT_SILENCE_CHECK_SECONDS is malformed"):
            load_settings(SERVE_ENV | {"QUEUEBOT_SILENCE_CHECK_SECONDS": "0"})


TIMINGS = {
    "QUEUEBOT_OUTBOX_LEASE_SECONDS": ("outbox_lease", 10.0),
    "QUEUEBOT_OUTBOX_POLL_SECONDS": ("outbox_poll", 5.0),
    "QUEUEBOT_SLACK_POSTS_PER_SECOND": ("posts_per_second", 0.95),
    "QUEUEBOT_DIGEST_EDIT_SECONDS": ("digest_edit", 3.0),
    "QUEUEBOT_DIGEST_CLAIM_SECONDS": ("digest_claim", 30.0),
    "QUEUEBOT_DIAGNOSIS_CLAIM_SECONDS": ("diagnosis_claim", 15.0),
    "QUEUEBOT_HEADS_UP_POLL_SECONDS": ("heads_up_poll", 5.0),
    "QUEUEBOT_REPORT_POLL_SECONDS": ("report_poll", 30.0),
    "QUEUEBOT_CAPACITY_SCHEDULE_CHECK_SECONDS": ("schedule_check", 60.0),
    "QUEUEBOT_PRUNE_SECONDS": ("prune_interval", 3600.0),
    "QUEUEBOT_SILENCE_CHECK_SECONDS": ("silence_check", 30.0),
    "QUEUEBOT_FORECAST_CHECK_SECONDS": ("forecast_check", 60.0),
}


class TestTimings:
    def test_unset_they_are_the_documented_defaults(self) -> None:
        timings = load_settings(SERVE_ENV).timings
        assert {v: getattr(timings, f) for v, (f, _) in TIMINGS.items()} == {
            v: default for v, (_, default) in TIMINGS.items()
        }

    def test_each_is_read_from_its_variable(self) -> None:
        turned = {variable: str(default / 10) for variable, (_, default) in TIMINGS.items()}
        timings = load_settings(SERVE_ENV | turned).timings
        for variable, (field, default) in TIMINGS.items():
            assert getattr(timings, field) == pytest.approx(default / 10), variable

    def test_the_settings_reference_names_each_with_its_default(self) -> None:
        timings = section(DOCS / "settings.md", "Timings")
        for variable, (_, default) in TIMINGS.items():
            assert f"`{variable}` | {default:g}" in timings, variable

    @pytest.mark.parametrize(
        "variable", ["QUEUEBOT_OUTBOX_LEASE_SECONDS", "QUEUEBOT_PRUNE_SECONDS"]
    )
    def test_a_timing_of_nothing_is_refused_by_name(self, variable: str) -> None:
        with pytest.raises(ConfigError, match=rf"^{variable} is malformed"):
            load_settings(SERVE_ENV | {variable: "0"})


class TestRouting:
    def test_route_by_annotation(self, tmp_path: Path) -> None:
        """Team=pytorch-dev-infra goes to the team's channel; others to the default."""
        path = tmp_path / "queuebot.yml"
        path.write_text(
            "routes:\n"
            "  - match: {team: other}\n    channel: '#nope'\n"
            "  - match: {Team: pytorch-dev-infra}\n    channel: '#ci-infra-alerts'\n"
        )
        settings = load_settings(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)})
        group = parse_webhook(encoded(reference()))
        assert route_channel(group, settings.file.routes, "#alerts") == "#ci-infra-alerts"
        assert route_channel(group, settings.file.routes[:1], "#alerts") == "#alerts"

    def test_route_by_regex(self, tmp_path: Path) -> None:
        """match_re matches the whole value."""
        path = tmp_path / "queuebot.yml"
        path.write_text("routes:\n  - match_re: {type: 'alerting-.*'}\n    channel: C0INFRA\n")
        settings = load_settings(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)})
        group = parse_webhook(encoded(reference()))
        assert route_channel(group, settings.file.routes, "#alerts") == "C0INFRA"


class TestServeCommand:
    def test_missing_setting_is_one_line(self) -> None:
        """`queuebot serve` without a token exits 2 with one line naming it, no traceback."""
        result = _serve({k: v for k, v in SERVE_ENV.items() if k != "SLACK_BOT_TOKEN"})
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "SLACK_BOT_TOKEN" in lines[0]
        assert "Traceback" not in result.stderr

    def test_no_webhook_auth_refuses_to_start(self) -> None:
        """Without a webhook token or HMAC secret, serve refuses in one line that names both
        and the explicit way out."""
        result = _serve({k: v for k, v in SERVE_ENV.items() if k != "QUEUEBOT_WEBHOOK_TOKEN"})
        assert result.returncode == 2
        (line,) = result.stderr.strip().splitlines()
        assert "QUEUEBOT_WEBHOOK_TOKEN or QUEUEBOT_WEBHOOK_HMAC_SECRET is not set" in line
        assert "QUEUEBOT_WEBHOOK_AUTH=none" in line

    def test_malformed_setting_is_one_line(self) -> None:
        """A malformed SLACK_API_URL is named in one line."""
        result = _serve(SERVE_ENV | {"SLACK_API_URL": "not a url"})
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "SLACK_API_URL" in lines[0]


def test_the_docs_yaml_examples_are_valid(tmp_path: Path) -> None:
    """Every YAML file shown in the README and docs/ loads; the full one with its routes,
    diagnostics, silence, early warning and capacity report settings."""
    examples = _doc_examples()
    loaded = []
    for n, example in enumerate(examples):
        path = tmp_path / f"queuebot-{n}.yml"
        path.write_text(example)
        loaded.append(load_settings(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)}))
    (settings,) = [s for s, text in zip(loaded, examples, strict=True) if "routes:" in text]
    (warned,) = [
        s
        for s, text in zip(loaded, examples, strict=True)
        if " runner_types:" in text and "early_warning" in text
    ]
    (reported,) = [s for s, text in zip(loaded, examples, strict=True) if "Europe/London" in text]
    (post,) = reported.file.capacity_report.posts
    assert (post.channel, post.weekday, post.at, post.timezone) == (
        "#ci-capacity",
        "monday",
        time(9, 0),
        "Europe/London",
    )
    assert reported.file.capacity_report.reports("linux.2xlarge")
    assert not reported.file.capacity_report.reports("windows.4xlarge")
    (warning,) = warned.file.early_warning
    assert warning.threshold(300.0).wait_seconds == 3600.0 and warning.watches("linux.g5.4xlarge")
    assert not warning.watches("windows.4xlarge")
    assert settings.file.early_warning[0].channel == "#ci-infra-alerts"
    assert settings.file.capacity_report.posts[0].channel == "#ci-capacity"
    assert settings.file.queries.window == "15m"
    assert "my_exporter_queue_depth" in settings.file.queries.queued
    assert settings.file.silence.allowed_groups == ["S0456EFGH"]
    assert settings.file.jobs.exclude == ("rocm", "xpu", "s390x", "b200", "h100", "macos")
    assert settings.file.jobs.runner_type.runner_type(["self-hosted", "linux.2xlarge"], None) == (
        "linux.2xlarge"
    )


def _doc_examples() -> list[str]:
    """The YAML files shown in the README and docs/ (not the fragments of other programs')."""
    return [block.body for block in settings_examples()]


def test_the_docs_runner_type_rules_give_what_its_table_says(tmp_path: Path) -> None:
    """The default rule and the documented rule for `[self-hosted, linux, x64, <type>]`."""
    (example,) = [text for text in _doc_examples() if "label_pattern" in text and "x64" in text]
    path = tmp_path / "queuebot.yml"
    path.write_text(example)
    rule = load_settings(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)}).file.jobs.runner_type
    default = load_settings(SERVE_ENV).file.jobs.runner_type
    ec2 = ["self-hosted", "linux", "x64", "ubuntu-2204"]
    assert default.runner_type(["self-hosted", "linux.2xlarge"], None) == "linux.2xlarge"
    assert default.runner_type(["linux.2xlarge"], None) == "linux.2xlarge"
    assert default.runner_type(["arc-runner-set"], None) == "arc-runner-set"
    assert default.runner_type(ec2, None) == "linux"
    assert rule.runner_type(ec2, None) == "ubuntu-2204"
    assert rule.runner_type(["self-hosted", "Linux", "ARM64", "amazon"], None) == "amazon"
    assert rule.runner_type(["arc-runner-set"], None) == "arc-runner-set"
    assert rule.runner_type(["self-hosted", "linux.2xlarge"], None) == "linux.2xlarge"
    # GitHub's own labels alone: the default rule's answer.
    assert rule.runner_type(["self-hosted", "Linux", "X64"], None) == "Linux"


def test_the_docs_organizations_example_loads_with_its_secrets(tmp_path: Path) -> None:
    (example,) = [text for text in _doc_examples() if "github:" in text]
    path = tmp_path / "queuebot.yml"
    path.write_text(example)
    env = SERVE_ENV | {
        "QUEUEBOT_CONFIG": str(path),
        "LABS_ORG_HOOK_SECRET": "labs-org-hook",
        "LABS_REPO_HOOK_SECRET": "labs-repo-hook",
        "GITHUB_WEBHOOK_SECRET_PYTORCH": "pytorch-hook",
    }
    settings = load_settings(env, for_serve=True)
    assert settings.github_orgs == ("pytorch", "pytorch-labs")
    assert {
        org: [secret.get_secret_value() for secret in secrets]
        for org, secrets in settings.github_org_secrets.items()
    } == {"pytorch": ["pytorch-hook"], "pytorch-labs": ["labs-org-hook", "labs-repo-hook"]}
    assert settings.file.capacity_report.orgs == ("pytorch-labs",)
    unset = {k: v for k, v in env.items() if k != "LABS_REPO_HOOK_SECRET"}
    with pytest.raises(ConfigError, match="names LABS_REPO_HOOK_SECRET for pytorch-labs's"):
        load_settings(unset, for_serve=True)


class TestAlertValues:
    """`alert_values:` in the YAML file: how alerts' values are named, and its mistakes."""

    @staticmethod
    def _load(tmp_path: Path, text: str) -> Settings:
        path = tmp_path / "queuebot.yml"
        path.write_text(text)
        return load_settings(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)})

    def test_the_mapping_names_values_hides_them_and_pairs_thresholds(self, tmp_path: Path) -> None:
        settings = self._load(
            tmp_path,
            "alert_values:\n"
            "  B: {name: Jobs queued}\n"
            "  C: {hide: true}\n"
            "  wait_s: {name: Longest wait, unit: s, threshold: wait_threshold_s}\n",
        )
        naming = ValueNaming.of(settings.file.alert_values)
        assert naming.named("B") == KnownValue("Jobs queued")
        assert naming.named("C").hidden
        assert naming.named("wait_s") == KnownValue("Longest wait", "s", "wait_threshold_s")
        assert naming.named("wait_threshold_s").unit == "s"
        assert naming.named("max_queue_time_mins") == KnownValue(
            "Max queue time", "min", "queue_time_threshold"
        )

    def test_without_it_values_have_queuebots_own_names(self, tmp_path: Path) -> None:
        settings = self._load(tmp_path, "auto_diagnose: true\n")
        assert settings.file.alert_values == {}
        assert ValueNaming.of(settings.file.alert_values).known == ValueNaming().known

    @pytest.mark.parametrize(
        ("entry", "problem"),
        [
            ("B: {nmae: Jobs queued}", r"alert_values\.B\.nmae is not a setting queuebot knows"),
            ("B: Jobs queued", r"alert_values\.B is malformed: must be a mapping"),
            ("B: {}", r"alert_values\.B is malformed: must give a name, a unit, a threshold"),
            ("C: {hide: true, name: C}", r"alert_values\.C is malformed: must not give a name"),
            ("B: {name: [1]}", r"alert_values\.B\.name is malformed: must be text"),
            ("B: {name: '  '}", r"alert_values\.B\.name is malformed: must have at least 1"),
            ("B: {name: " + "x" * 81 + "}", r"alert_values\.B\.name .* at most 80 characters"),
            ("B: {hide: maybe}", r"alert_values\.B\.hide is malformed: must be true or false"),
            ("B: {threshold: B}", r"alert_values has B\.threshold naming 'B' itself"),
            ("Summary: {name: S}", r"alert_values\.Summary\.\[key\] is an annotation queuebot"),
            ("1: {name: One}", r"alert_values\.1\.\[key\] is malformed: must be text"),
        ],
    )
    def test_a_bad_mapping_is_named_in_plain_words(
        self, tmp_path: Path, entry: str, problem: str
    ) -> None:
        with pytest.raises(ConfigError, match=rf"^QUEUEBOT_CONFIG \(.*\): {problem}"):
            self._load(tmp_path, f"alert_values:\n  {entry}\n")

    def test_the_docs_example_names_the_shipped_grafana_rule(self, tmp_path: Path) -> None:
        """The documented `alert_values` example loads and says what it says it does."""
        (example,) = [text for text in _doc_examples() if "alert_values:" in text]
        naming = ValueNaming.of(self._load(tmp_path, example).file.alert_values)
        assert naming.named("threshold_breached").hidden
        assert naming.named("B").label == "Jobs queued"
