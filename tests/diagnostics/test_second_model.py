"""The checks on fleets of the second model (`fleetmodel`), read through real sources: the cases
the first simulator never produced, each asserted against what an on-call would find there."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from bot.domain.diagnosis import Finding
from bot.fleet.measures import Signal
from bot.fleet.reading import FleetSources, read_fleet
from bot.fleet.sources.job_events import running_peaks
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.prometheus import PrometheusClient
from bot.store import JobSpan
from fleetmodel import Case, FleetRun, plan, run, truth_of
from fleetmodel.arc import Shape
from testkit.fleet_reading import arc_prometheus, diagnose_run, finding

END = datetime(2026, 11, 24, 15, 10, tzinfo=UTC)


def _fleet(case: Case, seed: int) -> FleetRun:
    return run(plan(case, seed=seed, types=6, end=END))


async def test_a_lowered_maximum_is_the_autoscalers_limit_not_failing_runners(
    tmp_path: Path,
) -> None:
    # Busy runners held at the lowered maximum, far fewer than usual, jobs waiting for hours:
    # ephemeral runners come and go beneath the ceiling, so the instantaneous count wavers.
    fleet = _fleet(Case.LOWERED_MAX, 2)
    truth = truth_of(fleet)
    assert truth.primary_cause == "autoscaling_limits"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "autoscaling_limits", judged.combination
        assert judged.located, judged.combination
        infrastructure = next(
            f for f in judged.report.findings if f.cause.value == "infrastructure"
        )
        assert infrastructure.verdict.value != "likely", judged.combination


async def test_a_scale_up_under_way_is_no_incident(tmp_path: Path) -> None:
    fleet = _fleet(Case.SCALE_UP, 1)
    assert truth_of(fleet).primary_cause == "none"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "none", judged.combination
        assert judged.exact, judged.combination


async def test_cancelled_jobs_counted_with_a_run_time_from_year_one_are_no_job_time(
    tmp_path: Path,
    prometheus_binary: str,
) -> None:
    # ARC up to 0.14 records a job cancelled before a runner took it with an execution time of
    # about 6.4e10 s; a lean scrape has only `_sum`/`_count`, so a mean would take it in.
    fleet, end, kind = _with_a_cancellation_counted_late()
    ran = [
        j.completed - j.started
        for j in fleet.jobs
        if j.runner_type == kind
        and j.runner is not None
        and j.started is not None
        and j.completed is not None
        and end - 900 < j.completed <= end
    ]
    async with (
        arc_prometheus(fleet, Shape.LEAN, tmp_path, prometheus_binary, "0.14") as server,
        aiohttp.ClientSession() as http,
    ):
        signals = await read_fleet(
            FleetSources(prometheus=PrometheusClient(http, server.url)),
            datetime.fromtimestamp(end, UTC),
        )
    mean = signals.value(Signal.DURATION_MEAN, kind)
    # A mean of the jobs that ran (rate() weighs each series on its own): between the shortest
    # and the longest of them, nowhere near 6.4e10 s.
    assert ran and mean is not None
    assert min(ran) <= mean <= max(ran)


def _with_a_cancellation_counted_late() -> tuple[FleetRun, float, str]:
    """A fleet, a day's end and a runner type where a job cancelled before any runner took it
    completed in the last 9 minutes, on a series of ARC's that already counted one (a series'
    first sample holds no increase for rate() to see)."""
    for seed in range(1, 30):
        fleet = _fleet(Case.HEALTHY, seed)
        for end in fleet.episode_ends:
            seen: dict[tuple[str, str, str], float] = {}
            for job in sorted(
                (j for j in fleet.jobs if j.runner is None and j.conclusion == "cancelled"),
                key=lambda j: j.completed or 0,
            ):
                key = (job.runner_type, job.name, job.workflow.repository)
                if key in seen and end - 540 < (job.completed or 0) <= end - 60:
                    return fleet, end, job.runner_type
                seen.setdefault(key, job.completed or 0)
    raise AssertionError("no fleet cancels a job late enough")


def test_the_peak_of_jobs_running_holds_what_ran_at_once_within_the_window() -> None:
    def span(started: float, completed: float | None) -> JobSpan:
        return JobSpan("t", "o/r", "ci", started - 5, started, completed, started)

    spans = [
        span(0, 500),  # running when the window [400, 1000] opens, gone within it
        span(100, 300),  # over before the window
        span(420, 480),
        span(450, 900),
        span(600, None),  # still running
        span(950, 990),
        span(1200, 1300),  # after the window
    ]
    (peak,) = running_peaks(spans, JobsConfig(exclude=()), [1000.0], 600.0)
    # At 450: the first, the one from 420 and the one from 450; later never more than two.
    assert peak == {"t": 3.0}
    (early,) = running_peaks(spans, JobsConfig(exclude=()), [350.0], 600.0)
    assert early == {"t": 2.0}  # the first and, from 100 to 300, the second
    (late,) = running_peaks(spans, JobsConfig(exclude=()), [1400.0], 300.0)
    assert late == {"t": 2.0}  # the one still running and the one from 1200


@pytest.mark.parametrize("case", [Case.LOWERED_MAX, Case.SCALE_UP])
def test_the_model_runs_the_same_fleet_from_the_same_seed(case: Case) -> None:
    first, second = _fleet(case, 3), _fleet(case, 3)
    assert [(j.id, j.created, j.started, j.completed) for j in first.jobs] == [
        (j.id, j.created, j.started, j.completed) for j in second.jobs
    ]


def _at(case: Case, seed: int, hour: int, day: int = 24, types: int = 6) -> FleetRun:
    """A fleet of `types` runner types whose run ends at `hour`:(7 * seed) on `day` November
    2026."""
    end = datetime(2026, 11, day, hour, 7 * seed, tzinfo=UTC)
    return run(plan(case, seed=seed, types=types, end=end))


async def test_a_workflow_moved_in_is_more_work_even_at_a_ceiling(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # The receiving type runs at its ceiling with twice its usual arrivals: 12 jobs in ten
    # minutes where 6 are usual is chance, 66 in an hour where 30 are usual is not. ARC counts
    # no arrival: over the hour, the jobs started plus the queue's growth are the arrivals.
    fleet = _at(Case.MOVED_WORKFLOW, 1, 10)
    truth = truth_of(fleet)
    assert truth.primary_cause == "increased_workload"
    for judged in await diagnose_run(
        fleet, tmp_path, ("jobs", "arc"), prometheus=prometheus_binary
    ):
        assert judged.named == "increased_workload" and judged.located, judged.combination
        workload = next(f for f in judged.report.findings if f.cause.value == "increased_workload")
        hour = next(e for e in workload.evidence if e.measure.endswith("last hour"))
        assert hour.now is not None and hour.baseline is not None
        assert hour.now >= 2 * hour.baseline, judged.combination
        # Where the jobs came from: the type the workflow left (on ARC, the jobs it starts).
        (moved,) = [e for e in workload.evidence if "moved away" in e.measure]
        assert moved.runner_type in fleet.plan.troubles, judged.combination
        assert moved.now == 0, judged.combination


async def test_slow_jobs_at_a_ceiling_are_long_running_jobs_not_the_limit(
    tmp_path: Path,
) -> None:
    # Jobs 2.6x slower for three hours: the few completing in ten minutes tell little, but
    # runners busy over jobs started a minute (Little's law) say each job holds its runner
    # 2.7x as long as usual.
    fleet = _at(Case.SLOW_JOBS, 1, 16, day=25)
    assert truth_of(fleet).primary_cause == "long_running_jobs"
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    assert judged.named == "long_running_jobs" and judged.located
    found = next(f for f in judged.report.findings if f.cause.value == "long_running_jobs")
    (held,) = [e for e in found.evidence if e.measure.startswith("time a job holds a runner")]
    assert held.now is not None and held.baseline is not None
    assert held.now >= 1.5 * held.baseline


async def test_a_queue_as_long_as_every_day_at_this_hour_is_no_incident(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # The type has queued hundreds of jobs at this hour every day: on ARC's metrics too, the
    # queue now against the usual one says there is nothing new to diagnose.
    fleet = _at(Case.LOWERED_MAX, 1, 10, day=25)
    assert truth_of(fleet).primary_cause == "none"
    for judged in await diagnose_run(
        fleet, tmp_path, ("jobs", "arc"), prometheus=prometheus_binary
    ):
        assert judged.named == "none", judged.combination
        report = judged.report
        assert not report.affected, judged.combination
        assert any("as usual at this time" in note for note in report.notes), judged.combination


async def test_runners_not_coming_at_night_are_named_by_elimination_with_low_confidence(
    tmp_path: Path,
) -> None:
    # Nine in ten new runners never start, at night: job events see no runner, only 15 jobs
    # waiting 40 minutes at the usual demand and job time, none held at a ceiling, and 9 jobs
    # started in the last hour where 21 arrived.
    fleet = _at(Case.FAILING_STARTS, 1, 22, day=25)
    assert truth_of(fleet).primary_cause == "infrastructure"
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    assert judged.named == "infrastructure" and judged.located
    assert judged.confidence == "low"
    found = next(f for f in judged.report.findings if f.cause.value == "infrastructure")
    assert "runners are not coming" in (found.evidence[0].why or "")
    assert found.evidence[0].measure == "jobs started per minute, last hour"


async def test_a_big_type_queueing_behind_one_slowed_workflow_is_long_running_jobs(
    tmp_path: Path,
) -> None:
    # 14 jobs waiting over 5 minutes behind 150 busy runners: the alert's own count, not
    # runners still starting (that allowance is for counts of every job not yet running). One
    # workflow of three runs about twice its usual time: the type's p90 rose 1.55x over only
    # 45 jobs completed, but each job holds its runner 1.4x as long as usual too: the two
    # measures agree, and the workflow is named.
    fleet = _at(Case.MIX, 1, 16, day=25)
    truth = truth_of(fleet)
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    affected = {state.name for state in judged.report.affected}
    assert set(truth.affected) <= affected and truth.affected
    assert truth.primary_cause == "long_running_jobs"
    assert judged.named == "long_running_jobs" and judged.located
    found = next(f for f in judged.report.findings if f.cause.value == "long_running_jobs")
    assert found.evidence[0].workflows == ("E2E",)
    (held,) = [e for e in found.evidence if e.measure.startswith("time a job holds a runner")]
    assert held.now is not None and held.baseline is not None
    assert held.now >= 1.3 * held.baseline


async def test_offline_runners_replacing_those_at_a_ceiling_are_no_failure(
    tmp_path: Path,
) -> None:
    # At night a lowered maximum of 13 holds: each runner whose job ended is replaced by one
    # GitHub lists offline while its pod starts, 7 of the 13 listed. Busy runners waver
    # (11, 9, 6) beneath a ceiling their peaks hold (12, 10, 10).
    fleet = _at(Case.LOWERED_MAX, 1, 3, day=25)
    assert truth_of(fleet).primary_cause == "autoscaling_limits"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "autoscaling_limits" and judged.located, judged.combination
        infrastructure = next(
            f for f in judged.report.findings if f.cause.value == "infrastructure"
        )
        assert infrastructure.verdict.value == "ruled_out", judged.combination
    offline = next(e for e in infrastructure.evidence if e.measure == "runners offline")
    assert offline.now == 7
    assert "replacing those whose jobs ended" in offline.why


def test_every_day_of_history_is_as_long_as_today() -> None:
    # A type held at its maximum every evening queues the longer it has been held: a shorter
    # history on the usual days would make their queue smaller than today's by construction.
    # Jobs slowed an hour and a half ago have not ended yet, and the queue is as usual.
    fleet = _at(Case.SLOW_JOBS, 1, 3, day=26)
    starts = [end - fleet.plan.episode_hours * 3600.0 for end in fleet.episode_ends]
    first = [
        min(j.created for j in fleet.jobs if s <= j.created < e)
        for s, e in zip(starts, fleet.episode_ends, strict=True)
    ]
    assert all(f - s < 600.0 for f, s in zip(first, starts, strict=True))
    truth = truth_of(fleet)
    assert truth.primary_cause == "none"
    assert truth.queues["gpu-h100-8gpu"].queued > 1000


async def test_a_workflow_new_to_a_type_at_its_ceiling_is_more_work(tmp_path: Path) -> None:
    # A workflow moved in: its jobs take longer than the type's own (p90 2h11m where 54m is
    # usual), but the workflows that ran here before are no slower, so the job mix changed,
    # not the jobs. Its jobs are new to the type while demand is 1.4x usual over the hour.
    fleet = _at(Case.MOVED_WORKFLOW, 1, 1, day=25)
    assert truth_of(fleet).primary_cause == "increased_workload"
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    assert judged.named == "increased_workload" and judged.located
    assert judged.confidence == "medium"
    found = {f.cause.value: f for f in judged.report.findings}
    slower = found["long_running_jobs"]
    assert slower.verdict.value == "ruled_out"
    assert "workflows new to this type (E2E)" in slower.evidence[0].why
    new = found["increased_workload"].evidence[0]
    assert new.measure == "jobs a minute from workflows new to this type"
    assert new.workflows == ("E2E",)
    assert new.now is not None and new.now > 0 and new.baseline == 0


async def test_a_queue_far_beyond_the_usual_at_the_usual_ceiling_is_more_work(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # The type queues at its ceiling every evening (142 jobs, 21 minutes). Busy runners hold
    # at the usual level (109, usual 103) and jobs take their usual time, yet 497 wait up to
    # 55 minutes: the extra jobs came over the hours before, too few a minute to tell from
    # chance (10.2 a minute over the hour against 9.3). ARC's metrics tell it by elimination
    # (low confidence). Job events see whose jobs hold the runners: service-api's, which
    # usually hold none of this type's, hold 59 of them (work moved here, medium confidence).
    fleet = _at(Case.MOVED_WORKFLOW, 1, 0, day=26)
    assert truth_of(fleet).primary_cause == "increased_workload"
    jobs, lean = await diagnose_run(
        fleet, tmp_path, ("jobs", "arc-lean"), prometheus=prometheus_binary
    )
    assert lean.named == "increased_workload" and lean.located
    assert lean.confidence == "low"
    beyond = finding(lean.report, "increased_workload").evidence[0]
    assert beyond.measure == "jobs waiting at the usual ceiling"
    assert beyond.now is not None and beyond.baseline is not None
    assert beyond.now >= 2 * beyond.baseline
    assert jobs.named == "increased_workload" and jobs.located
    assert jobs.confidence == "medium"
    held = finding(jobs.report, "increased_workload").evidence[0]
    assert held.measure == "runners held by jobs of repositories new to this type"
    assert (held.repository, held.now, held.baseline) == ("acme-corp/service-api", 59, 0)


async def _failing_across_the_fleet(fleet: FleetRun, types: int, tmp_path: Path) -> Finding:
    """The infrastructure finding of an outage on `types` types, read from job events: every
    type queueing named under it, at low confidence."""
    truth = truth_of(fleet)
    assert truth.primary_cause == "infrastructure" and len(truth.affected) == types
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    assert judged.named == "infrastructure" and judged.located
    assert judged.confidence == "low"
    found = next(f for f in judged.report.findings if f.cause.value == "infrastructure")
    assert set(found.runner_types) == set(truth.affected)
    return found


async def test_runners_failing_on_most_types_queueing_count_the_worst_one_with_them(
    tmp_path: Path,
) -> None:
    # New runners fail on every type: four of the five types queueing show runners not
    # coming; the worst one, where a workflow had moved in before the outage, shows only a
    # ceiling filled above the usual. One cause across the fleet is likelier than its own.
    found = await _failing_across_the_fleet(_at(Case.OUTAGE, 1, 16, day=26), 5, tmp_path)
    assert found.evidence[0].measure == "runner types short of runners"


async def test_types_held_below_their_usual_level_fallen_over_the_hour_are_runners_failing(
    tmp_path: Path,
) -> None:
    # Nine in ten new machines never boot on every type (a VM fleet: nothing registers). Read
    # from job events, two types hold busy runners at a level below their usual over the half
    # hour (13 and 14 at once), which alone reads as a lowered maximum; an hour before 19 and
    # 27 were busy at once. Fallen over the hour while jobs waited, they are runners going and
    # not coming back, each on its own evidence: every type is named with runners failing.
    found = await _failing_across_the_fleet(_at(Case.OUTAGE, 2, 3, day=26), 6, tmp_path)
    for name in ("linux-arm64-4cpu", "linux-x64-2cpu"):
        (own,) = [e for e in found.evidence if e.runner_type == name]
        assert "runners are not coming" in own.why, name


async def test_few_runners_busy_are_no_slowdown_and_runners_not_turning_over_no_ceiling(
    tmp_path: Path,
) -> None:
    # Nine in ten new machines never boot and never register (a VM fleet): 4 or 5 runners busy
    # for half an hour where 25 are usual, 39 jobs waiting 87 minutes, one job completing in
    # ten minutes after 1h48m. Slower jobs keep more runners busy, not fewer. Held at one
    # level reads as a lowered maximum, but runners at a ceiling take a new job as each one
    # ends (five runners of 30-minute jobs start about ten an hour); these started three. Jobs
    # left running hold them, and new runners do not come: not certain, but no ceiling.
    fleet = _at(Case.FAILING_STARTS, 1, 16, day=26)
    assert fleet.plan.kind == "vm"
    assert truth_of(fleet).primary_cause == "infrastructure"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        found = {f.cause.value: f for f in judged.report.findings}
        slower = found["long_running_jobs"]
        assert slower.verdict.value == "ruled_out", judged.combination
        assert "slower jobs would keep more runners busy" in slower.evidence[0].why
        assert judged.named == "infrastructure" and judged.located, judged.combination
        assert judged.confidence == "medium", judged.combination
        stalled = found["infrastructure"].evidence[0]
        assert stalled.measure == "jobs started per minute, last hour"
        assert "new ones do not come" in stalled.why
        limits = found["autoscaling_limits"]
        assert limits.verdict.value == "ruled_out", judged.combination
        # Held for half an hour, but 13 were busy at once an hour before: fallen, no ceiling.
        assert limits.evidence[0].why.startswith("fallen from 13 at once an hour before")


async def test_a_level_risen_beneath_a_standing_queue_is_no_ceiling_nor_a_certainty(
    tmp_path: Path,
) -> None:
    # Six in seven new machines of a small type never boot (three types, at night): busy
    # runners at 5-6 where 4 are usual, 16 jobs waiting 28 minutes. Job events show no idle,
    # offline or failing runner; but 8 jobs waited an hour ago too, when at most 3 runners were
    # busy at once, and now 6 are: a ceiling would have stopped them rising. Runners failing,
    # told by elimination: low confidence, the ceiling ruled out.
    fleet = _at(Case.FAILING_STARTS, 1, 3, day=26, types=3)
    assert truth_of(fleet).primary_cause == "infrastructure"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        assert judged.confidence == "low", judged.combination
        limits = next(f for f in judged.report.findings if f.cause.value == "autoscaling_limits")
        assert limits.verdict.value == "ruled_out", judged.combination


async def test_a_ceiling_at_the_busy_reading_but_below_the_usual_load_is_a_limit(
    tmp_path: Path,
) -> None:
    # A small type's maximum lowered to 2 at night: 34 jobs wait 87 minutes. Two runners are
    # what was busy at this minute on the usual days, but the usual demand (0.45 jobs a minute
    # of 8 minutes each) keeps 3.5 busy on average: a ceiling of 2 is full at the usual demand,
    # not one the usual demand fitted beneath. A limit, not runners failing to come.
    fleet = _at(Case.LOWERED_MAX, 1, 3, day=26, types=3)
    assert truth_of(fleet).primary_cause == "autoscaling_limits"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "autoscaling_limits" and judged.located, judged.combination
        assert judged.confidence == "medium", judged.combination
        infrastructure = next(
            f for f in judged.report.findings if f.cause.value == "infrastructure"
        )
        assert infrastructure.verdict.value == "ruled_out", judged.combination


async def test_runners_that_come_long_after_their_jobs_are_slow_to_come(tmp_path: Path) -> None:
    # New runners of a type take twelve times their usual start (three types, late evening):
    # busy runners rise from 9 to 18 in half an hour, above the usual 14, while 27 jobs wait
    # up to 29 minutes at the usual demand and job time. The jobs that started waited 28
    # minutes where one is usual: runners come, long after the jobs asked for them.
    fleet = _at(Case.FAILING_STARTS, 1, 22, day=26, types=3)
    assert truth_of(fleet).primary_cause == "infrastructure"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        assert judged.confidence == "low", judged.combination
        found = next(f for f in judged.report.findings if f.cause.value == "infrastructure")
        assert found.evidence[0].measure == "median wait of jobs started"
        assert (found.evidence[0].now, found.evidence[0].baseline) == (1699.0, 60.0)
        assert "runners come long after jobs ask for them" in found.evidence[0].why


def test_each_days_runners_end_with_that_day() -> None:
    # Every day of history is an episode of its own: the runners an earlier day kept (its
    # minimum, idle) are gone by the end of it, not listed online today.
    fleet = _at(Case.MOVED_WORKFLOW, 1, 3, day=26)
    last_start = fleet.plan.end - fleet.plan.episode_hours * 3600.0
    earlier = [r for r in fleet.runners if r.created < last_start - 3600.0]
    assert earlier
    assert all(r.gone is not None and r.gone <= last_start for r in earlier)


async def test_busy_runners_held_at_the_usual_level_are_runners_slow_to_come_not_a_limit(
    tmp_path: Path,
) -> None:
    # New runners take many times their usual start: busy runners hold at about the usual 43
    # while 50 jobs wait an hour at the usual demand and job time. The usual demand fitted
    # beneath that level every day without a queue: no maximum explains it.
    fleet = _at(Case.FAILING_STARTS, 1, 10, day=26)
    assert truth_of(fleet).primary_cause == "infrastructure"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        assert judged.confidence == "low", judged.combination
        found = next(f for f in judged.report.findings if f.cause.value == "infrastructure")
        assert "runners are not coming" in found.evidence[0].why, judged.combination


async def test_runners_online_that_take_no_job_are_infrastructure(tmp_path: Path) -> None:
    # New runners register and never take a job: 132 online, all idle, none busy where 20 are
    # usual, while 572 jobs wait nearly three hours. Job events alone see no runner
    # working since half an hour and more; the runners list sees them idle.
    fleet = _at(Case.BROKEN_RUNNERS, 1, 10, day=26)
    assert truth_of(fleet).primary_cause == "infrastructure"
    for judged in await diagnose_run(fleet, tmp_path, ("jobs", "jobs+runners")):
        assert judged.named == "infrastructure" and judged.located, judged.combination
    found = next(f for f in judged.report.findings if f.cause.value == "infrastructure")
    idle = found.evidence[0]
    assert idle.measure == "idle runners" and idle.now == 132
    assert "runners that take no job" in idle.why
