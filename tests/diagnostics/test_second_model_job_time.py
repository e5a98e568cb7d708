"""The checks on fleets of the second model whose jobs got slower: told where the window
completes no job to time."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fleetmodel import Case, plan, run, truth_of
from testkit.fleet_reading import diagnose_run, finding


async def test_jobs_holding_their_runners_longer_are_slower_with_none_completed_to_time(
    tmp_path: Path, prometheus_binary: str
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
    for judged in await diagnose_run(fleet, tmp_path, combinations, prometheus=prometheus_binary):
        assert judged.named == "long_running_jobs" and judged.located, judged.combination
        found = finding(judged.report, "long_running_jobs")
        assert found.runner_types == ("gpu-h100-8gpu",)
        (held,) = found.evidence
        assert held.measure.startswith("time a job holds a runner")
        assert held.now is not None and held.baseline is not None
        assert held.now >= 2 * held.baseline, judged.combination
        workload = finding(judged.report, "increased_workload")
        assert workload.verdict.value != "likely", judged.combination


async def test_a_job_moved_within_a_workflow_that_ran_on_the_type_is_more_work(
    tmp_path: Path,
) -> None:
    # service-api's E2E workflow ran on linux-x64-4cpu (2.7 jobs a minute at this hour); its
    # other job's `runs-on` moved from gpu-h100-8gpu to it. E2E now sends 6.4 jobs a minute
    # here, none there (3.4 usual), and its moved jobs are the long ones: the type's p90 job
    # time is 1.9 times usual while its jobs a minute rose 1.49 times, short of a surge.
    # Before, this read as long-running jobs at high confidence: the workflow was not new to
    # the type, so the changed mix went unseen.
    end = datetime(2026, 11, 27, 3, 42, tzinfo=UTC)
    fleet = run(plan(Case.MOVED_WORKFLOW, seed=6, types=3, end=end))
    truth = truth_of(fleet)
    assert truth.affected == {"linux-x64-4cpu": "increased_workload"}
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "increased_workload" and judged.located, judged.combination
        workload = finding(judged.report, "increased_workload")
        (moved,) = [e for e in workload.evidence if e.measure.endswith("moved here")]
        assert (moved.runner_type, moved.workflows) == ("linux-x64-4cpu", ("E2E",))
        assert moved.now == 6.4 and moved.baseline == 2.7
        (away,) = [e for e in workload.evidence if e.measure.endswith("(moved away?)")]
        assert (away.runner_type, away.now, away.baseline) == ("gpu-h100-8gpu", 0.0, 3.4)
        slower = finding(judged.report, "long_running_jobs")
        assert slower.verdict.value == "ruled_out", judged.combination
        assert "(E2E)" in slower.evidence[0].why


async def test_a_p90_of_a_few_jobs_with_their_median_below_usual_is_no_slowdown(
    tmp_path: Path,
) -> None:
    # linux-x64-64cpu, four jobs waiting 12 minutes at night. Of the few jobs completing, one
    # release smoke test took 43 minutes: the p90 is 3.9 times usual, the median 0.69 times.
    # Slower jobs move the middle too; this is a few jobs' spread. Before: long-running jobs,
    # high confidence.
    end = datetime(2026, 11, 27, 3, 42, tzinfo=UTC)
    fleet = run(plan(Case.LOWERED_MAX, seed=6, types=3, end=end))
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    slower = finding(judged.report, "long_running_jobs")
    assert slower.verdict.value == "ruled_out"
    p90, p50 = slower.evidence
    assert p90.now is not None and p90.baseline is not None and p90.now > 3 * p90.baseline
    assert p50.now is not None and p50.baseline is not None and p50.now < 0.75 * p50.baseline
    assert judged.named != "long_running_jobs"


async def test_slower_jobs_timed_on_a_few_of_them_are_no_certainty(tmp_path: Path) -> None:
    # linux-x64-16cpu's jobs got slower: the p90 of the few jobs completing in the window is
    # 2.4 times usual, their median 2.7 times. Long-running jobs, rightly, but told from fewer
    # than fifty jobs with no clear rise of the time a job holds its runner: medium at most.
    # Before: high.
    end = datetime(2026, 11, 27, 22, 35, tzinfo=UTC)
    fleet = run(plan(Case.SLOW_JOBS, seed=5, types=6, end=end))
    assert truth_of(fleet).primary_cause == "long_running_jobs"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "long_running_jobs" and judged.located, judged.combination
        assert judged.confidence == "medium", judged.combination
        p90, p50 = finding(judged.report, "long_running_jobs").evidence
        assert p90.measure == "p90 job time" and p50.measure == "p50 job time"
        assert p50.now is not None and p50.baseline is not None and p50.now > 2 * p50.baseline


async def test_runners_failing_on_most_types_queueing_are_the_alerts_cause(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # An outage on three types. Two read as runners failing by their own numbers; on the worst,
    # win-2022-8cpu, the nine or so jobs completing in the window took longer than usual (p90
    # 2.0x, median 1.7x), but not longer than the time a job usually holds its runner (at
    # least the usual mean job time), and the jobs that started waited 9x their usual: runners
    # failing there too. Runners failing on every type is the alert's cause (low confidence).
    # Before: long-running jobs, high; then win-2022-8cpu read as slower jobs beside the
    # fleet's failing runners (the usual hold read from busy runners at one moment).
    end = datetime(2026, 11, 27, 10, 35, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=5, types=3, end=end))
    assert truth_of(fleet).primary_cause == "infrastructure"
    for judged in await diagnose_run(
        fleet, tmp_path, ("jobs", "arc-lean"), prometheus=prometheus_binary
    ):
        assert (judged.named, judged.confidence) == ("infrastructure", "low"), judged.combination
        failing = finding(judged.report, "infrastructure")
        assert set(failing.runner_types) == {"win-2022-8cpu", "linux-arm64-4cpu", "linux-x64-8cpu"}
        assert judged.located, judged.combination
        slower = finding(judged.report, "long_running_jobs")
        assert slower.verdict.value == "ruled_out", judged.combination
    # Six types queueing, five of them with runners failing: medium confidence.
    end = datetime(2026, 11, 27, 22, 35, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=5, types=6, end=end))
    (tmp_path / "six").mkdir()
    (judged,) = await diagnose_run(fleet, tmp_path / "six", ("jobs",))
    assert (judged.named, judged.confidence) == ("infrastructure", "medium")
    assert len(finding(judged.report, "infrastructure").runner_types) == 5


async def test_slower_jobs_with_no_ceiling_and_no_runner_added_are_no_certainty(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners of linux-arm64-16cpu stopped starting: 21 jobs wait, busy runners waver at
    # 5 to 8, their usual 7, held at no one level. The docs-build jobs completing in the
    # window took longer than usual (the short ones finished, the long ones left), and each
    # job holds its runner twice as long by Little's law, since fewer jobs start. Slower jobs
    # where no ceiling holds the runners would have kept more of them busy: runners that do
    # not come read the same, so long-running jobs at medium at most. Before: high.
    end = datetime(2026, 11, 27, 10, 56, tzinfo=UTC)
    fleet = run(plan(Case.FAILING_STARTS, seed=8, types=3, end=end))
    assert truth_of(fleet).affected == {"linux-arm64-16cpu": "infrastructure"}
    for judged in await diagnose_run(
        fleet, tmp_path, ("jobs", "arc-lean"), prometheus=prometheus_binary
    ):
        named = (judged.named, judged.confidence)
        assert named == ("long_running_jobs", "medium"), judged.combination
        limit = finding(judged.report, "autoscaling_limits")
        assert limit.verdict.value == "ruled_out", judged.combination
        (state,) = [s for s in judged.report.runner_types if s.affected]
        assert state.name == "linux-arm64-16cpu" and (state.queued or 0) >= 15
    # With the runners list, no runner beyond the busy ones: runners failing, as staged.
    (tmp_path / "runners").mkdir()
    (judged,) = await diagnose_run(fleet, tmp_path / "runners", ("jobs+runners",))
    assert judged.named == "infrastructure" and judged.located


async def test_more_work_where_fewer_jobs_start_in_an_outage_counts_with_the_fleet(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners fail on all six types at night. On win-2022-16cpu more jobs arrived over the
    # hour than usual (0.78 a minute, usually 0.35), but fewer started (0.20, usually 0.35):
    # more work brings runners, unless they do not come. It keeps its finding of more work,
    # and is counted with the five other types whose runners fail. Before, it was left out of
    # the infrastructure finding.
    end = datetime(2026, 11, 27, 3, 56, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=8, types=6, end=end))
    truth = truth_of(fleet)
    assert len(truth.affected) == 6 and set(truth.affected.values()) == {"infrastructure"}
    for judged in await diagnose_run(
        fleet, tmp_path, ("jobs", "arc-lean"), prometheus=prometheus_binary
    ):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        failing = finding(judged.report, "infrastructure")
        assert "win-2022-16cpu" in failing.runner_types
        more = finding(judged.report, "increased_workload")
        assert more.runner_types == ("win-2022-16cpu",), judged.combination


async def test_runners_held_longer_at_a_ceiling_are_no_certainty_of_slower_jobs(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # Two fleets where a ceiling holds a type's runners and a job holds its runner 1.6 to 2.5
    # times as long as usual (runners busy over jobs started an hour, the usual at least the
    # usual mean job time), while the jobs completing
    # are not clearly slower: a maximum lowered to 8 (its p90 job time 1.1x usual on job
    # events, two jobs timed), and a merge queue moved onto linux-x64-highmem-16cpu whose
    # hour-long jobs now keep its 24 runners busy (p90 as usual). Slower jobs are not what
    # either shows unambiguously: whatever is named, long-running jobs not with certainty.
    # Job events see whose jobs hold the moved type's runners (a repository new to it): the
    # job mix changed, and long-running jobs are ruled out there.
    cases = [
        (Case.LOWERED_MAX, 6, "linux-x64-highmem-32cpu"),
        (Case.MOVED_WORKFLOW, 3, "linux-x64-highmem-16cpu"),
    ]
    for case, types, name in cases:
        end = datetime(2026, 11, 27, 11, 31, tzinfo=UTC)
        fleet = run(plan(case, seed=13, types=types, end=end))
        assert name in truth_of(fleet).affected
        workdir = tmp_path / case.value
        workdir.mkdir()
        combinations = ("jobs", "arc", "arc-lean")
        for judged in await diagnose_run(
            fleet, workdir, combinations, prometheus=prometheus_binary
        ):
            where = f"{case.value} {judged.combination}"
            assert finding(judged.report, "autoscaling_limits").verdict.value == "likely", where
            slower = finding(judged.report, "long_running_jobs")
            if case is Case.MOVED_WORKFLOW and judged.combination == "jobs":
                assert slower.verdict.value == "ruled_out"
                assert "new to this type (acme-corp/ml-platform)" in slower.evidence[0].why
                continue
            (held,) = [
                e for e in slower.evidence if e.measure.startswith("time a job holds a runner")
            ]
            assert held.now is not None and held.baseline is not None
            assert held.now >= 1.5 * held.baseline, where
            assert judged.named != "long_running_jobs" or judged.confidence != "high", where


async def test_long_jobs_left_as_busy_runners_fall_are_no_slowdown(tmp_path: Path) -> None:
    # New runners fail on every type. On linux-x64-4cpu the most runners busy at once fell
    # from 69 an hour before to 34 while 123 jobs wait: the jobs completing are those left
    # running from before, the long ones (p90 2.0x usual, the median as usual). Slower jobs
    # would keep more runners busy, not fewer. Before, it read as long-running jobs, and the
    # type was left out of the fleet's runners failing.
    end = datetime(2026, 11, 27, 11, 24, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=12, types=6, end=end))
    assert truth_of(fleet).affected["linux-x64-4cpu"] == "infrastructure"
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    assert judged.named == "infrastructure" and judged.located
    slower = finding(judged.report, "long_running_jobs")
    assert slower.verdict.value == "ruled_out"
    (p90,) = [
        e
        for e in slower.evidence
        if (e.runner_type, e.measure) == ("linux-x64-4cpu", "p90 job time")
    ]
    assert p90.now is not None and p90.baseline is not None and p90.now >= 2 * p90.baseline
    assert p90.why.startswith("busy runners fallen from 69 at once an hour before to 34")
    assert "linux-x64-4cpu" in finding(judged.report, "infrastructure").runner_types


async def test_long_jobs_left_as_peaks_fall_within_the_half_hour_are_no_slowdown(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners fail on every type. On linux-x64-4cpu a lean scrape's mean job time is 2.2x
    # usual, but the most runners busy at once fell from 18 within the half hour to 14: the
    # jobs completing are those left running, the long ones of its two workflows (one of
    # five minutes, one of forty). Before, it read as long-running jobs and the type was left
    # out of the fleet's runners failing.
    end = datetime(2026, 11, 27, 4, 17, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=11, types=3, end=end))
    assert truth_of(fleet).affected["linux-x64-4cpu"] == "infrastructure"
    (lean,) = await diagnose_run(fleet, tmp_path, ("arc-lean",), prometheus=prometheus_binary)
    assert lean.named == "infrastructure" and lean.located
    slower = finding(lean.report, "long_running_jobs")
    assert slower.verdict.value == "ruled_out"
    (mean,) = [e for e in slower.evidence if e.runner_type == "linux-x64-4cpu"]
    assert mean.now is not None and mean.baseline is not None and mean.now >= 2 * mean.baseline
    assert mean.why.startswith("busy runners fallen from 18 at once within the half hour to 14")
