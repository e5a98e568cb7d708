"""Heads-ups before the alert in the store, on SQLite and on PostgreSQL: saved as versions,
shown by the writer, let go by retention once ended and shown."""

from __future__ import annotations

from dataclasses import replace

from bot.store import HeadsUpRecord, Store
from tests.store.contract import NOW


async def test_heads_ups_are_saved_as_versions_and_shown_by_the_writer(store: Store) -> None:
    def record(runner_type: str, started: float, phase: str = "warning") -> HeadsUpRecord:
        return HeadsUpRecord("#ci", runner_type, started, phase, f"{phase} view", started)

    out, older = record("linux.2xlarge", 100.0), record("linux.4xlarge", 50.0, "normal")
    older = replace(older, ended_at=60.0, updated_at=60.0)
    for saved in (out, older, replace(out, channel="#other")):
        await store.save_heads_up(saved)
    unshown = [r for r in await store.unshown_heads_ups() if r.channel == "#ci"]
    assert [(r.runner_type, r.version, r.shown_version) for r in unshown] == [
        ("linux.4xlarge", 1, 0),
        ("linux.2xlarge", 1, 0),
    ]
    # The writer shows one; the early warning saves its next version, which is unshown again.
    await store.set_heads_up_shown(unshown[1], "C1", "1.5")
    assert [r.runner_type for r in await store.unshown_heads_ups() if r.channel == "#ci"] == [
        "linux.4xlarge"
    ]
    fired = replace(out, phase="fired", view_json="fired view", updated_at=130.0, ended_at=130.0)
    await store.save_heads_up(fired)
    (again,) = [
        r
        for r in await store.unshown_heads_ups()
        if r.runner_type == "linux.2xlarge" and r.channel == "#ci"
    ]
    assert (again.version, again.shown_version, again.channel_id, again.ts) == (2, 1, "C1", "1.5")
    assert (again.phase, again.view_json, again.ended_at) == ("fired", "fired view", 130.0)
    # Out, or changed since: what a new leader resumes from.
    assert [r.runner_type for r in await store.heads_ups("#ci", 100.0)] == ["linux.2xlarge"]
    assert [r.runner_type for r in await store.heads_ups("#ci", 0.0)] == [
        "linux.4xlarge",
        "linux.2xlarge",
    ]


async def test_retention_forgets_heads_ups_that_ended_and_were_shown(store: Store) -> None:
    """Ended and shown before the cut-off: forgotten. Still out, not yet shown ended, or ended
    after the cut-off: kept."""
    day = 86400.0

    def record(runner_type: str, ended: float | None) -> HeadsUpRecord:
        phase = "warning" if ended is None else "normal"
        started = (ended or NOW) - 600.0
        return HeadsUpRecord(
            "#ci", runner_type, started, phase, "view", ended or started, ended_at=ended
        )

    records = {
        "old-shown": record("old-shown", NOW - 40 * day),
        "old-unshown": record("old-unshown", NOW - 40 * day),
        "recent": record("recent", NOW - day),
        "out": record("out", None),
    }
    for saved in records.values():
        await store.save_heads_up(saved)
    for shown in await store.unshown_heads_ups():
        if shown.runner_type in ("old-shown", "recent", "out"):
            await store.set_heads_up_shown(shown, "C1", f"1.{len(shown.runner_type)}")
    assert (await store.prune(NOW - 30 * day)).heads_ups == 1
    left = {r.runner_type for r in await store.heads_ups("#ci", 0.0)}
    assert left == {"old-unshown", "recent", "out"}
