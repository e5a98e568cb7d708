"""The command line as a newcomer and an admin run it: demo, render, check."""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

from bot.sandbox.grafana import GrafanaSandbox
from bot.sandbox.slack import SlackSandbox
from tests.support.harness import BOT_TOKEN
from tests.support.payloads import FIXTURES


def _run_until(
    command: list[str], marker: str, timeout: float = 30.0, typed: str = ""
) -> tuple[str, int]:
    """Start `command` with `typed` as its input, read its stdout until `marker` shows, then
    stop it with Ctrl-C."""
    process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
        env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")},
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


def test_demo_shows_the_reference_alert() -> None:
    """The demo posts the reference alert to the local channel and prints it; Ctrl-C stops it."""
    output, code = _run_until(
        [sys.executable, "-m", "bot", "demo", "--port", "0"], "[Run diagnostics]"
    )
    assert "[P2] Jobs are queueing in autoscaled machines" in output
    assert "114 min" in output and "Max queue size:* 14" in output
    assert "pytorch-dev-infra" in output
    assert "https://hud.pytorch.org/metrics" in output
    assert code == 0


def test_demo_silences_and_unsilences_its_alert() -> None:
    """The demo's on-call silences the alert through the modal, then lifts it again."""
    output, code = _run_until(
        [sys.executable, "-m", "bot", "demo", "--port", "0"], "Notifications resume."
    )
    assert "__alert_rule_uid__=dez2aomgvru2oe, type=alerting-infra" in output
    assert "*Silenced* by @alice until" in output and "“Looking at the queue”" in output
    assert "*Silenced until " in output and "[Unsilence]" in output
    assert "*Unsilenced* by @alice" in output
    assert code == 0


def test_demo_answers_queue_status() -> None:
    """alice asks /queue-status while the alert is silenced; what is typed is sent as hers."""
    output, code = _run_until(
        [sys.executable, "-m", "bot", "demo", "--port", "0"],
        "*Unsilenced* by @alice",
        typed="/queue-status help\n/queue-status linux.g5\n",
    )
    assert "alice types /queue-status help" in output and "/queue-status post" in output
    assert "alice types /queue-status linux.g5" in output
    assert "── alice types /queue-status ─" in output and "CI queue now" in output
    assert "Open incidents (1):" in output and "Active silences (1):" in output
    assert "by @alice · “Looking at the queue”" in output
    # The simulated fleet answers: runner types with jobs waiting, and the detail asked for.
    assert "jobs waiting* on" in output and "at the autoscaler maximum" in output
    assert "1 runner type matches `linux.g5`" in output and "*Job duration:* p50" in output
    assert code == 0


def test_demo_runs_diagnostics_on_its_simulated_fleet() -> None:
    """alice's first click: the report and the chart in the thread, with no Prometheus."""
    output, code = _run_until(
        [sys.executable, "-m", "bot", "demo", "--port", "0"], "alice picks 1 hour"
    )
    assert "── alice clicks Run diagnostics ─" in output
    # The simulated fleet stages a surge on one runner type and the autoscaler's limit on
    # another; which comes first depends on which queues worse at the moment.
    assert "*Increased workload*: likely" in output
    assert "*Autoscaling configuration limits*: likely" in output
    assert "[image: Jobs queueing by runner type, last 6 h]" in output
    assert code == 0


def _render(name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "bot", "render", str(FIXTURES / name)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_render_prints_block_kit() -> None:
    """`queuebot render` prints the message's Block Kit JSON for a webhook body."""
    result = _render("seed_queueing_alert_firing.json")
    assert result.returncode == 0, result.stderr
    message = json.loads(result.stdout)
    assert message["blocks"][0]["type"] == "header"
    assert "114 min" in json.dumps(message, ensure_ascii=False)


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
        "QUEUEBOT_DATABASE": str(tmp_path / "queuebot.db"),
        **extra,
    }


async def test_check_reaches_slack(tmp_path: Path) -> None:
    """`queuebot check` validates the settings, opens the store and calls auth.test."""
    async with SlackSandbox(bot_token=BOT_TOKEN) as sandbox:
        code, out = await _check(_check_env(sandbox, tmp_path))
        assert code == 0, out
        assert b"slack: ok" in out and b"store: ok" in out
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
