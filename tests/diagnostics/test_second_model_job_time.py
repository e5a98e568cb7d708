"""The checks on fleets of the second model whose jobs got slower: told where the window
completes no job to time."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fleetmodel import Case, plan, run, truth_of
from tests.support.fleet_reading import diagnose_run, finding


async def test_jobs_holding_their_runners_longer_are_slower_with_none_completed_to_time(
    tmp_path: Path, binaries: tuple[str, str]
) -> None:
    # gpu-h100-8gpu's merge-queue and nightly jobs take three times as long since about three
    # hours: its 40-odd runners are busy as every night, but no job completed in the last ten
    # minutes to time, and 64 jobs wait where about 30 usually do. A job now holds its runner
    # 2.4 times as long as usual (runners busy over jobs started a minute over the hour).
    # Before, no job time was measured and the queue read as more work than usual.
    end = datetime(2026, 11, 27, 3, 21, tzinfo=UTC)
    fleet = run(plan(Case.SLOW_JOBS, seed=3, types=6, end=end))
    assert truth_of(fleet).primary_cause == "long_running_jobs"
    combinations = ("jobs", "arc-lean")
    for judged in await diagnose_run(fleet, tmp_path, combinations, binaries=binaries):
        assert judged.named == "long_running_jobs" and judged.located, judged.combination
        found = finding(judged.report, "long_running_jobs")
        assert found.runner_types == ("gpu-h100-8gpu",)
        (held,) = found.evidence
        assert held.measure.startswith("time a job holds a runner")
        assert held.now is not None and held.baseline is not None
        assert held.now >= 2 * held.baseline, judged.combination
        workload = finding(judged.report, "increased_workload")
        assert workload.verdict.value != "likely", judged.combination
