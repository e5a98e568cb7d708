"""What the demo shows in the terminal and what alice does by herself: the channel printed as
messages arrive, her story (diagnostics, silence, /queue-status, unsilence) and the slash
commands typed into the terminal, sent as hers."""

from __future__ import annotations

import asyncio
import json
import math
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TextIO

from bot.slack import contract
from bot.slack.contract import ActionId, SilenceInput
from queuebot_lab.demo.stack import DEMO_CHANNEL
from queuebot_lab.sandbox.slack import (
    ONCALL_USER,
    PostedMessage,
    SandboxEvent,
    SandboxEventKind,
    SlackSandbox,
    render_message,
)
from queuebot_lab.sandbox.slack.models import ViewState

_SHOWN = {
    SandboxEventKind.MESSAGE_POSTED,
    SandboxEventKind.MESSAGE_UPDATED,
    SandboxEventKind.EPHEMERAL_POSTED,
    SandboxEventKind.FILE_SHARED,
}
#: Time to read each step of the story before the next one happens.
STORY_PAUSE_SECONDS = 1.5
#: The environment variable that sets another time (0: each step as soon as the bot answered).
PAUSE_VARIABLE = "QUEUEBOT_DEMO_PAUSE_SECONDS"
#: The longest pause it may ask for.
MAX_PAUSE_SECONDS = 3600.0


def story_pause(environ: Mapping[str, str]) -> float:
    """The pause between the story's steps that `environ` asks for (`STORY_PAUSE_SECONDS`
    unless `PAUSE_VARIABLE` is set); raises ValueError, saying what is wrong, for a value that
    is not a number of seconds from 0 to `MAX_PAUSE_SECONDS`."""
    text = environ.get(PAUSE_VARIABLE, "").strip()
    if not text:
        return STORY_PAUSE_SECONDS
    try:
        pause = float(text)
    except ValueError:
        pause = math.nan
    if not 0.0 <= pause <= MAX_PAUSE_SECONDS:  # NaN is neither
        raise ValueError(
            f"{PAUSE_VARIABLE} must be a number of seconds from 0 to {MAX_PAUSE_SECONDS:g},"
            f" not {text!r}"
        )
    return pause


def rule(out: TextIO, title: str) -> None:
    out.write(f"\n── {title} " + "─" * max(0, 74 - len(title)) + "\n")


def _buttons(message: PostedMessage) -> list[str]:
    return [
        str(element.get("action_id", ""))
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    ]


async def print_channel(
    sandbox: SlackSandbox, out: TextIO, clock: Callable[[], datetime] = lambda: datetime.now(UTC)
) -> None:
    """Print each new or edited message of the demo channel, with its thread, as it happens;
    times are told as of `clock` (the demo's)."""
    feed = sandbox.subscribe()
    try:
        while True:
            event: SandboxEvent = await feed.get()
            if event.kind not in _SHOWN or event.ts is None:
                continue
            if event.kind is SandboxEventKind.EPHEMERAL_POSTED:
                person = sandbox.workspace.users.get(event.user or "")
                rule(out, f"only visible to {person.name if person else event.user}")
                shown = event.detail.get("message") or {"text": event.detail.get("text", "")}
                out.write(render_message(shown, now=clock()) + "\n")
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
            rule(out, f"#{DEMO_CHANNEL} · {what}")
            text = render_message(message.to_slack(), now=clock())
            if message.files:
                names = ", ".join(str(f.get("title") or f.get("name")) for f in message.files)
                text = (text + "\n" if text.strip() else "") + f"[image: {names}]"
            if message.is_reply:
                text = "\n".join(f"    │ {line}" for line in text.splitlines())
            out.write(text + "\n")
            out.flush()
    finally:
        sandbox.unsubscribe(feed)


async def _story(sandbox: SlackSandbox, out: TextIO, pause: float) -> None:
    """alice runs diagnostics, silences the alert for an hour through the modal, asks
    /queue-status, then lifts the silence."""
    (parent,) = await sandbox.wait_for(lambda: sandbox.messages()[:1], timeout=10)
    await asyncio.sleep(pause)
    rule(out, "alice clicks Run diagnostics")
    out.flush()
    await sandbox.click(sandbox.channel_id, parent.ts, ActionId.RUN_DIAGNOSTICS.value, ONCALL_USER)
    await sandbox.wait_for(
        lambda: any(
            "Diagnostics" in json.dumps(r.blocks) for r in sandbox.replies(None, parent.ts)
        ),
        timeout=30,
    )
    await asyncio.sleep(pause)
    rule(out, "alice clicks Silence…")
    await sandbox.click(sandbox.channel_id, parent.ts, ActionId.SILENCE.value, ONCALL_USER)
    view = await sandbox.wait_for(
        lambda: next((v for v in sandbox.views if v.state is ViewState.OPEN), None)
    )
    assert view is not None
    preview = view.view["blocks"][-1]["text"]["text"]
    out.write(f"modal “Silence alert” opens for alice\n{preview}\n")
    rule(out, "alice picks 1 hour, adds a comment and presses Silence")
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
    await asyncio.sleep(pause)
    rule(out, f"alice types {contract.QUEUE_STATUS_COMMAND}")
    out.flush()
    answered = len(sandbox.ephemerals(ONCALL_USER))
    await sandbox.slash_command(contract.QUEUE_STATUS_COMMAND, "", user_id=ONCALL_USER)
    await sandbox.wait_for(lambda: len(sandbox.ephemerals(ONCALL_USER)) > answered, timeout=15)
    await asyncio.sleep(pause)
    rule(out, "alice clicks Unsilence")
    out.flush()
    await sandbox.click(sandbox.channel_id, parent.ts, ActionId.UNSILENCE.value, ONCALL_USER)
    await sandbox.wait_for(lambda: ActionId.SILENCE.value in _buttons(parent), timeout=10)


async def told_story(
    sandbox: SlackSandbox, out: TextIO, pause: float = STORY_PAUSE_SECONDS
) -> None:
    """alice's story, `pause` seconds to read each step before the next."""
    try:
        await _story(sandbox, out, pause)
    except TimeoutError as exc:
        # The story waits for the bot at each step; a real service that does not answer
        # (PROMETHEUS_URL, GRAFANA_URL) stops it, not the demo.
        rule(out, f"the story stopped: {exc}")
        out.flush()


async def commands(sandbox: SlackSandbox, out: TextIO) -> None:
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
        rule(out, f"alice types {command} {text}".rstrip())
        out.flush()
        await sandbox.slash_command(command, text.strip(), user_id=ONCALL_USER)
