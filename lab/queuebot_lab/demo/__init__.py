"""`queuebot demo`: the bot, a local Slack workspace, a simulated fleet and the reference alert.

Nothing outside this machine is needed: the local Slack-compatible workspace
(lab/queuebot_lab/sandbox/) plays Slack and serves a web page where every button works, a local
Grafana-compatible silence API plays Grafana, and the bot is the same application `queuebot serve`
runs. The fleet is simulated (queuebot_lab.demo.fleet) and reaches the bot as a GitHub
organisation's would: its jobs as `workflow_job` deliveries to the bot's GitHub webhook, signed with
the hook's secret (the last three minutes before the start at once, then each as it happens, so the
fleet moves for a few minutes while the demo runs), its older history loaded into the store as a
hook's stored deliveries, and its runners list from a local stand-in for GitHub's REST API.
Diagnostics and /queue-status read the fleet from them. The reference alert is posted to the bot's
webhook over HTTP exactly as Grafana would post it. Unless told otherwise, the on-call, alice, then
runs diagnostics, silences the alert for an hour through the modal, asks `/queue-status` and lifts
the silence again, with the same signed requests Slack would send, waiting
`QUEUEBOT_DEMO_PAUSE_SECONDS` (1.5 unless set) between the steps to let each be read. The channel
is printed to the terminal as messages arrive; `/queue-status` typed into the terminal is sent as
hers.
`PROMETHEUS_URL` in the environment has the bot read that Prometheus too, beside the simulated job
events; `GRAFANA_URL` with `GRAFANA_TOKEN` replace the local silence API with a real Grafana.
Everything listens on 127.0.0.1 unless `host` says otherwise, which is allowed with a warning: the
page has no login, so whoever reaches it acts as alice.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import tempfile
import webbrowser
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit, urlunsplit

from bot.slack import contract
from queuebot_lab.demo.alerts import reference_alert
from queuebot_lab.demo.fleet import FLEET_TYPES
from queuebot_lab.demo.stack import Demo
from queuebot_lab.demo.story import commands, print_channel, rule, story_pause, told_story
from queuebot_lab.sandbox.slack.guard import WILDCARDS, is_loopback


def _exposure_warning(host: str, page_port: int) -> str | None:
    """What to say when the demo is asked to listen beyond this machine; None on loopback."""
    if is_loopback(host):
        return None
    where = "every interface" if host in WILDCARDS else host
    return (
        f"queuebot demo: WARNING: listening on {where}, as asked: anyone who can reach this"
        " machine can open the workspace's page (port"
        f" {page_port}), act in it as alice or bob and fire alerts, and the page has no login."
        " Leave out --host (127.0.0.1) to keep the demo to this machine."
    )


def _without_credentials(url: str) -> str:
    """`url` as it may be printed: PROMETHEUS_URL may carry a password or a token."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    where = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        where += f":{parts.port}"
    return urlunsplit((parts.scheme, where, parts.path, "", ""))


def _can_open_browser() -> bool:
    """A graphical browser is likely: never start a text browser inside the demo's terminal."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


async def run_demo(
    *,
    host: str = "127.0.0.1",
    port: int = 3000,
    slack_port: int = 0,
    story: bool = True,
    open_browser: bool = False,
    out: TextIO = sys.stdout,
    at: datetime | None = None,
) -> int:
    """Run until interrupted; returns the exit code. `at`: the moment the demo plays as its
    start (now unless given). alice's story pauses `QUEUEBOT_DEMO_PAUSE_SECONDS` between its
    steps (1.5 unless set); a value that is not a number of seconds is refused in one line."""
    try:
        pause = story_pause(os.environ)
    except ValueError as exc:
        print(f"queuebot: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="queuebot-demo-") as scratch:
        demo = Demo(host=host, port=port, slack_port=slack_port, scratch=Path(scratch), at=at)
        print(
            "queuebot demo: starting: simulating a week of the fleet and sending it to the bot"
            " (about half a minute)…",
            file=sys.stderr,
            flush=True,
        )
        try:
            await demo.start()
        except OSError as exc:
            await demo.stop()
            print(f"queuebot demo: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
            print("queuebot demo: choose another port with --port", file=sys.stderr)
            return 1
        page = f"{demo.sandbox.url}/"
        warning = _exposure_warning(host, demo.sandbox.port)
        if warning is not None:
            print(warning, file=sys.stderr)
        assert demo.fleet is not None
        until = datetime.fromtimestamp(demo.fleet.end, UTC)
        fleet = (
            f"  fleet data:        simulated GitHub, {FLEET_TYPES} runner types: job events at the"
            " bot's webhook and the runners list\n"
            f"                     {demo.loaded:,} older jobs loaded, {demo.replayed:,} deliveries"
            f" sent signed, more as they happen until {until:%H:%M} UTC\n"
        )
        if demo.prometheus_url:
            fleet += f"  plus Prometheus:   {_without_credentials(demo.prometheus_url)}\n"
        out.write(
            f"queuebot demo\n"
            f"  open in a browser: {page}\n"
            f"  bot:               {demo.bot_url}\n"
            f"  Grafana webhook:   {demo.webhook_url}\n"
            f"  local Slack API:   {demo.sandbox.api_url}\n"
            f"  silences:          {demo.grafana.url if demo.grafana else 'your Grafana'}\n"
            f"{fleet}"
            f"Post your own Grafana or Alertmanager payloads:\n"
            f"  curl -X POST {demo.webhook_url} -H 'Content-Type: application/json'"
            f" -H 'Authorization: Bearer {demo.webhook_token}' --data @payload.json\n"
            f"Type {contract.QUEUE_STATUS_COMMAND} [help | post | runner type] here"
            " to ask as alice.\n"
            f"Press Ctrl-C to stop.\n"
        )
        out.flush()
        if open_browser and _can_open_browser():
            webbrowser.open(page)
        printer = asyncio.create_task(print_channel(demo.sandbox, out, demo.now))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        tasks: list[asyncio.Task[None]] = []
        try:
            status = await demo.play_reference()
            rule(out, f"Grafana → queuebot: reference alert ({status})")
            out.flush()
            if story:
                tasks.append(asyncio.create_task(told_story(demo.sandbox, out, pause)))
            tasks.append(asyncio.create_task(commands(demo.sandbox, out)))
            await stop.wait()
        finally:
            for task in [*tasks, printer]:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await demo.stop()
    out.write("\nqueuebot demo stopped\n")
    return 0


__all__ = ["Demo", "reference_alert", "run_demo"]
