"""The checks on fleets of the second model read through ARC's metrics alone (full and lean
scrapes backfilled into a real Prometheus): what a count of every job not yet running, and the
absence of a longest wait, ask of them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fleetmodel import Case, FleetRun, plan, run, truth_of
from testkit.fleet_reading import diagnose_run, finding


def _at(case: Case, seed: int, hour: int, day: int, types: int = 6) -> FleetRun:
    """A fleet of `types` runner types whose run ends at `hour`:(7 * seed) on `day` November
    2026."""
    end = datetime(2026, 11, day, hour, 7 * seed, tzinfo=UTC)
    return run(plan(case, seed=seed, types=types, end=end))


async def test_jobs_not_yet_running_that_started_within_minutes_are_no_queue(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A lean ARC scrape counts every job not yet running: 7 on a type with 15 busy at night,
    # where the jobs that started lately waited under 5 minutes, are jobs just arrived.
    fleet = _at(Case.SCALE_UP, 1, 3, day=25)
    assert truth_of(fleet).primary_cause == "none"
    (judged,) = await diagnose_run(fleet, tmp_path, ("arc-lean",), prometheus=prometheus_binary)
    assert judged.named == "none"
    assert not judged.report.affected
    shown = {state.name: state for state in judged.report.runner_types}
    assert max(state.queued or 0.0 for state in shown.values()) >= 7


async def test_slow_jobs_at_a_maximum_are_told_by_the_time_each_job_holds_a_runner(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A scale set at its maximum of 32 with busy runners as usual (it is near it every evening):
    # jobs 1.4x slower on the mean, and each holding its runner longer, since the same runners
    # take fewer jobs an hour. Not runners failing to come, on either ARC shape.
    fleet = _at(Case.MIX, 1, 22, day=25)
    assert truth_of(fleet).primary_cause == "long_running_jobs"
    for judged in await diagnose_run(
        fleet, tmp_path, ("arc", "arc-lean"), prometheus=prometheus_binary
    ):
        assert judged.named == "long_running_jobs" and judged.located, judged.combination
        found = finding(judged.report, "long_running_jobs")
        (held,) = [e for e in found.evidence if e.measure.startswith("time a job holds")]
        assert held.now is not None and held.baseline is not None
        assert held.now >= 1.5 * held.baseline, judged.combination


async def test_a_queue_waiting_as_long_as_usual_on_arc_is_no_incident(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # 142 jobs not yet running where 101 are usual at this hour: more jobs, but the jobs that
    # started waited about as long as they usually do, nearly three hours (ARC has no longest
    # wait: the queue time of the jobs started stands for it, now and on the usual days).
    fleet = _at(Case.TOO_SMALL, 1, 10, day=25)
    assert truth_of(fleet).primary_cause == "none"
    (judged,) = await diagnose_run(fleet, tmp_path, ("arc",), prometheus=prometheus_binary)
    assert judged.named == "none"
    (note,) = [n for n in judged.report.notes if "as usual at this time" in n]
    assert note == (
        "win-2022-8cpu: 142 queued now, as usual at this time (101 queued (2h47m)):"
        " not an incident."
    )


async def test_a_nightly_queue_of_an_hour_or_more_is_the_usual_on_arc(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A scale set at its maximum of 14 every night while release jobs run: 17 jobs not yet
    # running where 32 are usual at this hour. The jobs started lately waited under an hour
    # at p90; on most nights their p90 is in ARC's last bucket ("an hour or more"), which
    # counts as an hour in the usual, not as a night left out. Dropping those nights left one
    # quiet night's 2 seconds as the usual wait, and longer release jobs read as long-running
    # jobs with high confidence on a fleet as it is every night.
    fleet = _at(Case.SLOW_JOBS, 6, 22, day=27)
    assert truth_of(fleet).primary_cause == "none"
    (judged,) = await diagnose_run(
        fleet, tmp_path, ("arc",), prometheus=prometheus_binary, arc_version="latest"
    )
    assert judged.named == "none" and not judged.confidence
    (state,) = [s for s in judged.report.runner_types if s.name == "linux-x64-8cpu"]
    assert state.queueing and not state.affected
    assert state.usual is not None and state.usual.max_wait_seconds == 3600.0


async def test_a_queue_formed_just_now_behind_runners_as_quick_as_usual_is_no_failure(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # Demand on a GPU scale set nearly tripled nine minutes ago: 16 jobs not yet running where
    # 1 and 3 were a quarter and half an hour before, desired 65 above 49 registered, busy
    # runners about their usual. The jobs that started waited their usual six minutes: the
    # runners come as quickly as ever, so none are failing to come, on either ARC shape.
    fleet = _at(Case.SCALE_UP, 2, 3, day=26)
    assert truth_of(fleet).primary_cause == "none"
    for judged in await diagnose_run(
        fleet, tmp_path, ("arc", "arc-lean"), prometheus=prometheus_binary
    ):
        assert judged.named == "none", judged.combination
        assert finding(judged.report, "infrastructure").verdict.value != "likely"


async def test_runners_starting_at_the_maximum_are_turnover_not_failing_starts(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A nightly workflow moved onto a GPU scale set of three types: 975 jobs waiting behind its
    # maximum of 48. Each runner takes one ten-minute job and its replacement starts cold, so a
    # third of those desired are always starting (32 registered). That is turnover at the
    # maximum, not runners failing; the cause is the work moved in.
    end = datetime(2026, 11, 26, 3, 7, tzinfo=UTC)
    fleet = run(plan(Case.MOVED_WORKFLOW, seed=1, types=3, end=end))
    assert truth_of(fleet).primary_cause == "increased_workload"
    (judged,) = await diagnose_run(fleet, tmp_path, ("arc",), prometheus=prometheus_binary)
    assert judged.named == "increased_workload" and judged.located
    (state,) = [s for s in judged.report.runner_types if s.affected]
    assert state.at_max and (state.desired or 0.0) - (state.registered or 0.0) >= 10
    assert finding(judged.report, "infrastructure").verdict.value != "likely"


async def test_runners_slow_to_come_on_arc_are_told_by_the_mean_wait(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners take twelve times their usual start: busy runners rise from 9 to 18 while
    # about 30 jobs wait. ARC's lean scrape has no percentile of the wait: the mean of the jobs
    # that started, 28 minutes where a minute and a half is usual, tells the runners are slow.
    fleet = _at(Case.FAILING_STARTS, 1, 22, day=26, types=3)
    assert truth_of(fleet).primary_cause == "infrastructure"
    for judged in await diagnose_run(
        fleet, tmp_path, ("arc", "arc-lean"), prometheus=prometheus_binary
    ):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        assert judged.confidence == "low", judged.combination
        found = finding(judged.report, "infrastructure").evidence[0]
        assert "wait of jobs started" in found.measure, judged.combination
        assert "runners come long after jobs ask for them" in found.why


async def test_a_queue_drained_since_the_jobs_that_started_lately_is_no_incident(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # Jobs of one workflow take 3.8x longer on a scale set at its maximum of 30. The jobs that
    # started in the last ten minutes waited 16 minutes on the mean, but the queue has drained
    # since: 4 jobs wait, the longest under 9 minutes, no incident. ARC measures no current
    # wait, but every job not yet running 10 minutes ago has started since, and fewer than 5
    # of those 5 minutes ago still wait: nothing queues as the alert counts, on either shape.
    fleet = _at(Case.SLOW_JOBS, 1, 22, day=26)
    assert truth_of(fleet).primary_cause == "none"
    for judged in await diagnose_run(
        fleet, tmp_path, ("arc", "arc-lean"), prometheus=prometheus_binary
    ):
        shown = {state.name: state for state in judged.report.runner_types}
        drained = shown["linux-arm64-16cpu"]
        assert (drained.queued or 0) >= 5, judged.combination
        assert not drained.queueing and not drained.affected, judged.combination
        assert judged.named == "none", judged.combination


async def test_runners_too_small_are_resource_constraints_on_both_shapes(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A scale set's pods too small for its jobs: OOM-killed and CPU-throttled, 47% of jobs
    # failing where 3% are usual, and the jobs left take longer. Slower jobs and a full scale
    # set follow from it: the runners' own signature names the cause, on either ARC shape.
    fleet = _at(Case.TOO_SMALL, 1, 10, day=26, types=3)
    truth = truth_of(fleet)
    assert truth.primary_cause == "resource_constraints"
    for judged in await diagnose_run(
        fleet, tmp_path, ("arc", "arc-lean"), prometheus=prometheus_binary
    ):
        assert judged.named == "resource_constraints" and judged.located, judged.combination
        assert judged.confidence == "high", judged.combination
        found = {e.measure: e for e in finding(judged.report, "resource_constraints").evidence}
        failing = found["jobs failing"]
        assert failing.now is not None and failing.baseline is not None
        assert failing.now > 10 * failing.baseline, judged.combination
        if judged.combination == "arc":
            assert (found["OOM kills"].now or 0.0) > 0
            assert (found["CPU throttled"].now or 0.0) > 0.5


async def test_a_nightly_batch_queue_waiting_three_times_its_usual_is_an_incident(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A GPU scale set at its maximum of 36 every night, when a batch leaves about 28 jobs not
    # yet running for five minutes. Tonight its jobs run twice as long: 35 jobs not yet
    # running, a count the batch alone nearly makes, but the jobs that started waited 14
    # minutes where under 5 are usual. That is a queue beyond the usual (15 jobs waiting over
    # 5 minutes, the longest 16, by GitHub's events), on either ARC shape.
    fleet = _at(Case.MIX, 1, 22, day=26)
    truth = truth_of(fleet)
    assert truth.primary_cause == "long_running_jobs"
    assert truth.affected["gpu-h100-8gpu"] == "long_running_jobs"
    for judged in await diagnose_run(
        fleet, tmp_path, ("arc", "arc-lean"), prometheus=prometheus_binary
    ):
        shown = {state.name: state for state in judged.report.runner_types}
        gpu = shown["gpu-h100-8gpu"]
        assert gpu.affected, judged.combination
        assert gpu.usual is not None and (gpu.usual.queued or 0.0) >= 0.75 * (gpu.queued or 0.0)
        assert judged.named == "long_running_jobs" and judged.located, judged.combination
        assert not any("gpu-h100-8gpu" in n and "as usual" in n for n in judged.report.notes)


async def test_jobs_waiting_on_runners_the_autoscaler_is_adding_are_a_scale_up(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A GPU scale set with no maximum asked for 305 runners where it had 201 half an hour ago;
    # registered runners rose from 177 to 225 and 80 are pending, one for each of the 80 jobs
    # not yet running. Those that started lately waited 6 minutes, as usual: the count is three
    # times the usual 24, but it is a scale-up under way, not a queue. A lean scrape has no
    # runner counts: the jobs running rose as much.
    fleet = _at(Case.SCALE_UP, 3, 16, day=26, types=3)
    assert truth_of(fleet).primary_cause == "none"
    full, lean = await diagnose_run(
        fleet, tmp_path, ("arc", "arc-lean"), prometheus=prometheus_binary
    )
    for judged in (full, lean):
        assert judged.named == "none", judged.combination
        assert not judged.report.affected, judged.combination
        state = next(s for s in judged.report.runner_types if s.name == "gpu-a10g-4gpu")
        assert state.queued == 80 and state.usual is not None and state.usual.queued == 24
    state = next(s for s in full.report.runner_types if s.name == "gpu-a10g-4gpu")
    assert (state.registered, state.desired) == (225, 305)
    (note,) = [n for n in full.report.notes if n.startswith("gpu-a10g-4gpu")]
    assert "80 jobs not yet running, the autoscaler adding runners for them" in note
    assert "(desired 305, registered 225 from 177 half an hour before)" in note
    assert note.endswith("a scale-up under way, not an incident.")
    (note,) = [n for n in lean.report.notes if n.startswith("gpu-a10g-4gpu")]
    assert "runners coming for them (jobs running rose from 175 to 225 in half an hour)" in note


async def test_a_maximum_asked_for_that_never_registers_is_runners_not_coming(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners of a scale set fail to start: it asks for its maximum of 135, and 12 are
    # registered (7 half an hour before) with 124 pending, while 130 jobs are not yet running.
    # The autoscaler's maximum is asked for, but it is not what holds the queue: a limit is
    # runners held at a ceiling, and these never came.
    fleet = _at(Case.FAILING_STARTS, 3, 22, day=26, types=3)
    assert truth_of(fleet).primary_cause == "infrastructure"
    (judged,) = await diagnose_run(fleet, tmp_path, ("arc",), prometheus=prometheus_binary)
    assert judged.named == "infrastructure" and judged.located
    limits = finding(judged.report, "autoscaling_limits")
    assert limits.verdict.value == "ruled_out"
    assert "12 of the 135 runners asked for registered" in limits.evidence[0].why
    registered = finding(judged.report, "infrastructure").evidence[0]
    assert registered.measure == "registered runners"
    assert registered.why == (
        "12 of the 135 asked for, 7 in the half hour before: runners are not coming up"
    )


async def test_a_daily_queue_a_little_larger_is_no_certainty(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A Windows scale set at its maximum of 47 queues every morning: 212 jobs not yet running,
    # waiting over an hour. Today 369 wait about as long, 1.5 times the usual queue: beyond it,
    # but what an on-call finds in the job events (359 waiting 83 minutes, 211 usual) sits at
    # the edge of the usual. Whatever is named there is not named with high confidence.
    fleet = _at(Case.MIX, 4, 10, day=26)
    assert truth_of(fleet).primary_cause == "none"
    for judged in await diagnose_run(
        fleet, tmp_path, ("arc", "arc-lean"), prometheus=prometheus_binary
    ):
        first = judged.report.runner_types[0]
        assert first.name == "win-2022-16cpu" and first.affected, judged.combination
        assert first.usual is not None and first.usual.queued == 212, judged.combination
        assert judged.named != "none", judged.combination
        assert judged.confidence in ("low", "medium"), judged.combination


async def test_runners_catching_up_on_a_queue_are_no_more_demand(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # An outage ends on linux-arm64-4cpu: busy runners rise from 41 to 126 in half an hour and
    # start the jobs that waited, 182 still waiting. ARC counts no job arriving; jobs started
    # while the queue shrinks are jobs that arrived before, and over the hour arrivals are as
    # usual. Before, the queue's shrinking was left out: jobs started alone read as 5.4 times
    # the usual demand, and the outage as more work, at high confidence.
    fleet = _at(Case.OUTAGE, 6, 16, day=27)
    assert truth_of(fleet).primary_cause == "infrastructure"
    (judged,) = await diagnose_run(fleet, tmp_path, ("arc-lean",), prometheus=prometheus_binary)
    assert judged.named == "infrastructure" and judged.located
    workload = finding(judged.report, "increased_workload")
    assert workload.verdict.value == "ruled_out"
    asked = next(e for e in workload.evidence if e.runner_type == "linux-arm64-4cpu")
    assert asked.measure == "jobs per minute (started, and the queue's growth)"
    assert asked.now is not None and asked.baseline is not None and asked.now < asked.baseline


async def test_a_queue_most_of_which_arrived_this_quarter_hour_is_no_certainty(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # linux-arm64-8cpu took over a nightly workflow from gpu-h100-8gpu, and its batch fired
    # minutes ago: 81 jobs not yet running where 8 were a quarter of an hour before, of which
    # only 3 have waited past 5 minutes (the longest 6): nothing waits beyond the usual yet.
    # The jobs that started lately waited 12 minutes, in the smaller queue before the batch.
    # Before: more work, high confidence, on a fleet an on-call would find healthy.
    end = datetime(2026, 11, 27, 11, 3, tzinfo=UTC)
    fleet = run(plan(Case.MOVED_WORKFLOW, seed=9, types=3, end=end))
    assert truth_of(fleet).primary_cause == "none"
    for judged in await diagnose_run(
        fleet, tmp_path, ("arc", "arc-lean"), prometheus=prometheus_binary
    ):
        shown = {state.name: state.queued for state in judged.report.runner_types}
        assert shown["linux-arm64-8cpu"] == 81, judged.combination
        assert judged.confidence != "high", judged.combination


async def test_busy_runners_short_of_usual_on_a_lean_scrape_are_no_certain_failure(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # gpu-h100-1gpu's maximum was lowered to 79, where 112 are usually busy at this hour; its
    # GPU runners are slow to start, so beneath the maximum 62 to 75 are busy over the half
    # hour, at no one level, and 135 jobs wait. A lean scrape counts no runner (registered,
    # idle, offline or failed): fewer busy than usual and wavering is what both a ceiling
    # turning over slowly and runners failing show. Before: infrastructure, high confidence.
    end = datetime(2026, 11, 27, 11, 3, tzinfo=UTC)
    fleet = run(plan(Case.LOWERED_MAX, seed=9, types=3, end=end))
    assert truth_of(fleet).affected == {"gpu-h100-1gpu": "autoscaling_limits"}
    lean, full = await diagnose_run(
        fleet, tmp_path, ("arc-lean", "arc"), prometheus=prometheus_binary
    )
    assert lean.named in ("infrastructure", "autoscaling_limits")
    assert lean.confidence == "medium"
    # The full scrape has the maximum: the ceiling, unambiguous.
    assert (full.named, full.confidence, full.located) == ("autoscaling_limits", "high", True)


async def test_a_maximum_reached_with_more_jobs_arriving_than_usual_is_no_certain_limit(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # A pull-request workflow moved onto gpu-h100-1gpu: the scale set asks for its maximum (55),
    # 47 jobs wait, and over the hour jobs arrived 1.8 times as often as usual (1.02 a minute,
    # 0.57 usual), too few more to tell from chance. A maximum is the cause only at the usual
    # demand, and this demand is not shown usual. Before: autoscaling limits, high confidence.
    end = datetime(2026, 11, 27, 4, 10, tzinfo=UTC)
    fleet = run(plan(Case.MOVED_WORKFLOW, seed=10, types=6, end=end))
    assert truth_of(fleet).affected == {"gpu-h100-1gpu": "increased_workload"}
    (judged,) = await diagnose_run(fleet, tmp_path, ("arc",), prometheus=prometheus_binary)
    limit = finding(judged.report, "autoscaling_limits")
    assert (limit.verdict.value, limit.runner_types) == ("likely", ("gpu-h100-1gpu",))
    workload = finding(judged.report, "increased_workload")
    (hour,) = [e for e in workload.evidence if e.measure.endswith("last hour")]
    assert hour.now is not None and hour.baseline is not None
    assert hour.now >= 1.5 * hour.baseline
    assert judged.confidence != "high"
