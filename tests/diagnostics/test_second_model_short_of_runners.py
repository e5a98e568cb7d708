"""The checks on fleets of the second model where a type is short of runners beside other
readings: an outage's type with no job completed to time, one whose usual busy runners were
read at a quiet moment, and a maximum cut below the level usually busy where more jobs came."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fleetmodel import Case, Truth, plan, run, truth_of
from testkit.fleet_reading import Judged, diagnose_run, finding


async def _read(case: Case, seed: int, types: int, at: str, tmp_path: Path) -> tuple[Truth, Judged]:
    """The fleet of `case` ending at `at` (HH:MM) on 27 November 2026, and its reading from
    GitHub's job events alone."""
    hour, minute = (int(part) for part in at.split(":"))
    end = datetime(2026, 11, 27, hour, minute, tzinfo=UTC)
    fleet = run(plan(case, seed=seed, types=types, end=end))
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    return truth_of(fleet), judged


async def test_an_outage_with_no_job_timed_and_no_more_runners_busy_is_runners_not_coming(
    tmp_path: Path,
) -> None:
    # New runners stopped starting on every type. On linux-arm64-16cpu 10 jobs wait 38 minutes
    # where none usually wait, fewer jobs arrive than usual, and the jobs that started waited
    # 47 minutes (usually half a minute); busy runners rose from 3 to 8, their usual level, and
    # no job completed in the window to be timed. Longer jobs where no ceiling holds would
    # have kept more runners busy: runners are not coming. Before: no cause for that type.
    truth, judged = await _read(Case.OUTAGE, 13, 3, "23:31", tmp_path)
    assert truth.affected.get("linux-arm64-16cpu") == "infrastructure"
    assert judged.named == "infrastructure" and judged.located
    failing = finding(judged.report, "infrastructure")
    assert "linux-arm64-16cpu" in failing.runner_types
    (told,) = [e for e in failing.evidence if e.runner_type == "linux-arm64-16cpu"]
    assert "no more than usual while 10 jobs wait" in told.why
    slower = finding(judged.report, "long_running_jobs")
    assert "linux-arm64-16cpu" not in slower.runner_types or slower.verdict.value != "likely"


async def test_a_job_holds_its_runner_no_longer_than_the_usual_job_time_in_an_outage(
    tmp_path: Path,
) -> None:
    # An outage on six types at 04:24. On linux-x64-32cpu 37 jobs wait 80 minutes; busy runners
    # rose from 2 to 5 as late runners came, the jobs that started waited 74 minutes, and the two
    # jobs completing in the window took their usual p90. Five busy over 0.2 jobs started a
    # minute is 20 minutes a job, 1.9x the 10 minutes the usual 4 busy runners (read at a quiet
    # moment) say, but no longer than the usual mean job time (19 minutes): no slowdown.
    # Before: long-running jobs for that type, which the finding of runners failing left out.
    truth, judged = await _read(Case.OUTAGE, 12, 6, "04:24", tmp_path)
    assert truth.affected.get("linux-x64-32cpu") == "infrastructure"
    assert judged.named == "infrastructure" and judged.located
    assert "linux-x64-32cpu" in finding(judged.report, "infrastructure").runner_types
    assert finding(judged.report, "long_running_jobs").verdict.value != "likely"


async def test_a_maximum_cut_below_the_usual_level_comes_before_more_jobs(
    tmp_path: Path,
) -> None:
    # Two troubles: the maximum of gpu-h100-8gpu lowered (6 busy, held there, where 12 are
    # usual; 89 jobs waiting 166 minutes), and runners failing on gpu-a10g-4gpu. Jobs a minute
    # on the H100s are up over the hour (0.6 against 0.3), two workflows that send it few jobs
    # among them: more work, and it is named. But the usual demand alone would not fit
    # beneath six runners; no surge drove the type down to them: the limit is the cause.
    # Before: more work first.
    truth, judged = await _read(Case.MIX, 11, 6, "11:17", tmp_path)
    assert truth.primary_cause == "autoscaling_limits"
    assert truth.affected["gpu-h100-8gpu"] == "autoscaling_limits"
    assert judged.named == "autoscaling_limits" and judged.located
    limits = finding(judged.report, "autoscaling_limits")
    assert limits.runner_types == ("gpu-h100-8gpu",)
    (busy, *_) = limits.evidence
    assert busy.now is not None and busy.baseline is not None
    assert busy.now < 0.8 * busy.baseline
    assert finding(judged.report, "increased_workload").verdict.value == "likely"
    assert "gpu-a10g-4gpu" in finding(judged.report, "infrastructure").runner_types
