"""The demo's story played in this process at a chosen moment: the demo started with its clock
set there (and the suite's timings), the reference alert fired, alice's story told without
pauses, and the channel as the terminal prints it."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from queuebot_lab.demo import Demo
from queuebot_lab.demo.story import told_story
from queuebot_lab.sandbox.slack import ONCALL_USER, render_message
from testkit.timing import fast_environment

#: What the story ends with in the channel.
THE_END = "*Unsilenced* by @alice"
_READ = re.compile(r"Read (\w{3} \d{1,2}, \d{4}) at (\d\d:\d\d)")


async def story_at(moment: datetime, scratch: Path) -> str:
    """The channel and alice's private answers as the demo started at `moment` leaves them once
    her story has ended, rendered as the terminal shows them."""
    out = io.StringIO()
    demo = Demo(port=0, scratch=scratch, environ=fast_environment(), at=moment)
    try:
        await demo.start()
        assert await demo.play_reference() == 202
        await told_story(demo.sandbox, out, pause=0.0)
        assert "the story stopped" not in out.getvalue(), out.getvalue()
        sandbox = demo.sandbox
        (parent,) = sandbox.messages()

        def channel() -> str:
            shown = [parent, *sandbox.replies(None, parent.ts), *sandbox.ephemerals(ONCALL_USER)]
            return "\n".join(render_message(m.to_slack(), now=demo.now()) for m in shown)

        return await sandbox.wait_for(lambda: THE_END in channel() and channel(), timeout=15)
    finally:
        await demo.stop()


def read_at(output: str) -> datetime:
    """When the diagnostics report says the fleet was read (to the minute)."""
    found = _READ.search(output)
    assert found is not None, "the report says when the fleet was read"
    day, minute = found.groups()
    return datetime.strptime(f"{day} {minute}", "%b %d, %Y %H:%M").replace(tzinfo=UTC)


def assert_the_whole_story(output: str, moment: datetime) -> None:
    """Both staged causes found, read at the demo's moment; the silence made and lifted."""
    assert "Scope: isolated, 2 of 8 runner types queueing" in output
    assert "*Increased workload*: likely" in output
    assert "*Autoscaling configuration limits*: likely" in output
    assert "*Silenced* by @alice until" in output
    assert "Open incidents (1):" in output and "Active silences (1):" in output
    assert THE_END in output
    # The bot read the fleet on the demo's clock, within the minute or two the story takes.
    assert moment - timedelta(minutes=1) <= read_at(output) <= moment + timedelta(minutes=3)
