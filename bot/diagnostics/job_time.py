"""The runbook's check on job time: long-running jobs, told from the jobs completing (p90,
median, mean) and from the runners they keep busy (Little's law), by workflow where measured;
and, where more jobs and longer jobs are both found, which of the two comes first."""

from __future__ import annotations

from bot.diagnostics.evidence import RATIO_LIKELY, demand, evidence, ratio_of, supply
from bot.diagnostics.hold import (
    HELD_AGREES,
    HELD_MIN_BUSY,
    HELD_RATIO,
    HELD_TIMED_RATIO,
    held_longer,
    hold_ratio,
    hold_time,
)
from bot.diagnostics.levels import (
    FILLED_SHARE,
    demand_level,
    fell_below_its_peak,
    fell_over_the_hour,
)
from bot.diagnostics.runner_checks import Check
from bot.diagnostics.workload import SLOWER_MIN_JOBS, mix_explains, top_workflows
from bot.domain.diagnosis import Cause, RunnerTypeState, Verdict
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals, window_minutes
from bot.render.diagnosis_text import amount

#: Job times: with fewer jobs than this in the window, a rise counts only with the median (or
#: the mean, or the time a job holds its runner) up too, or at this many times usual.
ENOUGH_JOBS = 50.0
SLOWDOWN_FEW_JOBS = 2.0
#: Jobs started over the last hour at this share of the usual rate or more: runners come.
STARTED_AS_USUAL = 0.95
#: ...or the queue shrank by this share of it over the hour: runners come.
QUEUE_SHRANK = 0.15
#: Busy runners under this share of usual: slower jobs do not explain the queue.
FEW_BUSY = 0.5
#: ...and busy runners this much above usual: slower jobs keeping more of them.
BUSIER = 1.25


def long_running(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    """Long-running jobs: job time (p90, or the mean where no percentile is measured) well
    above usual, with enough jobs or another measure of it agreeing, or the time a job holds
    its runner where no job completed in the window to time; not where far fewer
    runners are busy than usual (slower jobs keep more busy), nor where workflows new to the
    type explain it (the job mix changed, not the jobs)."""
    name = state.name
    signal, measure = Signal.DURATION_P90, "p90 job time"
    now, base = fleet.value(signal, name), fleet.base(signal, name)
    if now is None or base is None:
        signal, measure = Signal.DURATION_MEAN, "mean job time"
        now, base = fleet.value(signal, name), fleet.base(signal, name)
    if now is None or base is None:
        # No job completed in the window to time: the runners held by the jobs started over
        # the hour still tell how long a job keeps one.
        held = held_longer(fleet, name)
        return (Verdict.LIKELY, (held,)) if held is not None else (Verdict.NO_DATA, ())
    ratio = ratio_of(now, base, 1.0) or 0.0
    center = Signal.DURATION_P50 if signal is Signal.DURATION_P90 else Signal.DURATION_P90
    measured_center = ratio_of(fleet.value(center, name), fleet.base(center, name), 1.0)
    ratio_center = measured_center or 0.0
    jobs = _timed(fleet, name)
    # A percentile of a few jobs moves by chance (by a histogram bucket, x1.3-1.5): with few
    # jobs a rise counts when another measure of the job time rose too (the median, or the
    # time a job holds its runner), or it doubled while the median did not fall below usual
    # by more than a fifth (slower jobs move the middle too: a p90 of three jobs doubled with
    # their median below usual is their spread, not a slowdown).
    held_ratio = hold_ratio(fleet, name)
    center_fell = measured_center is not None and measured_center < 1.0 / HELD_TIMED_RATIO
    likely = ratio >= RATIO_LIKELY and (
        jobs >= ENOUGH_JOBS
        or ratio_center >= RATIO_LIKELY
        or (ratio >= SLOWDOWN_FEW_JOBS and not center_fell)
        or (held_ratio is not None and held_ratio >= HELD_AGREES)
    )
    hold = hold_time(fleet, name)
    if jobs < ENOUGH_JOBS and hold is not None and hold[0] < HELD_TIMED_RATIO * hold[1]:
        # The few jobs completing may be the long ones left where new runners do not start:
        # jobs slower than usual hold their runners longer, and these do not.
        likely = False
    by_workflow = (
        Signal.DURATION_P90_BY_WORKFLOW
        if fleet.workflows.get(Signal.DURATION_P90_BY_WORKFLOW, {}).get(name)
        else Signal.DURATION_MEAN_BY_WORKFLOW
    )
    held = held_longer(fleet, name)
    likely = likely or held is not None
    if likely and held is None:
        held = held_longer(fleet, name, HELD_AGREES)
    # A rise that is no slowdown says why (far fewer busy outranks a changed mix).
    why = ""
    busy = supply(fleet, name)
    few_busy = (
        busy is not None
        and busy.usual is not None
        and busy.usual >= HELD_MIN_BUSY
        and busy.now < FEW_BUSY * busy.usual
    )
    if likely and few_busy and busy is not None:
        why = (
            f"{amount(busy.now, '')} runners busy where {amount(busy.usual, '')} are usual:"
            " slower jobs would keep more runners busy, not fewer (the few completing may be"
            " the long ones left where new runners do not start)"
        )
    elif (
        likely
        and busy is not None
        and ratio_center < HELD_TIMED_RATIO
        and not _runners_come(fleet, name)
        and (fallen := _fallen(fleet, name)) is not None
    ):
        why = (
            f"busy runners fallen from {amount(fallen[0], '')} at once {fallen[1]} to"
            f" {amount(busy.top, '')}, the median job as usual: slower jobs would keep more"
            " runners busy, not fewer (the few completing are the long ones left where new"
            " runners do not start)"
        )
    elif likely and (mixed := mix_explains(fleet, name)):
        why = (
            f"jobs of workflows new to this type ({', '.join(mixed)}) take longer than its"
            " usual ones: the job mix changed, not the jobs that ran here before"
        )
    likely = likely and not why
    workflows = top_workflows(fleet, by_workflow, name, 1.0) if likely else ()
    found = [evidence(fleet, signal, name, measure, unit="s", workflows=workflows)]
    if why:
        found[0], held = found[0].model_copy(update={"why": why}), None
    if held is not None:
        found.append(held)
    if fleet.value(center, name) is not None:
        label = "p50 job time" if center is Signal.DURATION_P50 else "p90 job time"
        found.append(evidence(fleet, center, name, label, unit="s"))
    return (Verdict.LIKELY if likely else Verdict.RULED_OUT), tuple(found)


def _fallen(fleet: FleetSignals, name: str) -> tuple[float, str] | None:
    """The most runners busy at once that the level now fell clearly below, and when: an
    hour before, or within the half hour."""
    if (level := fell_over_the_hour(fleet, name)) is not None:
        return level, "an hour before"
    if (level := fell_below_its_peak(fleet, name)) is not None:
        return level, "within the half hour"
    return None


def _runners_come(fleet: FleetSignals, name: str) -> bool:
    """New runners come, so the jobs completing are not only the long ones left where new
    runners do not start: jobs started over the last hour at the usual rate (STARTED_AS_USUAL
    of it at least; runners failing for part of the hour start clearly fewer), or the queue
    shrank over the hour by QUEUE_SHRANK of it at least (runners took jobs faster than they
    arrived; where runners fail, jobs pile up), or the runners busy are as many as the last
    hour's demand at the window's job time keeps busy (FILLED_SHARE of it at least: those the
    slower jobs hold are replaced as they end)."""
    started, usual = fleet.value(Signal.STARTED_HOUR, name), fleet.base(Signal.STARTED_HOUR, name)
    if started is not None and usual and started >= STARTED_AS_USUAL * usual:
        return True
    queued, then = fleet.value(Signal.QUEUED, name), fleet.an_hour_ago(Signal.QUEUED, name)
    if queued is not None and then is not None and queued <= (1.0 - QUEUE_SHRANK) * then:
        return True
    busy = supply(fleet, name)
    if busy is None or busy.usual is None:
        return False
    kept = demand_level(fleet, name, busy.usual)
    return kept is not None and busy.top >= FILLED_SHARE * kept


def _timed(fleet: FleetSignals, name: str) -> float:
    """About how many of `name`'s jobs the window's job time is measured on."""
    return (
        fleet.value(Signal.COMPLETED_PER_MINUTE, name)
        or fleet.value(Signal.STARTED_PER_MINUTE, name)
        or 0.0
    ) * window_minutes(fleet.window)


def runners_not_grown(fleet: FleetSignals, name: str) -> bool:
    """Busy runners no more than usual over the last half hour. Where no ceiling holds them,
    slower jobs would have kept more runners busy; a queue with none added is runners that
    do not come (machines that never register are seen by no source) as much as slower jobs:
    long-running jobs at most at medium confidence there."""
    busy = supply(fleet, name)
    if busy is None or busy.usual is None:
        return False
    return max(busy.now, *busy.before) < BUSIER * busy.usual


def timed_by_few(fleet: FleetSignals, name: str) -> bool:
    """Job time rose on too few jobs to be certain of, with no clear rise of the time a job
    holds its runner to agree: long-running jobs at most at medium confidence."""
    held = hold_ratio(fleet, name)
    return _timed(fleet, name) < ENOUGH_JOBS and (held is None or held < HELD_RATIO)


def completing_slower(fleet: FleetSignals, name: str) -> bool:
    """The jobs completing in the window take clearly longer than usual on their own: their p90
    (the mean where no percentile is measured) RATIO_LIKELY times usual, over at least
    SLOWER_MIN_JOBS of them. At a ceiling this is what tells a slowdown: the time a job holds
    its runner stretches there with each runner's replacement (ephemeral runners) and with
    the job mix of the queue, whatever the jobs take."""
    for signal in (Signal.DURATION_P90, Signal.DURATION_MEAN):
        ratio = ratio_of(fleet.value(signal, name), fleet.base(signal, name), 1.0)
        if ratio is not None:
            return ratio >= RATIO_LIKELY and _timed(fleet, name) >= SLOWER_MIN_JOBS
    return False


def _factors(fleet: FleetSignals, name: str) -> tuple[float, float]:
    """Where both more jobs and longer jobs are found, how much each rose: the two factors of
    the extra work (jobs a minute times their time). The larger one is the primary cause: work
    moved in or new whose jobs happen to be longer, or the same jobs slower. Each factor at its
    highest measure: demand over the window or the hour; the p90 or mean job time, or the time
    a job holds its runner."""
    asked = demand(fleet, name)
    more = [
        ratio_of(asked.now, asked.usual, 0.1) if asked is not None else None,
        ratio_of(
            fleet.value(Signal.ARRIVALS_HOUR, name), fleet.base(Signal.ARRIVALS_HOUR, name), 0.1
        ),
    ]
    longer = [hold_ratio(fleet, name)] + [
        ratio_of(fleet.value(signal, name), fleet.base(signal, name), 1.0)
        for signal in (Signal.DURATION_P90, Signal.DURATION_MEAN)
    ]
    return (
        max((r for r in more if r is not None), default=0.0),
        max((r for r in longer if r is not None), default=0.0),
    )


def weigh(fleet: FleetSignals, name: str, likely: list[Cause], notes: list[str]) -> list[Cause]:
    """`likely` (both more jobs and longer jobs among them) with more jobs before longer jobs
    where demand rose by the larger factor (PRECEDENCE has longer jobs first), or where no job
    time by workflow tells the jobs apart: more jobs arriving is work whatever they are, while
    a longer mean may be only the jobs that came on top (a new mix); a note of both factors is
    added to `notes`."""
    more, longer = _factors(fleet, name)
    # One workflow (or repository, where the metrics carry no workflow) timed is the type's
    # jobs all together: nothing told apart.
    told_apart = any(
        len(fleet.workflows.get(signal, {}).get(name, {})) >= 2
        for signal in (Signal.DURATION_MEAN_BY_WORKFLOW, Signal.DURATION_P90_BY_WORKFLOW)
    )
    if told_apart:
        larger = "more jobs" if more > longer else "longer jobs"
        why = f"{larger} are the larger part of the extra work."
    else:
        why = (
            "more jobs first, as no job time by workflow tells whether the jobs that came on top"
            " are the longer ones."
        )
    notes.append(f"{name}: jobs a minute {more:.1f}x usual and job time {longer:.1f}x: {why}")
    if told_apart and more <= longer:
        return likely
    swapped = {
        Cause.LONG_RUNNING_JOBS: Cause.INCREASED_WORKLOAD,
        Cause.INCREASED_WORKLOAD: Cause.LONG_RUNNING_JOBS,
    }
    return [swapped.get(cause, cause) for cause in likely]
