"""The demo tells its whole story when it starts on a clock's edges: on the hour, a second
before the next, and across the end of a month, a leap day and a year."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from testkit.demo_story import assert_the_whole_story, story_at

EDGES = [
    datetime(2026, 11, 26, 10, 0, 0, tzinfo=UTC),
    datetime(2026, 11, 26, 10, 59, 59, tzinfo=UTC),
    datetime(2026, 4, 30, 23, 59, 30, tzinfo=UTC),
    datetime(2028, 2, 29, 23, 59, 40, tzinfo=UTC),
    datetime(2026, 12, 31, 23, 59, 30, tzinfo=UTC),
]


@pytest.mark.parametrize("moment", EDGES, ids=lambda m: m.strftime("%Y-%m-%dT%H:%M:%S"))
async def test_the_story_across_the_clocks_edges(moment: datetime, tmp_path: Path) -> None:
    assert_the_whole_story(await story_at(moment, tmp_path), moment)
