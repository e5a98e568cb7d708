"""`queuebot demo`: the bot, a local Slack workspace and the reference alert, in one process.

Nothing outside this machine is needed: the local Slack-compatible workspace (bot/sandbox/) plays
Slack, a local Grafana-compatible silence API plays Grafana, the bot is the same application
`queuebot serve` runs, and the reference alert is posted to the bot's webhook over HTTP exactly as
Grafana would post it. Then the on-call, alice, silences it for an hour through the modal, asks
`/queue-status` and lifts the silence again, with the same signed requests Slack would send;
`/queue-status` typed into the terminal is sent as hers. The channel is printed
to the terminal as messages arrive; the demo keeps running so more payloads can be posted to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import sys
import tempfile
import threading
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import TextIO

import aiohttp
from aiohttp import web

from bot import ids
from bot.app import create_app
from bot.config import load_settings
from bot.ids import ActionId, SilenceInput
from bot.models import parse_webhook
from bot.sandbox import ONCALL_USER, EventKind, Message, SandboxEvent, SlackSandbox, render_message
from bot.sandbox.grafana import PREFIX as GRAFANA_API
from bot.sandbox.grafana import GrafanaSandbox
from bot.sandbox.models import ViewState

DEMO_CHANNEL = "ci-infra-alerts"
REFERENCE_ALERT = "seed_queueing_alert_firing.json"
_SHOWN = {EventKind.MESSAGE_POSTED, EventKind.MESSAGE_UPDATED, EventKind.EPHEMERAL_POSTED}
#: Time to read each step of the silence story before the next one happens.
STORY_PAUSE_SECONDS = 1.5


def reference_alert() -> bytes:
    return resources.files("bot.reference").joinpath(REFERENCE_ALERT).read_bytes()


def _rule(out: TextIO, title: str) -> None:
    out.write(f"\n── {title} " + "─" * max(0, 74 - len(title)) + "\n")


async def _print_channel(sandbox: SlackSandbox, out: TextIO) -> None:
    """Print each new or edited message of the demo channel, with its thread, as it happens."""
    feed = sandbox.subscribe()
    try:
        while True:
            event: SandboxEvent = await feed.get()
            if event.kind not in _SHOWN or event.ts is None:
                continue
            if event.kind is EventKind.EPHEMERAL_POSTED:
                person = sandbox.workspace.users.get(event.user or "")
                _rule(out, f"only visible to {person.name if person else event.user}")
                shown = event.detail.get("message") or {"text": event.detail.get("text", "")}
                out.write(render_message(shown, now=datetime.now(UTC)) + "\n")
                out.flush()
                continue
            message = sandbox.message(event.channel, event.ts)
            if message is None:
                continue
            if event.kind is EventKind.MESSAGE_UPDATED:
                what = "message edited"
            elif message.is_reply:
                what = "reply in thread"
            else:
                what = "new message"
            _rule(out, f"#{DEMO_CHANNEL} · {what}")
            text = render_message(message.to_slack(), now=datetime.now(UTC))
            if message.is_reply:
                text = "\n".join(f"    │ {line}" for line in text.splitlines())
            out.write(text + "\n")
            out.flush()
    finally:
        sandbox.unsubscribe(feed)


async def _grafana_knows(grafana: GrafanaSandbox, http: aiohttp.ClientSession) -> None:
    """Put the reference alert into the local Grafana, as Grafana's own Alertmanager holds it
    (with the rule UID label the webhook leaves out), so silences match it."""
    lead = parse_webhook(reference_alert()).lead
    labels = {"__alert_rule_uid__": lead.rule_uid, **lead.labels}
    async with http.post(
        f"{grafana.url}{GRAFANA_API}/alerts",
        json=[{"labels": labels, "annotations": lead.annotations}],
        headers={"Authorization": f"Bearer {grafana.token}"},
    ) as answer:
        answer.raise_for_status()


def _buttons(message: Message) -> list[str]:
    return [
        str(element.get("action_id", ""))
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    ]


async def _silence_story(sandbox: SlackSandbox, out: TextIO) -> None:
    """alice silences the alert for an hour through the modal, then lifts the silence."""
    (parent,) = await sandbox.wait_for(lambda: sandbox.messages()[:1], timeout=10)
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
    _rule(out, f"alice types {ids.QUEUE_STATUS_COMMAND}")
    out.flush()
    answered = len(sandbox.ephemerals(ONCALL_USER))
    await sandbox.slash_command(ids.QUEUE_STATUS_COMMAND, "", user_id=ONCALL_USER)
    await sandbox.wait_for(lambda: len(sandbox.ephemerals(ONCALL_USER)) > answered, timeout=15)
    await asyncio.sleep(STORY_PAUSE_SECONDS)
    _rule(out, "alice clicks Unsilence")
    out.flush()
    await sandbox.click(sandbox.channel_id, parent.ts, ActionId.UNSILENCE.value, ONCALL_USER)
    await sandbox.wait_for(lambda: ActionId.SILENCE.value in _buttons(parent), timeout=10)


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
        if command != ids.QUEUE_STATUS_COMMAND:
            out.write(f"the demo knows one command: {ids.QUEUE_STATUS_COMMAND} [text]\n")
            out.flush()
            continue
        _rule(out, f"alice types {command} {text}".rstrip())
        out.flush()
        await sandbox.slash_command(command, text.strip(), user_id=ONCALL_USER)


async def run_demo(
    *, host: str = "127.0.0.1", port: int = 3000, slack_port: int = 0, out: TextIO = sys.stdout
) -> int:
    """Run until interrupted; returns the exit code."""
    bot_token = "xoxb-demo-" + secrets.token_hex(8)
    signing_secret = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="queuebot-demo-") as scratch:
        sandbox = SlackSandbox(
            bot_token=bot_token, signing_secret=signing_secret, channel_name=DEMO_CHANNEL
        )
        await sandbox.start(host="127.0.0.1", port=slack_port)
        # Alerts the demo plays stay firing until resolved (Alertmanager would let a silent
        # one lapse after resolve_timeout and the bot would take it as resolved).
        grafana = GrafanaSandbox(token=secrets.token_hex(16), resolve_timeout=timedelta(days=1))
        await grafana.start()
        settings = load_settings(
            {
                "SLACK_BOT_TOKEN": bot_token,
                "SLACK_SIGNING_SECRET": signing_secret,
                "SLACK_API_URL": sandbox.api_url,
                "QUEUEBOT_CHANNEL": f"#{DEMO_CHANNEL}",
                "QUEUEBOT_DATABASE": str(Path(scratch) / "queuebot.db"),
                "GRAFANA_URL": grafana.url,
                "GRAFANA_TOKEN": grafana.token or "",
                "QUEUEBOT_SILENCE_CHECK_SECONDS": "5",
            },
            for_serve=True,
        )
        runner = web.AppRunner(create_app(settings), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            await runner.cleanup()
            await sandbox.stop()
            await grafana.stop()
            print(f"queuebot demo: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
            print("queuebot demo: choose another port with --port", file=sys.stderr)
            return 1
        bound_host, bound_port = runner.addresses[0][:2]
        bot_url = f"http://{bound_host}:{bound_port}"
        sandbox.request_url = f"{bot_url}{ids.SLACK_EVENTS_PATH}"
        webhook = f"{bot_url}{ids.GRAFANA_WEBHOOK_PATH}"
        out.write(
            f"queuebot demo\n"
            f"  bot:             {bot_url}\n"
            f"  Grafana webhook: {webhook}\n"
            f"  local Slack API: {sandbox.api_url}\n"
            f"  local Grafana:   {grafana.url} (silences)\n"
            f"Post your own Grafana or Alertmanager payloads:\n"
            f"  curl -X POST {webhook} -H 'Content-Type: application/json' --data @payload.json\n"
            f"Type {ids.QUEUE_STATUS_COMMAND} [help | post | runner type] here to ask as alice.\n"
            f"Press Ctrl-C to stop.\n"
        )
        out.flush()
        printer = asyncio.create_task(_print_channel(sandbox, out))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        try:
            async with aiohttp.ClientSession() as http:
                await _grafana_knows(grafana, http)
                async with http.post(
                    webhook,
                    data=reference_alert(),
                    headers={"Content-Type": "application/json"},
                ) as answer:
                    _rule(out, f"Grafana → queuebot: reference alert ({answer.status})")
                    out.flush()
            story = asyncio.create_task(_silence_story(sandbox, out))
            typed = asyncio.create_task(_commands(sandbox, out))
            await stop.wait()
            for task in (story, typed):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        finally:
            printer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await printer
            await runner.cleanup()
            await sandbox.stop()
            await grafana.stop()
    out.write("\nqueuebot demo stopped\n")
    return 0
