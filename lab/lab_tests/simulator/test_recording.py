"""A simulation kept in the cache reads back as the very fleet it simulated; another spec, a
damaged file or a cache that cannot be written is simulated again, never an error."""

from __future__ import annotations

import gzip
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from queuebot_lab.simulator import Scenario, SimulationSpec, simulate_jobs
from queuebot_lab.simulator.recording import KEPT, cache_dir, recorded_jobs

SPEC = SimulationSpec(
    scenario=Scenario.MIX,
    hours=3,
    runner_types=3,
    seed=5,
    end=datetime(2026, 11, 26, 20, 10, tzinfo=UTC),
    step_seconds=120,
)


def _recordings(directory: Path) -> list[Path]:
    return sorted(directory.glob("fleet-*.json.gz"))


def test_a_recorded_fleet_reads_back_as_simulated(tmp_path: Path) -> None:
    fresh = simulate_jobs(SPEC)
    assert fresh.jobs and fresh.runners and fresh.truth.affected
    first = recorded_jobs(SPEC, tmp_path)
    (kept,) = _recordings(tmp_path)
    again = recorded_jobs(SPEC, tmp_path)
    assert first == fresh and again == fresh
    assert again.truth.problem_start == fresh.truth.problem_start
    assert _recordings(tmp_path) == [kept]


def test_another_spec_is_another_recording_and_a_recording_is_read_not_simulated(
    tmp_path: Path,
) -> None:
    other = SimulationSpec(
        scenario=SPEC.scenario,
        hours=SPEC.hours,
        runner_types=SPEC.runner_types,
        seed=6,
        end=SPEC.end,
        step_seconds=SPEC.step_seconds,
    )
    recorded_jobs(SPEC, tmp_path)
    (mine,) = _recordings(tmp_path)
    assert recorded_jobs(other, tmp_path) == simulate_jobs(other) != simulate_jobs(SPEC)
    (theirs,) = set(_recordings(tmp_path)) - {mine}
    # What a recorded spec gets is its file's: with the two files swapped, each spec reads
    # the other's fleet.
    kept = {path: path.read_bytes() for path in (mine, theirs)}
    mine.write_bytes(kept[theirs])
    theirs.write_bytes(kept[mine])
    assert recorded_jobs(SPEC, tmp_path) == simulate_jobs(other)
    assert recorded_jobs(other, tmp_path) == simulate_jobs(SPEC)


@pytest.mark.parametrize(
    "damage",
    [b"", b"not gzip at all", gzip.compress(b'{"layout": 0}', mtime=0)],
    ids=["empty", "not-gzip", "another-layout"],
)
def test_a_damaged_recording_is_simulated_again_and_replaced(tmp_path: Path, damage: bytes) -> None:
    recorded_jobs(SPEC, tmp_path)
    (kept,) = _recordings(tmp_path)
    kept.write_bytes(damage)
    assert recorded_jobs(SPEC, tmp_path) == simulate_jobs(SPEC)
    assert kept.read_bytes() != damage
    assert recorded_jobs(SPEC, tmp_path) == simulate_jobs(SPEC)


def test_a_cache_that_cannot_be_written_is_simulated_around(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    # A directory beneath a file can be neither made nor written.
    assert recorded_jobs(SPEC, blocked / "queuebot") == simulate_jobs(SPEC)
    assert blocked.read_text() == ""


def test_the_cache_is_queuebots_own_under_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "queuebot"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "queuebot"


def test_only_the_newest_recordings_are_kept(tmp_path: Path) -> None:
    older = [tmp_path / f"fleet-{n:024x}.json.gz" for n in range(KEPT + 2)]
    for age, path in enumerate(reversed(older), start=1):
        path.write_bytes(b"an older simulator's")
        path.with_suffix(".lock").write_text("")
        os.utime(path, (1_700_000_000 - age, 1_700_000_000 - age))
    recorded_jobs(SPEC, tmp_path)
    (new,) = set(_recordings(tmp_path)) - set(older)
    assert set(_recordings(tmp_path)) == {new, *older[-(KEPT - 1) :]}
    assert not older[0].with_suffix(".lock").exists()
    assert recorded_jobs(SPEC, tmp_path) == simulate_jobs(SPEC)
