"""`queuebot demo`: the bot, a local Slack workspace, a simulated fleet and the reference alert.

Nothing outside this machine is needed: the local Slack-compatible workspace (bot/sandbox/) plays
Slack and serves a web page where every button works, a local Grafana-compatible silence API
plays Grafana, a simulated fleet behind a Prometheus-compatible API feeds diagnostics and
/queue-status, and the bot is the same application `queuebot serve` runs. The reference alert is
posted to the bot's webhook over HTTP exactly as Grafana would post it. Unless told otherwise,
the on-call, alice, then runs diagnostics, silences the alert for an hour through the modal,
asks `/queue-status` and lifts the silence again, with the same signed requests Slack would
send. The channel is printed to the terminal as messages arrive; `/queue-status` typed into the
terminal is sent as hers. `PROMETHEUS_URL`, and `GRAFANA_URL` with `GRAFANA_TOKEN`, in the
environment replace the simulated fleet and the local silence API with real ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import sys
import tempfile
import threading
import webbrowser
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

import aiohttp
from aiohttp import web

from bot.app import create_app
from bot.config import load_settings
from bot.diagnostics.sources.prometheus import PrometheusClient, PrometheusError
from bot.diagnostics.sources.querypack import QueryPack, Signal
from bot.domain.notifications import parse_webhook
from bot.sandbox.grafana import PREFIX as GRAFANA_API
from bot.sandbox.grafana import GrafanaSandbox
from bot.sandbox.prometheus import FleetPrometheus
from bot.sandbox.serving import serve
from bot.sandbox.slack import (
    ONCALL_USER,
    PostedMessage,
    SandboxEvent,
    SandboxEventKind,
    SlackSandbox,
    render_message,
)
from bot.sandbox.slack.models import ViewState
from bot.sandbox.slack.web import UiControl
from bot.simulator.simulate import Scenario, SimulationSpec
from bot.slack import contract
from bot.slack.contract import ActionId, SilenceInput
from bot.web import paths

DEMO_CHANNEL = "ci-infra-alerts"
REFERENCE_ALERT = "seed_queueing_alert_firing.json"
REFERENCE_RESOLVED = "seed_queueing_alert_resolved.json"
_SHOWN = {
    SandboxEventKind.MESSAGE_POSTED,
    SandboxEventKind.MESSAGE_UPDATED,
    SandboxEventKind.EPHEMERAL_POSTED,
    SandboxEventKind.FILE_SHARED,
}
#: Time to read each step of the story before the next one happens.
STORY_PAUSE_SECONDS = 1.5
#: The simulated fleet: 8 runner types, 8 days (diagnostics compare with the 7 days before).
FLEET_TYPES = 8
FLEET_HOURS = 8 * 24 + 1
FLEET_STEP_SECONDS = 120
#: A mix with a surge on one runner type and the autoscaler's limit on another.
FLEET_SEED = 1


def reference_alert(name: str = REFERENCE_ALERT) -> bytes:
    return resources.files("bot.demo").joinpath(name).read_bytes()


def _rule(out: TextIO, title: str) -> None:
    out.write(f"\n── {title} " + "─" * max(0, 74 - len(title)) + "\n")


def _buttons(message: PostedMessage) -> list[str]:
    return [
        str(element.get("action_id", ""))
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    ]


def surge_alert(runner_type: str, queued: float, wait_minutes: float) -> bytes:
    """The reference rule's notification, narrowed to one runner type with its own values."""
    body: dict[str, Any] = json.loads(reference_alert())
    alert = body["alerts"][0]
    labels = {**alert["labels"], "runner_type": runner_type}
    alert["labels"] = labels
    alert["fingerprint"] = f"demo-surge-{runner_type}"
    alert["startsAt"] = datetime.now(UTC).replace(microsecond=0).isoformat()
    alert["values"] = {
        **alert.get("values", {}),
        "max_queue_time_mins": round(wait_minutes),
        "max_queue_size": round(queued),
    }
    alert["annotations"] = {
        **alert["annotations"],
        "summary": f"Jobs are queueing on {runner_type}",
    }
    body["groupKey"] = f'{{}}:{{runner_type="{runner_type}"}}'
    body["groupLabels"] = {**body.get("groupLabels", {}), "runner_type": runner_type}
    body["commonLabels"] = labels
    body["commonAnnotations"] = alert["annotations"]
    body["title"] = f"[FIRING:1] Jobs are queueing on {runner_type}"
    return json.dumps(body).encode()


class Demo:
    """Everything `queuebot demo` runs, started and stopped as one (the tests use it too)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 3000,
        slack_port: int = 0,
        environ: Mapping[str, str] | None = None,
        scratch: Path,
    ) -> None:
        self.host, self.port, self.slack_port = host, port, slack_port
        self.environ = dict(os.environ if environ is None else environ)
        self.scratch = scratch
        bot_token = "xoxb-demo-" + secrets.token_hex(8)
        signing_secret = secrets.token_hex(16)
        self._bot_token, self._signing_secret = bot_token, signing_secret
        self.sandbox = SlackSandbox(
            bot_token=bot_token, signing_secret=signing_secret, channel_name=DEMO_CHANNEL
        )
        self.grafana: GrafanaSandbox | None = None
        self.fleet: FleetPrometheus | None = None
        self.prometheus_url = ""
        self.bot_url = ""
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None

    @property
    def webhook_url(self) -> str:
        return f"{self.bot_url}{paths.GRAFANA_WEBHOOK_PATH}"

    async def start(self) -> None:
        """Start the workspace, the stand-ins and the bot; raises OSError if `port` is taken."""
        await self.sandbox.start(host="127.0.0.1", port=self.slack_port)
        env = self.environ
        grafana_url, grafana_token = env.get("GRAFANA_URL"), env.get("GRAFANA_TOKEN")
        if not (grafana_url and grafana_token):
            # Alerts the demo plays stay firing until resolved (Alertmanager would let a silent
            # one lapse after resolve_timeout and the bot would take it as resolved).
            self.grafana = GrafanaSandbox(
                token=secrets.token_hex(16), resolve_timeout=timedelta(days=1)
            )
            await self.grafana.start()
            grafana_url, grafana_token = self.grafana.url, self.grafana.token or ""
        self.prometheus_url = env.get("PROMETHEUS_URL", "")
        if not self.prometheus_url:
            self.fleet = FleetPrometheus(
                SimulationSpec(
                    scenario=Scenario.MIX,
                    hours=FLEET_HOURS,
                    runner_types=FLEET_TYPES,
                    seed=FLEET_SEED,
                    end=datetime.now(UTC).replace(microsecond=0),
                    step_seconds=FLEET_STEP_SECONDS,
                )
            )
            await self.fleet.start()
            self.prometheus_url = self.fleet.url
        config = self.scratch / "queuebot.yml"
        # The demo shows what the Run diagnostics button does, so it is not run by itself.
        config.write_text("auto_diagnose: false\n")
        settings = load_settings(
            {
                "SLACK_BOT_TOKEN": self._bot_token,
                "SLACK_SIGNING_SECRET": self._signing_secret,
                "SLACK_API_URL": self.sandbox.api_url,
                "QUEUEBOT_CHANNEL": f"#{DEMO_CHANNEL}",
                "QUEUEBOT_DATABASE": str(self.scratch / "queuebot.db"),
                "QUEUEBOT_CONFIG": str(config),
                "GRAFANA_URL": grafana_url,
                "GRAFANA_TOKEN": grafana_token,
                "PROMETHEUS_URL": self.prometheus_url,
                "QUEUEBOT_SILENCE_CHECK_SECONDS": "5",
            },
            for_serve=True,
        )
        self._runner, self.bot_url = await serve(
            create_app(settings), self.host, self.port, access_log=False
        )
        self.sandbox.request_url = f"{self.bot_url}{paths.SLACK_EVENTS_PATH}"
        self._http = aiohttp.ClientSession()
        self._add_controls()

    async def stop(self) -> None:
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()
        await self.sandbox.stop()
        if self.grafana is not None:
            await self.grafana.stop()
        if self.fleet is not None:
            await self.fleet.stop()

    # -- alerts ------------------------------------------------------------------------------

    async def fire(self, body: bytes) -> int:
        """Post a webhook body to the bot as Grafana would; the HTTP status it answered."""
        assert self._http is not None
        async with self._http.post(
            self.webhook_url, data=body, headers={"Content-Type": "application/json"}
        ) as answer:
            return answer.status

    async def play_reference(self) -> int:
        """The reference alert, also put into the local Grafana so silences match it."""
        if self.grafana is not None:
            await self._grafana_knows(reference_alert())
        return await self.fire(reference_alert())

    async def _grafana_knows(self, body: bytes) -> None:
        """Put an alert into the local Grafana as Grafana's own Alertmanager holds it (with
        the rule UID label the webhook leaves out), so silences match it."""
        assert self.grafana is not None and self._http is not None
        lead = parse_webhook(body).lead
        labels = {"__alert_rule_uid__": lead.rule_uid, **lead.labels}
        async with self._http.post(
            f"{self.grafana.url}{GRAFANA_API}/alerts",
            json=[{"labels": labels, "annotations": lead.annotations}],
            headers={"Authorization": f"Bearer {self.grafana.token}"},
        ) as answer:
            answer.raise_for_status()

    def surge_type(self) -> str:
        """The runner type the simulated fleet surges on (the busiest, without a fleet)."""
        if self.fleet is not None:
            surged = [
                name
                for name, cause in self.fleet.truth.affected.items()
                if cause == "increased_workload"
            ]
            if surged:
                return surged[0]
            if self.fleet.truth.affected:
                return next(iter(self.fleet.truth.affected))
        return "linux-2xlarge"

    async def fire_surge(self) -> str:
        name = self.surge_type()
        queued, wait = await self._fleet_now(name)
        body = surge_alert(name, queued, wait / 60)
        if self.grafana is not None:
            await self._grafana_knows(body)
        status = await self.fire(body)
        return f"Fired a surge alert on {name} (webhook answered {status})"

    async def resolve_reference(self) -> str:
        status = await self.fire(reference_alert(REFERENCE_RESOLVED))
        return f"Resolved the reference alert (webhook answered {status})"

    async def refire_reference(self) -> str:
        status = await self.play_reference()
        return f"Fired the reference alert (webhook answered {status})"

    async def _fleet_now(self, name: str) -> tuple[float, float]:
        """Queued jobs and longest wait (seconds) of `name` now, from the fleet's metrics."""
        assert self._http is not None
        client = PrometheusClient(self._http, self.prometheus_url)
        pack, now = QueryPack(), datetime.now(UTC)
        values: list[float] = []
        for signal_ in (Signal.QUEUED, Signal.MAX_WAIT):
            try:
                samples = await client.instant(pack.query(signal_), now)
            except PrometheusError:
                samples = []
            found = [s.value for s in samples if s.labels.get("name") == name]
            values.append(found[0] if found else 0.0)
        return values[0], values[1]

    def _add_controls(self) -> None:
        surge = self.surge_type()
        self.sandbox.ui.controls.update(
            {
                "surge": UiControl(
                    f"Fire a surge alert on {surge}",
                    self.fire_surge,
                    "Grafana's queueing rule, narrowed to the runner type the fleet surges on",
                ),
                "resolve": UiControl(
                    "Resolve the reference alert",
                    self.resolve_reference,
                    "Grafana's resolved notification for the reference alert",
                ),
                "reference": UiControl(
                    "Fire the reference alert",
                    self.refire_reference,
                    "P2, pytorch-dev-infra, max queue time 114 min, max queue size 14",
                ),
            }
        )


async def _print_channel(sandbox: SlackSandbox, out: TextIO) -> None:
    """Print each new or edited message of the demo channel, with its thread, as it happens."""
    feed = sandbox.subscribe()
    try:
        while True:
            event: SandboxEvent = await feed.get()
            if event.kind not in _SHOWN or event.ts is None:
                continue
            if event.kind is SandboxEventKind.EPHEMERAL_POSTED:
                person = sandbox.workspace.users.get(event.user or "")
                _rule(out, f"only visible to {person.name if person else event.user}")
                shown = event.detail.get("message") or {"text": event.detail.get("text", "")}
                out.write(render_message(shown, now=datetime.now(UTC)) + "\n")
                out.flush()
                continue
            message = sandbox.message(event.channel, event.ts)
            if message is None:
                continue
            if event.kind is SandboxEventKind.MESSAGE_UPDATED:
                what = "message edited"
            elif message.is_reply:
                what = "reply in thread"
            else:
                what = "new message"
            _rule(out, f"#{DEMO_CHANNEL} · {what}")
            text = render_message(message.to_slack(), now=datetime.now(UTC))
            if message.files:
                names = ", ".join(str(f.get("title") or f.get("name")) for f in message.files)
                text = (text + "\n" if text.strip() else "") + f"[image: {names}]"
            if message.is_reply:
                text = "\n".join(f"    │ {line}" for line in text.splitlines())
            out.write(text + "\n")
            out.flush()
    finally:
        sandbox.unsubscribe(feed)


async def _story(sandbox: SlackSandbox, out: TextIO) -> None:
    """alice runs diagnostics, silences the alert for an hour through the modal, asks
    /queue-status, then lifts the silence."""
    (parent,) = await sandbox.wait_for(lambda: sandbox.messages()[:1], timeout=10)
    await asyncio.sleep(STORY_PAUSE_SECONDS)
    _rule(out, "alice clicks Run diagnostics")
    out.flush()
    await sandbox.click(sandbox.channel_id, parent.ts, ActionId.RUN_DIAGNOSTICS.value, ONCALL_USER)
    await sandbox.wait_for(
        lambda: any(
            "Diagnostics" in json.dumps(r.blocks) for r in sandbox.replies(None, parent.ts)
        ),
        timeout=30,
    )
    await asyncio.sleep(STORY_PAUSE_SECONDS)
    _rule(out, "alice clicks Silence…")
    await sandbox.click(sandbox.channel_id, parent.ts, ActionId.SILENCE.value, ONCALL_USER)
    view = await sandbox.wait_for(
        lambda: next((v for v in sandbox.views if v.state is ViewState.OPEN), None)
    )
    assert view is not None
    preview = view.view["blocks"][-1]["text"]["text"]
    out.write(f"modal “Silence alert” opens for alice\n{preview}\n")
    _rule(out, "alice picks 1 hour, adds a comment and presses Silence")
    out.flush()
    await sandbox.submit_view(
        view.id,
        {
            SilenceInput.DURATION.value: {SilenceInput.DURATION.value: "1h"},
            SilenceInput.COMMENT.value: {SilenceInput.COMMENT.value: "Looking at the queue"},
        },
        ONCALL_USER,
    )
    await sandbox.wait_for(lambda: ActionId.UNSILENCE.value in _buttons(parent), timeout=10)
    await asyncio.sleep(STORY_PAUSE_SECONDS)
    _rule(out, f"alice types {contract.QUEUE_STATUS_COMMAND}")
    out.flush()
    answered = len(sandbox.ephemerals(ONCALL_USER))
    await sandbox.slash_command(contract.QUEUE_STATUS_COMMAND, "", user_id=ONCALL_USER)
    await sandbox.wait_for(lambda: len(sandbox.ephemerals(ONCALL_USER)) > answered, timeout=15)
    await asyncio.sleep(STORY_PAUSE_SECONDS)
    _rule(out, "alice clicks Unsilence")
    out.flush()
    await sandbox.click(sandbox.channel_id, parent.ts, ActionId.UNSILENCE.value, ONCALL_USER)
    await sandbox.wait_for(lambda: ActionId.SILENCE.value in _buttons(parent), timeout=10)


async def _told_story(sandbox: SlackSandbox, out: TextIO) -> None:
    try:
        await _story(sandbox, out)
    except TimeoutError as exc:
        # The story waits for the bot at each step; a real service that does not answer
        # (PROMETHEUS_URL, GRAFANA_URL) stops it, not the demo.
        _rule(out, f"the story stopped: {exc}")
        out.flush()


async def _commands(sandbox: SlackSandbox, out: TextIO) -> None:
    """Slash commands typed into the terminal, sent as alice (`/queue-status linux`)."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str] = asyncio.Queue()

    def read() -> None:
        # A daemon thread: a pending read must not keep the demo from exiting on Ctrl-C.
        try:
            for line in sys.stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, "")
        except RuntimeError:
            return  # the demo has stopped

    threading.Thread(target=read, name="demo-stdin", daemon=True).start()
    while True:
        line = await lines.get()
        if not line:
            return  # no terminal, or it closed
        command, _, text = line.strip().partition(" ")
        if not command:
            continue
        if command != contract.QUEUE_STATUS_COMMAND:
            out.write(f"the demo knows one command: {contract.QUEUE_STATUS_COMMAND} [text]\n")
            out.flush()
            continue
        _rule(out, f"alice types {command} {text}".rstrip())
        out.flush()
        await sandbox.slash_command(command, text.strip(), user_id=ONCALL_USER)


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
) -> int:
    """Run until interrupted; returns the exit code."""
    with tempfile.TemporaryDirectory(prefix="queuebot-demo-") as scratch:
        demo = Demo(host=host, port=port, slack_port=slack_port, scratch=Path(scratch))
        try:
            await demo.start()
        except OSError as exc:
            await demo.stop()
            print(f"queuebot demo: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
            print("queuebot demo: choose another port with --port", file=sys.stderr)
            return 1
        page = f"{demo.sandbox.url}/"
        fleet = f"simulated, {FLEET_TYPES} runner types" if demo.fleet else demo.prometheus_url
        out.write(
            f"queuebot demo\n"
            f"  open in a browser: {page}\n"
            f"  bot:               {demo.bot_url}\n"
            f"  Grafana webhook:   {demo.webhook_url}\n"
            f"  local Slack API:   {demo.sandbox.api_url}\n"
            f"  silences:          {demo.grafana.url if demo.grafana else 'your Grafana'}\n"
            f"  fleet metrics:     {fleet}\n"
            f"Post your own Grafana or Alertmanager payloads:\n"
            f"  curl -X POST {demo.webhook_url} -H 'Content-Type: application/json'"
            f" --data @payload.json\n"
            f"Type {contract.QUEUE_STATUS_COMMAND} [help | post | runner type] here"
            " to ask as alice.\n"
            f"Press Ctrl-C to stop.\n"
        )
        out.flush()
        if open_browser and _can_open_browser():
            webbrowser.open(page)
        printer = asyncio.create_task(_print_channel(demo.sandbox, out))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        tasks: list[asyncio.Task[None]] = []
        try:
            status = await demo.play_reference()
            _rule(out, f"Grafana → queuebot: reference alert ({status})")
            out.flush()
            if story:
                tasks.append(asyncio.create_task(_told_story(demo.sandbox, out)))
            tasks.append(asyncio.create_task(_commands(demo.sandbox, out)))
            await stop.wait()
        finally:
            for task in [*tasks, printer]:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await demo.stop()
    out.write("\nqueuebot demo stopped\n")
    return 0
