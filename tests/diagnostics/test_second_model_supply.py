"""The checks on fleets of the second model where new runners of one type mostly never start:
what the busy runners left do while jobs wait tells it from more work and from a ceiling."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from fleetmodel import Case, FleetRun, plan, run, truth_of
from testkit.fleet_reading import diagnose_run, finding


def _failing_starts(hour: int, types: int = 6) -> FleetRun:
    """`types` runner types, seed 3, the run ending at `hour`:21 on 26 November 2026."""
    end = datetime(2026, 11, 26, hour, 21, tzinfo=UTC)
    return run(plan(Case.FAILING_STARTS, seed=3, types=types, end=end))


async def test_runners_held_above_what_the_demand_needs_are_slow_to_come_not_more_work(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # Most new runners of linux-x64-2cpu never start: 59 busy where 40 are usual, held there,
    # 63 jobs waiting 40 minutes. Jobs arrive 1.2x as often as usual and take their usual time,
    # which keeps about 51 busy: the work does not fill the level held, and the jobs that
    # started waited 28 times their usual wait. Not more work, not a ceiling.
    fleet = _failing_starts(10)
    assert truth_of(fleet).primary_cause == "infrastructure"
    for judged in await diagnose_run(
        fleet, tmp_path, ("jobs", "arc-lean"), prometheus=prometheus_binary
    ):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        found = finding(judged.report, "infrastructure")
        assert found.runner_types == ("linux-x64-2cpu",)
        (slow,) = [e for e in found.evidence if "no ceiling the work fills" in e.why]
        assert slow.now is not None and slow.baseline is not None
        assert slow.now >= 5 * slow.baseline, judged.combination
        limits = finding(judged.report, "autoscaling_limits")
        assert limits.verdict.value == "ruled_out", judged.combination
        assert "held above the level the demand needs" in limits.evidence[0].why
        workload = finding(judged.report, "increased_workload")
        assert workload.verdict.value != "likely", judged.combination


async def test_busy_runners_falling_while_jobs_wait_are_failing_runners(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # Most new runners of linux-arm64-4cpu never start: 42 jobs running half an hour ago, 29
    # now (the most at once in ten minutes fell from 47 to 34) while 79 jobs wait half an
    # hour. A ceiling keeps its runners busy; these are not replaced.
    fleet = _failing_starts(16)
    assert truth_of(fleet).primary_cause == "infrastructure"
    judgements = await diagnose_run(
        fleet, tmp_path, ("jobs", "arc", "arc-lean"), prometheus=prometheus_binary
    )
    for judged in judgements:
        assert judged.named == "infrastructure" and judged.located, judged.combination
        limits = finding(judged.report, "autoscaling_limits")
        assert limits.verdict.value != "likely", judged.combination
    (jobs,) = [j for j in judgements if j.combination == "jobs"]
    found = finding(jobs.report, "infrastructure")
    (busy,) = [e for e in found.evidence if e.measure == "busy runners"]
    assert (busy.now, busy.baseline) == (29.0, 17.0)
    (before,) = [e for e in found.evidence if e.measure == "busy runners 30 min before"]
    assert before.now == 42.0


async def test_runners_twenty_times_slower_to_start_are_no_ceiling_at_the_usual_level(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners of linux-x64-4cpu take twenty times as long to start: 9 to 11 busy (8 are
    # usual), 117 jobs waiting 75 minutes. Jobs arrive about as usual and take less than their
    # usual time, which keeps about 6 busy; the jobs that started waited 18 times their usual
    # wait. Not a ceiling at the usual level, nor more work beyond it (a lean scrape's queue is
    # far beyond its usual one).
    fleet = _failing_starts(22, types=3)
    assert truth_of(fleet).primary_cause == "infrastructure"
    for judged in await diagnose_run(
        fleet, tmp_path, ("jobs", "arc-lean"), prometheus=prometheus_binary
    ):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        found = finding(judged.report, "infrastructure")
        (slow,) = [e for e in found.evidence if "no ceiling the work fills" in e.why]
        assert slow.runner_type == "linux-x64-4cpu"
        assert finding(judged.report, "autoscaling_limits").verdict.value == "ruled_out"
        assert finding(judged.report, "increased_workload").verdict.value != "likely"


async def test_a_lowered_maximum_below_the_usual_level_stays_a_limit_at_low_demand(
    tmp_path: Path,
) -> None:
    # gpu-h100-1gpu's maximum lowered to 17 where 30 are usually busy, 107 jobs waiting two
    # hours; the evening's demand of the last hour would keep about 15 busy. Below the usual
    # level a lowered maximum and runners failing read the same: the ceiling is not ruled out.
    end = datetime(2026, 11, 26, 22, 7, tzinfo=UTC)
    fleet = run(plan(Case.LOWERED_MAX, seed=1, types=6, end=end))
    assert truth_of(fleet).primary_cause == "autoscaling_limits"
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    assert judged.named == "autoscaling_limits" and judged.located
    found = finding(judged.report, "infrastructure")
    assert not [e for e in found.evidence if "no ceiling the work fills" in e.why]


async def test_busy_runners_risen_beneath_a_standing_queue_are_no_ceiling(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # Most new runners of linux-arm64-8cpu never start (none of them registers, so GitHub's
    # runners list shows every runner busy, none idle). 30 jobs wait 34 minutes; jobs waited an
    # hour ago too, when at most 20 to 22 runners were busy at once; now 28 are. A ceiling stops
    # busy runners rising while jobs wait: before, this read as a limit (at high confidence
    # with the runners list).
    end = datetime(2026, 11, 27, 10, 21, tzinfo=UTC)
    fleet = run(plan(Case.FAILING_STARTS, seed=3, types=3, end=end))
    assert truth_of(fleet).primary_cause == "infrastructure"
    combinations = ("jobs", "jobs+runners", "arc-lean")
    for judged in await diagnose_run(fleet, tmp_path, combinations, prometheus=prometheus_binary):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        found = finding(judged.report, "infrastructure")
        assert found.runner_types == ("linux-arm64-8cpu",), judged.combination
        (risen,) = [e for e in found.evidence if e.why.startswith("rose from")]
        assert risen.now == 28.0, judged.combination
        assert "jobs waited then" in risen.why
        limits = finding(judged.report, "autoscaling_limits")
        assert limits.verdict.value == "ruled_out", judged.combination
        assert "risen while jobs waited" in limits.evidence[0].why


async def test_busy_runners_at_no_one_level_while_jobs_wait_far_longer_are_failing_runners(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners fail on every type. linux-arm64-8cpu has the worst queue (48 jobs, 35
    # minutes) at usual demand and job time, its most busy at once 31, 34, then 24 over half an
    # hour: no ceiling holds them, and the jobs that started waited 17 times their usual wait.
    # Before, nothing was found for it, and the fleet read as a limit on gpu-a10g-1gpu.
    end = datetime(2026, 11, 27, 10, 28, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=4, types=3, end=end))
    truth = truth_of(fleet)
    assert truth.primary_cause == "infrastructure" and len(truth.affected) == 3
    combinations = ("jobs", "jobs+runners", "arc-lean")
    for judged in await diagnose_run(fleet, tmp_path, combinations, prometheus=prometheus_binary):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        found = finding(judged.report, "infrastructure")
        assert set(found.runner_types) == set(truth.affected), judged.combination
        (slow,) = [e for e in found.evidence if "held at no one level" in e.why]
        assert slow.runner_type == "linux-arm64-8cpu"
        assert slow.now is not None and slow.baseline is not None
        assert slow.now >= 10 * slow.baseline, judged.combination


async def test_every_type_queueing_short_of_runners_since_the_same_half_hour_is_one_outage(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners stopped coming on every type. Five types queue (50, 16, 12, 8 and 7 jobs, 33
    # to 53 minutes): two with runners failing by their own signature, two held at a ceiling at
    # their usual level, one whose busy runners filled above usual (more work guessed, its
    # arrivals as usual). Two of five is under half the types, and the other three kept their
    # own guesses: not every queueing type was named with its cause. Their queues began within
    # 20 minutes of each other, every one short of runners or held: one cause across the fleet.
    end = datetime(2026, 11, 27, 4, 3, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=9, types=6, end=end))
    truth = truth_of(fleet)
    assert len(truth.affected) == 5 and set(truth.affected.values()) == {"infrastructure"}
    for judged in await diagnose_run(
        fleet, tmp_path, ("jobs", "arc-lean"), prometheus=prometheus_binary
    ):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        found = finding(judged.report, "infrastructure")
        assert set(found.runner_types) == set(truth.affected), judged.combination


async def test_more_work_in_ten_minutes_of_an_hour_as_usual_is_no_certainty(
    tmp_path: Path,
) -> None:
    # An outage: most new runners of three types never start. On the worst-queueing type
    # (36 jobs, 27 minutes) jobs arrived twice as often as usual over the last ten minutes,
    # but 1.53 a minute over the hour where 1.45 is usual: a burst, not more work that
    # lasts. Whatever job events alone name there is no certainty.
    end = datetime(2026, 11, 27, 4, 24, tzinfo=UTC)
    fleet = run(plan(Case.OUTAGE, seed=12, types=3, end=end))
    assert truth_of(fleet).primary_cause == "infrastructure"
    (judged,) = await diagnose_run(fleet, tmp_path, ("jobs",))
    (hour,) = [
        e
        for e in finding(judged.report, "increased_workload").evidence
        if e.runner_type == "linux-x64-highmem-32cpu" and e.measure.endswith("last hour")
    ]
    assert hour.now is not None and hour.baseline is not None
    assert hour.now <= 1.2 * hour.baseline
    assert judged.named != "increased_workload" or judged.confidence != "high"


async def test_busy_runners_fallen_over_the_hour_beneath_a_queue_are_no_ceiling(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # Most new runners of win-2022-8cpu never start since two hours: at most 15 jobs running at
    # once an hour ago, 8 then 6 over the last half hour (19 usually busy), while jobs waited
    # all the while. The half hour alone is a level held; the hour is runners going and not
    # coming back, which a ceiling (held hour after hour) is not.
    end = datetime(2026, 11, 27, 17, 31, tzinfo=UTC)
    fleet = run(plan(Case.FAILING_STARTS, seed=13, types=3, end=end))
    assert truth_of(fleet).affected == {"win-2022-8cpu": "infrastructure"}
    for judged in await diagnose_run(
        fleet, tmp_path, ("jobs", "arc-lean"), prometheus=prometheus_binary
    ):
        assert judged.named == "infrastructure" and judged.located, judged.combination
        limits = finding(judged.report, "autoscaling_limits")
        assert limits.verdict.value == "ruled_out", judged.combination
        assert limits.evidence[0].why.startswith("fallen from 15 at once an hour before")


async def test_peaks_fallen_within_the_half_hour_beneath_a_queue_are_no_ceiling(
    tmp_path: Path, prometheus_binary: str
) -> None:
    # New runners fail on every type; a lean scrape sees no runner, only jobs running. On
    # gpu-a10g-1gpu, the worst queue (57 jobs, 45 minutes), the most busy at once were 42 and
    # 41 in the windows ending 30 and 15 minutes before, 36 now; on linux-x64-32cpu (mixed
    # troubles, 380 jobs waiting 83 minutes) 117 and 116, then 108. Beneath a ceiling the peaks
    # stay at it (each job ends into the next queued one), a few below at most; these fell by
    # more than the runners replaced at once account for. Before, both read as a ceiling
    # ("held" within the waver of busy runners beneath a level), the primary cause a limit.
    cases = [
        (Case.OUTAGE, datetime(2026, 11, 27, 4, 17, tzinfo=UTC), "gpu-a10g-1gpu", 42),
        (Case.MIX, datetime(2026, 11, 27, 23, 17, tzinfo=UTC), "linux-x64-32cpu", 117),
    ]
    for case, end, name, peak in cases:
        fleet = run(plan(case, seed=11, types=3, end=end))
        truth = truth_of(fleet)
        assert (
            truth.primary_cause == "infrastructure" and truth.affected[name] == truth.primary_cause
        )
        workdir = tmp_path / case.value
        workdir.mkdir()
        (lean,) = await diagnose_run(fleet, workdir, ("arc-lean",), prometheus=prometheus_binary)
        assert lean.named == "infrastructure", case.value
        assert name in finding(lean.report, "infrastructure").runner_types
        limits = finding(lean.report, "autoscaling_limits")
        if limits.verdict.value == "likely":
            # Another type's ceiling: this one is not among those it names.
            assert name not in limits.runner_types, case.value
            continue
        (busy,) = [
            e
            for e in limits.evidence
            if (e.runner_type, e.measure) == (name, "busy runners (jobs running)")
        ]
        assert busy.why.startswith(f"fallen from {peak} at once within the half hour")
