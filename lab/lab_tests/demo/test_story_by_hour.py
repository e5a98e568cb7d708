"""The demo tells its whole story whatever the hour it starts at: the fleet stages its surge and
its autoscaler's limit relative to the demo's start, and the bot reads them on the demo's clock.
Every hour of a day, each at another minute and second."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from testkit.demo_story import assert_the_whole_story, story_at

HOURS = [datetime(2026, 11, 26, h, h * 7 % 60, h * 13 % 60, tzinfo=UTC) for h in range(24)]


@pytest.mark.parametrize("moment", HOURS, ids=lambda m: m.strftime("%H:%M:%S"))
async def test_the_story_at_every_hour(moment: datetime, tmp_path: Path) -> None:
    assert_the_whole_story(await story_at(moment, tmp_path), moment)
