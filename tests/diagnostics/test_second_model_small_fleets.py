"""The checks on small fleets of the second model (three runner types), read through real
sources: where a few jobs, a few types or a few runners make one reading look like another."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fleetmodel import Case, FleetRun, plan, run, truth_of
from testkit.fleet_reading import diagnose_run, finding


def _small(case: Case, hour: int) -> FleetRun:
    """Three runner types, seed 2, the run ending at `hour`:14 on 26 November 2026."""
    end = datetime(2026, 11, 26, hour, 14, tzinfo=UTC)
    return run(plan(case, seed=2, types=3, end=end))


async def test_a_p90_of_three_jobs_is_no_slowdown_where_their_median_fell(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A type held at its maximum of 3 at night: 8 jobs wait 35 minutes. Three jobs completed in
    # the window, their p90 twice the usual and their median a third of it: their spread, not
    # slower jobs. The limit is named; the other type queueing (runners too small) is second.
    fleet = _small(Case.MIX, 3)
    truth = truth_of(fleet)
    assert truth.primary_cause == "autoscaling_limits"
    assert truth.affected["linux-x64-32cpu"] == "autoscaling_limits"
    judged = await diagnose_run(fleet, tmp_path, ("jobs", "arc"), prometheus=prometheus_binary)
    for one in judged:
        assert one.named == "autoscaling_limits" and one.located, one.combination
        slower = finding(one.report, "long_running_jobs")
        assert slower.verdict.value != "likely" or "linux-x64-32cpu" not in slower.runner_types
    # ARC measures no longest wait: the type is ranked first by how long the jobs that started
    # lately waited (40 minutes), not only by its count of jobs not yet running (10 against 20).
    first, second = judged[1].report.runner_types[:2]
    assert (first.name, first.queued) == ("linux-x64-32cpu", 10)
    assert (second.name, second.queued) == ("win-2022-8cpu", 20)


async def test_work_moved_in_with_longer_jobs_is_more_work(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A workflow moved onto a type brings jobs of 30 minutes where the type's own take 10: its
    # job time rose 1.6x. The workflows that ran there before are slower only by chance (one
    # job at 1.4x): the job mix changed, not the jobs. A lean scrape carries no workflow, but
    # each job's repository: the moved one's, monorepo, is new to the type.
    fleet = _small(Case.MOVED_WORKFLOW, 10)
    assert truth_of(fleet).primary_cause == "increased_workload"
    judged = await diagnose_run(
        fleet, tmp_path, ("jobs", "arc", "arc-lean"), prometheus=prometheus_binary
    )
    for one in judged:
        assert one.named == "increased_workload" and one.located, one.combination
        slower = finding(one.report, "long_running_jobs")
        assert slower.verdict.value == "ruled_out", one.combination
        assert "workflows new to this type" in slower.evidence[0].why, one.combination
    assert "(monorepo)" in finding(judged[2].report, "long_running_jobs").evidence[0].why


async def test_more_jobs_come_first_where_the_moved_ones_are_far_longer_on_a_lean_scrape(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # At night a workflow moved onto a Windows type brings jobs about four times longer than
    # its own: jobs a minute 2.1x usual, the mean job time 2.5x and the time a job holds its
    # runner 2.8x. Without job times by workflow a longer mean may be only the jobs that came
    # on top; more jobs arriving is more work whatever they are.
    fleet = _small(Case.MOVED_WORKFLOW, 22)
    truth = truth_of(fleet)
    assert truth.primary_cause == "increased_workload"
    (lean,) = await diagnose_run(fleet, tmp_path, ("arc-lean",), prometheus=prometheus_binary)
    assert lean.named == "increased_workload" and lean.located
    assert lean.confidence == "medium"
    assert finding(lean.report, "long_running_jobs").verdict.value == "likely"
    (note,) = [n for n in lean.report.notes if "job time" in n]
    assert "jobs a minute 2.1x usual and job time 2.8x: more jobs first" in note


async def test_a_type_that_started_nothing_lately_is_ranked_by_the_wait_its_queue_implies(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A GPU type held by a lowered maximum at 8 runners with 51 jobs not yet running started no
    # job in the last 20 minutes, so a lean scrape measures no wait of jobs started there. The
    # other type queueing (jobs running longer) has 53 jobs not yet running that waited about
    # half an hour. The GPU queue, 51 jobs arriving 0.8 a minute, implies an hour's wait: it
    # is the worst, and its limit the primary cause.
    fleet = _small(Case.MIX, 16)
    truth = truth_of(fleet)
    assert truth.primary_cause == "autoscaling_limits"
    assert truth.affected["gpu-h100-8gpu"] == "autoscaling_limits"
    (lean,) = await diagnose_run(fleet, tmp_path, ("arc-lean",), prometheus=prometheus_binary)
    first, second = lean.report.runner_types[:2]
    assert (first.name, first.queued, first.max_wait_seconds) == ("gpu-h100-8gpu", 51, None)
    # No wait of jobs started is read there now, so none is compared with its usual either.
    assert first.usual is not None and first.usual.max_wait_seconds is None
    assert second.usual is not None and second.usual.max_wait_seconds is not None
    assert (second.name, second.queued) == ("linux-x64-16cpu", 53)
    assert lean.named == "autoscaling_limits" and lean.located
    assert lean.confidence == "medium"


async def test_the_worst_of_three_types_without_runners_has_risen_beneath_its_queue(
    tmp_path: Path,
) -> None:
    # New runners fail on every type: two show it (busy runners falling, or no more than usual
    # while jobs wait); the worst, with 37 jobs waiting 38 minutes, holds 12 busy runners
    # above its usual 7, but 21 jobs waited an hour ago when at most 7 were busy at once: no
    # ceiling holds it (before, it was counted only by a call across the fleet). Each type is
    # read by its own numbers.
    fleet = _small(Case.OUTAGE, 10)
    truth = truth_of(fleet)
    assert truth.primary_cause == "infrastructure" and len(truth.affected) == 3
    for one in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert one.named == "infrastructure" and one.located, one.combination
        assert one.confidence == "low", one.combination
        found = finding(one.report, "infrastructure")
        assert set(found.runner_types) == set(truth.affected), one.combination
        (risen,) = [e for e in found.evidence if e.why.startswith("rose from 7 an hour before")]
        assert (risen.runner_type, risen.now) == ("linux-x64-2cpu", 12.0), one.combination
        assert not [e for e in found.evidence if e.measure == "runner types short of runners"]


async def test_three_queues_begun_together_one_without_runners_are_one_cause(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners fail on every type, three of three queueing within 11 minutes of each other.
    # One type shows it (busy runners 14 to 5 while 48 jobs wait); the worst, 108 jobs waiting
    # 76 minutes, holds 51 busy where 95 are usual (alone, a limit); the third holds 25 busy,
    # above its usual, where the last hour's demand keeps about 21, and its jobs started 13
    # times their usual wait: runners too slow to come. Three of three short of runners. On a
    # lean scrape the worst's peaks fell within the half hour, below its usual level (no
    # ceiling): it is told by its own numbers, runners not coming.
    end = datetime(2026, 11, 26, 10, 28, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=4, types=3, end=end))
    truth = truth_of(fleet)
    assert truth.primary_cause == "infrastructure" and len(truth.affected) == 3
    judged = await diagnose_run(fleet, tmp_path, ("jobs", "arc-lean"), prometheus=prometheus_binary)
    began = [s.since for s in judged[0].report.runner_types if s.affected and s.since]
    assert len(began) == 3 and max(began) - min(began) <= 11 * 60
    for one in judged:
        assert one.named == "infrastructure" and one.located, one.combination
        assert one.confidence == "low", one.combination
        found = finding(one.report, "infrastructure")
        assert set(found.runner_types) == set(truth.affected), one.combination
        first = found.evidence[0]
        if one.combination == "arc-lean":
            assert first.runner_type == "gpu-h100-8gpu"
            assert first.why.endswith(
                "runners are not coming (failing to start, register or take jobs?)"
            )
        else:
            assert "3 of the 3 types queueing" in first.why, one.combination
        (slow,) = [e for e in found.evidence if "no ceiling the work fills" in e.why]
        assert slow.runner_type == "gpu-h100-1gpu", one.combination


async def test_runners_offline_far_beyond_those_coming_online_are_failing(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners of a type mostly fail to start: 165 listed offline, 26 online, while busy
    # runners rose from 13 to 26 in half an hour and 51 jobs wait 20 minutes. A scale-up under
    # way brings about one runner per job waiting, online within minutes: this is a trickle
    # through a failure.
    fleet = _small(Case.FAILING_STARTS, 16)
    assert truth_of(fleet).primary_cause == "infrastructure"
    judged = await diagnose_run(
        fleet, tmp_path, ("jobs", "jobs+runners", "arc-lean"), prometheus=prometheus_binary
    )
    by = {one.combination: one for one in judged}
    listed = by["jobs+runners"]
    assert listed.named == "infrastructure" and listed.located
    offline = next(
        e
        for e in finding(listed.report, "infrastructure").evidence
        if e.measure == "runners offline"
    )
    assert offline.now == 165
    # Without the runners list: the jobs that started waited six times their usual 3.5 minutes
    # (the median on job events, the mean on a lean scrape) while busy runners rose above the
    # usual: runners slow to come.
    for combination in ("jobs", "arc-lean"):
        one = by[combination]
        assert one.named == "infrastructure" and one.located, combination
        assert one.confidence == "low", combination
        first = finding(one.report, "infrastructure").evidence[0]
        assert first.measure.endswith("wait of jobs started"), combination
        assert "runners come long after jobs ask for them" in first.why, combination


async def test_work_seen_leaving_another_type_explains_a_longer_job_time(
    tmp_path: Path,
) -> None:
    # At night a repository's `Ci` jobs move from an arm64 type (5.9 a minute there usually, none
    # now) onto a small x64 type, whose own repositories also run a workflow called `Ci`: jobs a
    # minute 2.5x, job time 2.8x. The type's own `Ci` jobs completed 1.4x slower over eleven
    # jobs, within a few jobs' spread; work seen leaving one type as it came to this one is the
    # job mix changing, not slower jobs.
    end = datetime(2026, 11, 26, 22, 28, tzinfo=UTC)
    fleet = run(plan(Case.MOVED_WORKFLOW, seed=4, types=3, end=end))
    assert truth_of(fleet).primary_cause == "increased_workload"
    (jobs,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    assert jobs.named == "increased_workload" and jobs.located
    slower = finding(jobs.report, "long_running_jobs")
    assert slower.verdict.value == "ruled_out"
    assert "globex-eng/service-api: Ci" in slower.evidence[0].why
    workload = finding(jobs.report, "increased_workload")
    moved = [e for e in workload.evidence if e.measure.endswith("(moved away?)")]
    assert [(e.runner_type, e.now) for e in moved] == [("linux-arm64-4cpu", 0.0)]


async def test_the_usual_queue_is_the_median_of_each_days_queue(tmp_path: Path) -> None:
    # gpu-a10g-1gpu queues every afternoon: at 17:10 on the seven days before, 1 to 95 jobs
    # waiting 5 minutes to 3.4 hours, the median day's queue 184 as the alert ranks them (the
    # longest wait in minutes plus the jobs). Its maximum lowered to 3 today: 64 jobs, the
    # longest 3.8 hours (290), beyond the usual. The median of the jobs (58) and the median of
    # the waits (2.5 hours), each from another day, made a usual queue of 207 that no day had,
    # and today's read as a usual one: no cause.
    end = datetime(2026, 11, 27, 17, 10, tzinfo=UTC)
    fleet = run(plan(Case.LOWERED_MAX, seed=10, types=3, end=end))
    assert truth_of(fleet).affected == {"gpu-a10g-1gpu": "autoscaling_limits"}
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    assert judged.named == "autoscaling_limits" and judged.located
    (state,) = [s for s in judged.report.runner_types if s.name == "gpu-a10g-1gpu"]
    assert state.usual is not None and (state.usual.queued, state.usual.max_wait_seconds) == (
        58,
        8931,
    )


async def test_busy_runners_held_at_one_number_while_a_queue_forms_are_a_ceiling(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # win-2022-16cpu's maximum was lowered to 63 (78 usually busy at this hour). The most runners
    # busy at once were 63 in each of the last three windows; 5 jobs waited a quarter of an hour
    # before, none half an hour before, 11 now (the longest 16 minutes) at usual demand and job
    # time. A queue that began within the half hour was too soon to tell a ceiling, and nothing
    # was found: no cause. Peaks held at one number exactly are a ceiling.
    end = datetime(2026, 11, 27, 11, 10, tzinfo=UTC)
    fleet = run(plan(Case.LOWERED_MAX, seed=10, types=6, end=end))
    assert truth_of(fleet).primary_cause == "autoscaling_limits"
    assert "win-2022-16cpu" in truth_of(fleet).affected
    combinations = ("jobs", "arc-lean")
    for judged in await diagnose_run(fleet, tmp_path, combinations, prometheus=prometheus_binary):
        assert judged.named == "autoscaling_limits" and judged.located, judged.combination
        assert judged.confidence == "medium", judged.combination
        limit = finding(judged.report, "autoscaling_limits")
        (peak,) = [e for e in limit.evidence if e.measure.startswith("most runners busy")]
        assert (peak.runner_type, peak.now, peak.why) == (
            "win-2022-16cpu",
            63,
            "63 half an hour before",
        )
