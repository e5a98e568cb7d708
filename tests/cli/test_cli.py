"""The command line as a newcomer and an admin run it: demo, render, check."""

from __future__ import annotations

import asyncio
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli.main import build_parser
from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.sandbox.grafana import GrafanaSandbox
from queuebot_lab.sandbox.slack import SlackSandbox
from queuebot_lab.simulator import MetricsShape, Scenario, SimulationSpec
from testkit.fixtures import PrometheusFactory
from testkit.harness import BOT_TOKEN
from testkit.payloads import FIXTURES
from testkit.timing import fast_environment


def _demo_environ() -> dict[str, str]:
    """A bare environment, with the suite's cache (the demo's fleet, simulated once a run) and
    timings."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    env |= fast_environment()
    # alice's story with a short pause between its steps, not the 1.5 s a reader is given.
    env["QUEUEBOT_DEMO_PAUSE_SECONDS"] = "0.2"
    if "XDG_CACHE_HOME" in os.environ:
        env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]
    return env


def _run_until(
    command: list[str],
    marker: str,
    timeout: float = 120.0,
    typed: str = "",
    *,
    with_stderr: bool = False,
) -> tuple[str, int]:
    """Start `command` with `typed` as its input, read its stdout (and stderr, `with_stderr`)
    until `marker` shows, then stop it with Ctrl-C."""
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if with_stderr else subprocess.DEVNULL,
        bufsize=0,
        env=_demo_environ(),
    )
    assert process.stdout is not None and process.stdin is not None
    process.stdin.write(typed.encode())
    process.stdin.close()
    process.stdin = None  # all typed: communicate() below must not flush it again
    seen = b""
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    try:
        while marker.encode() not in seen and time.monotonic() < deadline:
            if selector.select(timeout=0.5):
                chunk = os.read(process.stdout.fileno(), 65536)
                if not chunk:
                    break
                seen += chunk
    finally:
        process.send_signal(signal.SIGINT)
        try:
            rest, _ = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            rest, _ = process.communicate()
        selector.close()
    return (seen + rest).decode(), process.returncode


def test_demo_tells_the_on_calls_story() -> None:
    """One run of the demo, as a newcomer sees it: the reference alert posted and printed;
    alice's first click runs diagnostics on the simulated fleet (report and chart in the
    thread, no Prometheus); she silences the alert through the modal; /queue-status typed into
    the terminal is sent as hers; she lifts the silence; Ctrl-C stops it all."""
    output, code = _run_until(
        # A moment whose story crosses into a new year: the story never depends on the hour.
        [sys.executable, "-m", "bot", "demo", "--port", "0", "--at", "2026-12-31T23:59:40Z"],
        "*Unsilenced* by @alice",
        typed="/queue-status help\n/queue-status linux.g5\n",
    )
    # The reference alert.
    assert "[P2] Jobs are queueing in autoscaled machines" in output
    assert "114 min" in output and "Max queue size:* 14" in output
    assert "pytorch-dev-infra" in output
    assert "https://hud.pytorch.org/metrics" in output
    assert "[Run diagnostics]" in output
    # Diagnostics. The simulated fleet stages a surge on one runner type and the autoscaler's
    # limit on another, both queueing whenever the demo starts; read on the demo's clock.
    assert "── alice clicks Run diagnostics ─" in output
    assert "Scope: isolated, 2 of 8 runner types queueing" in output
    assert re.search(r"Read (Dec 31, 2026 at 23:59|Jan 1, 2027 at 00:0\d) from", output)
    assert "*Increased workload*: likely" in output
    assert "*Autoscaling configuration limits*: likely" in output
    assert "[GitHub job events]" in output
    assert "[image: Jobs queueing by runner type, last 6 h]" in output
    # The silence, through the modal.
    assert "alice picks 1 hour" in output
    assert "__alert_rule_uid__=dez2aomgvru2oe, type=alerting-infra" in output
    assert "*Silenced* by @alice until" in output and "“Looking at the queue”" in output
    assert "*Silenced until " in output and "[Unsilence]" in output
    # /queue-status while the alert is silenced.
    assert "alice types /queue-status help" in output and "/queue-status post" in output
    assert "alice types /queue-status linux.g5" in output
    assert "── alice types /queue-status ─" in output and "CI queue now" in output
    assert "Open incidents (1):" in output and "Active silences (1):" in output
    assert "by @alice · “Looking at the queue”" in output
    # The simulated fleet answers: runner types with jobs waiting, and the detail asked for.
    assert "jobs waiting* on" in output
    assert re.search(r"`linux-\S+` \d+ queued · longest wait \S+ \(since \d\d:\d\d UTC\)", output)
    # GitHub's runners list tells nothing of an autoscaler, and nothing is said of one.
    assert "no data" not in output
    assert "1 runner type matches `linux.g5`" in output and "*Job duration:* p50" in output
    assert "*Unsilenced* by @alice" in output
    assert code == 0


def test_demo_listens_on_this_machine_unless_asked() -> None:
    assert build_parser().parse_args(["demo"]).host == "127.0.0.1"


def test_demo_on_every_interface_warns_who_can_act_in_it() -> None:
    """--host 0.0.0.0 is had when asked for, with a warning that the page has no login; the
    addresses printed for this machine are loopback ones."""
    every_interface = "0.0.0.0"  # noqa: S104 - what this test is about
    command = [sys.executable, "-m", "bot", "demo", "--host", every_interface, "--port", "0"]
    output, code = _run_until([*command, "--no-story"], "[Run diagnostics]", with_stderr=True)
    assert "WARNING: listening on every interface, as asked" in output
    assert "act in it as alice or bob" in output
    assert "open in a browser: http://127.0.0.1:" in output
    assert "bot:               http://127.0.0.1:" in output
    assert code == 0


def _render(name: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "QUEUEBOT_CONFIG"}
    if config is not None:
        env["QUEUEBOT_CONFIG"] = str(config)
    return subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "bot", "render", str(FIXTURES / name)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env=env,
    )


def test_render_prints_block_kit() -> None:
    """`queuebot render` prints the message's Block Kit JSON for a webhook body."""
    result = _render("seed_queueing_alert_firing.json")
    assert result.returncode == 0, result.stderr
    message = json.loads(result.stdout)
    assert message["blocks"][0]["type"] == "header"
    assert "114 min" in json.dumps(message, ensure_ascii=False)


def test_render_names_the_values_as_the_yaml_file_does(tmp_path: Path) -> None:
    """With QUEUEBOT_CONFIG, `alert_values:` names and hides values as the bot would; a bad
    file is one clear line."""
    config = tmp_path / "queuebot.yml"
    config.write_text(
        "alert_values:\n  max_queue_size: {name: Jobs waiting}\n"
        "  threshold_breached: {hide: true}\n"
    )
    result = _render("seed_queueing_alert_firing.json", config)
    assert result.returncode == 0, result.stderr
    shown = json.dumps(json.loads(result.stdout), ensure_ascii=False)
    assert "Jobs waiting:* 14" in shown and "Max queue size" not in shown
    assert "Threshold breached" not in shown
    config.write_text("alert_values:\n  B: {nmae: x}\n")
    result = _render("seed_queueing_alert_firing.json", config)
    assert result.returncode == 1
    assert "QUEUEBOT_CONFIG" in result.stderr and "Traceback" not in result.stderr


def test_render_refuses_a_non_webhook() -> None:
    """A file that is not a webhook body gets one clear line and exit 1."""
    result = _render("README.md")
    assert result.returncode == 1
    assert "is not a webhook body" in result.stderr and "Traceback" not in result.stderr


async def _check(env: dict[str, str]) -> tuple[int | None, bytes]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "check", env=env, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await process.communicate()
    return process.returncode, out


def _check_env(sandbox: SlackSandbox, tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"],
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": sandbox.api_url,
        "QUEUEBOT_CHANNEL": "#queue-alerts",
        "QUEUEBOT_WEBHOOK_TOKEN": "check-webhook-token",
        "QUEUEBOT_DATABASE": str(tmp_path / "queuebot.db"),
        **extra,
    }


async def test_check_reaches_slack(tmp_path: Path) -> None:
    """`queuebot check` validates the settings, opens the store and calls auth.test."""
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        code, out = await _check(_check_env(sandbox, tmp_path))
        assert code == 0, out
        assert b"slack: ok" in out and b"store: ok" in out
        # QUEUEBOT_CHANNEL is a name there: its membership is left to the first alert.
        assert [c.method for c in sandbox.calls()] == ["auth.test"]


async def test_check_reports_a_bad_token(tmp_path: Path) -> None:
    """A token Slack refuses makes `queuebot check` fail and say so."""
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        code, out = await _check(_check_env(sandbox, tmp_path, SLACK_BOT_TOKEN="xoxb-revoked"))
        assert code == 1
        assert b"slack: FAILED" in out and b"invalid_auth" in out


async def test_check_reports_unreachable_grafana_and_prometheus(tmp_path: Path) -> None:
    """Configured Grafana and Prometheus that do not answer are each reported as FAILED."""
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        env = _check_env(
            sandbox,
            tmp_path,
            GRAFANA_URL="http://127.0.0.1:9",
            GRAFANA_TOKEN="glsa_not_printed",
            PROMETHEUS_URL="http://127.0.0.1:9",
        )
        code, out = await _check(env)
        assert code == 1
        assert b"slack: ok" in out
        assert b"grafana: FAILED" in out and b"prometheus: FAILED" in out
        assert b"glsa_not_printed" not in out


async def test_check_proves_the_grafana_token(tmp_path: Path) -> None:
    """With Grafana configured, check lists silences with the token: accepted or refused."""
    async with (
        SlackSandbox(bot_token=BOT_TOKEN) as sandbox,
        GrafanaSandbox(token="glsa_right") as grafana,
    ):
        env = _check_env(sandbox, tmp_path, GRAFANA_URL=grafana.url, GRAFANA_TOKEN="glsa_right")
        code, out = await _check(env)
        assert code == 0, out
        assert b"GRAFANA_TOKEN may read silences" in out
        code, out = await _check(env | {"GRAFANA_TOKEN": "glsa_wrong"})
        assert code == 1
        assert b"grafana: FAILED: HTTP 401" in out and b"glsa_wrong" not in out


async def _check_all_output(env: dict[str, str]) -> tuple[int | None, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "check",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()


def _with_userinfo(url: str, user: str, password: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme}://{user}:{password}@{rest}"


async def test_check_prints_prometheus_urls_without_their_credentials(
    tmp_path: Path, prometheus_for: PrometheusFactory
) -> None:
    """PROMETHEUS_URL's user:password@ is used but printed as [redacted], and so is a
    token-named query parameter; neither reaches stdout or stderr."""
    prom_pw = "prom-pw-never-shown"
    spec = SimulationSpec(
        scenario=Scenario.HEALTHY, hours=1, runner_types=1, seed=1, end=datetime.now(UTC)
    )
    fleet, _ = await prometheus_for(spec, MetricsShape.ARC_LEAN)
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        env = _check_env(
            sandbox, tmp_path, PROMETHEUS_URL=_with_userinfo(fleet.url, "prom", prom_pw)
        )
        code, out, err = await _check_all_output(env)
        assert prom_pw not in out and prom_pw not in err
        assert f"prometheus: ok (HTTP 200 from http://[redacted]@{fleet.url[7:]}/-/ready)" in out
        assert code == 0, out + err
        # Unreachable, with a token in the query: the failure names the URL, without it.
        env |= {"PROMETHEUS_URL": f"http://127.0.0.1:9/?access_token={prom_pw}"}
        code, out, err = await _check_all_output(env)
        assert "prometheus: FAILED: http://127.0.0.1:9/?access_token=[redacted]" in out
        assert prom_pw not in out and prom_pw not in err


@pytest.mark.parametrize("variable", ["SLACK_API_URL", "GRAFANA_URL"])
async def test_credentials_in_slack_or_grafana_urls_are_refused_unsaid(
    tmp_path: Path, variable: str
) -> None:
    """user:password@ in SLACK_API_URL or GRAFANA_URL (whose tokens are the credentials) is a
    one-line configuration error naming the variable: no traceback, no password printed."""
    password = "url-pw-never-shown"
    async with (
        SlackSandbox(bot_token=BOT_TOKEN) as sandbox,
        GrafanaSandbox(token="glsa_right") as grafana,
    ):
        url = sandbox.api_url if variable == "SLACK_API_URL" else grafana.url
        urls = {"GRAFANA_URL": grafana.url} | {variable: _with_userinfo(url, "someone", password)}
        env = _check_env(sandbox, tmp_path, GRAFANA_TOKEN="glsa_right", **urls)
        code, out, err = await _check_all_output(env)
    assert code == 2
    assert "Traceback" not in err, err
    (line,) = err.strip().splitlines()
    assert f"{variable} must not carry a user name or password" in line
    assert password not in out and password not in err


async def test_a_malformed_url_setting_is_refused_without_its_credentials(
    tmp_path: Path,
) -> None:
    """The configuration error names the bad URL setting and never shows its password (a URL
    with credentials is not quoted back at all)."""
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        bad = "http://prom:prom-pw-never-shown@127.0.0.1:99999/"
        code, out, err = await _check_all_output(_check_env(sandbox, tmp_path, PROMETHEUS_URL=bad))
    assert code == 2
    assert (
        "PROMETHEUS_URL is malformed: must be a URL like https://host.example (invalid port number)"
        in err
    )
    assert "prom-pw-never-shown" not in out + err


GITHUB_TOKEN = "ghs_checkTestToken0123456789abcdef"


async def test_check_lists_the_github_runners(tmp_path: Path) -> None:
    """With GITHUB_TOKEN and GITHUB_ORG, check lists every page of runners and sums them up."""
    async with (
        SlackSandbox(bot_token=BOT_TOKEN) as sandbox,
        GitHubSandbox(GITHUB_TOKEN) as github,
    ):
        for number in range(41):
            github.add_runners(f"linux.type{number}", idle=32 if number == 40 else 7)
        env = _check_env(
            sandbox,
            tmp_path,
            GITHUB_TOKEN=GITHUB_TOKEN,
            GITHUB_ORG="pytorch",
            GITHUB_API_URL=github.url,
        )
        code, out = await _check(env)
    assert code == 0, out
    assert b"github runners: ok (312 runners in 41 runner types, org pytorch)\n" in out
    assert len(github.listings()) == 4
    assert GITHUB_TOKEN.encode() not in out


async def test_check_names_the_permission_the_github_token_lacks(tmp_path: Path) -> None:
    async with (
        SlackSandbox(bot_token=BOT_TOKEN) as sandbox,
        GitHubSandbox(GITHUB_TOKEN) as github,
    ):
        github.missing_permission = True
        env = _check_env(
            sandbox,
            tmp_path,
            GITHUB_TOKEN=GITHUB_TOKEN,
            GITHUB_ORG="pytorch",
            GITHUB_API_URL=github.url,
        )
        code, out = await _check(env)
    assert code == 1
    assert (
        b"github runners: FAILED: GITHUB_TOKEN needs the organization permission"
        b" 'Self-hosted runners: read' to list the self-hosted runners of org pytorch"
    ) in out
    assert b"slack: ok" in out and GITHUB_TOKEN.encode() not in out


async def test_check_reports_a_refused_github_token_without_printing_it(tmp_path: Path) -> None:
    wrong = "ghp_wrongTokenNeverPrinted000000000000"
    async with (
        SlackSandbox(bot_token=BOT_TOKEN) as sandbox,
        GitHubSandbox(GITHUB_TOKEN) as github,
    ):
        env = _check_env(
            sandbox, tmp_path, GITHUB_TOKEN=wrong, GITHUB_ORG="pytorch", GITHUB_API_URL=github.url
        )
        code, out = await _check(env)
    assert code == 1
    assert b"github runners: FAILED: GitHub at 127.0.0.1:" in out
    assert b"refused GITHUB_TOKEN (401 Bad credentials)" in out
    assert wrong.encode() not in out


async def test_check_reports_an_unreachable_github_with_its_url(tmp_path: Path) -> None:
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        env = _check_env(
            sandbox,
            tmp_path,
            GITHUB_TOKEN=GITHUB_TOKEN,
            GITHUB_REPOSITORY="pytorch/pytorch",
            GITHUB_API_URL="http://127.0.0.1:9/api/v3",
        )
        code, out = await _check(env)
    assert code == 1
    assert (
        b"github runners: FAILED: cannot reach GitHub at 127.0.0.1:9 (ClientConnectorError)"
        b" (GITHUB_API_URL http://127.0.0.1:9/api/v3)\n"
    ) in out


async def test_check_says_when_github_runners_are_not_configured(tmp_path: Path) -> None:
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        code, out = await _check(_check_env(sandbox, tmp_path, GITHUB_ORG="pytorch"))
    assert code == 1
    assert b"github runners: FAILED: GITHUB_ORG is set but GITHUB_TOKEN is not" in out


@pytest.mark.parametrize("moment", ["yesterday", "1e400", "-1e300"])
def test_demo_at_a_moment_no_clock_shows_is_refused_in_one_line(moment: str) -> None:
    done = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "bot", "demo", "--port", "0", f"--at={moment}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("queuebot: ") and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


async def test_check_says_whether_the_bot_may_post_in_its_channel(tmp_path: Path) -> None:
    """A channel id: conversations.info says whether the bot is a member; not one is FAILED
    with how to invite it. A #name is said to be checked at the first alert."""
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        sandbox.add_channel("queue-alerts", "C0MEMBER")
        sandbox.add_channel("elsewhere", "C0NOTIN", members=[])
        sandbox.workspace.channel("C0NOTIN").is_private = True
        code, out = await _check(_check_env(sandbox, tmp_path, QUEUEBOT_CHANNEL="C0MEMBER"))
        assert code == 0, out
        assert b"the bot is a member of #queue-alerts (C0MEMBER)" in out
        code, out = await _check(_check_env(sandbox, tmp_path, QUEUEBOT_CHANNEL="C0NOTIN"))
        assert code == 1
        assert b"FAILED: the bot is not a member of the private channel #elsewhere" in out
        assert b"/invite" in out
        code, out = await _check(_check_env(sandbox, tmp_path))
        assert code == 0 and b"#queue-alerts is a name" in out


async def test_check_tells_of_job_events_and_prometheus_through_grafana(tmp_path: Path) -> None:
    """GITHUB_WEBHOOK_SECRET set with no job seen says how to send them; the datasource UID is
    tried through Grafana's proxy (here a Grafana that is not there)."""
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        env = _check_env(
            sandbox,
            tmp_path,
            GITHUB_WEBHOOK_SECRET="hook-secret",
            GRAFANA_URL="http://127.0.0.1:9",
            GRAFANA_TOKEN="glsa_not_printed",
            GRAFANA_PROMETHEUS_DATASOURCE_UID="prom-uid",
        )
        code, out = await _check(env)
        assert code == 1
        assert b"github job events: GITHUB_WEBHOOK_SECRET is set, no job seen yet" in out
        assert b"prometheus: FAILED" in out and b"prom-uid" in out
        assert b"not configured (PROMETHEUS_URL)" not in out
        code, out = await _check(_check_env(sandbox, tmp_path))
        assert b"github job events: not configured (GITHUB_WEBHOOK_SECRET)" in out


@pytest.mark.parametrize("command", [["demo"], ["simulate", "--scenario", "surge", "--out", "x"]])
def test_the_lab_commands_say_how_to_install_the_lab_where_it_is_missing(
    command: list[str],
) -> None:
    """A production install (`pip install .`) has no lab: `queuebot demo` and `queuebot
    simulate` say so and how to install it, exit 2, no traceback."""
    script = (
        "import sys; sys.modules['queuebot_lab'] = None;"  # as if not installed
        " from bot.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-c", script, *command],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "comes with queuebot's lab" in done.stderr and "pip install . ./lab" in done.stderr
    assert "Traceback" not in done.stderr
