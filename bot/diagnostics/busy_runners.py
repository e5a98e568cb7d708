"""What busy runners and the jobs they start tell where no cause shows its own signature
(bot.diagnostics.inference decides when that is): runners not coming, runners slow to come,
runners held but not turning over, or a ceiling filled above the usual."""

from __future__ import annotations

from bot.diagnostics.evidence import (
    QUEUED_AFFECTED,
    Supply,
    busy_signal,
    evidence,
    significant_rise,
    supply,
    waited_through,
)
from bot.diagnostics.levels import (
    TURNOVER_SHORT,
    demand_short_of,
    lowered_within_the_hour,
    moved_by,
    started_wait,
    turnover,
)
from bot.diagnostics.runner_checks import CEILING_MIN
from bot.domain.diagnosis import Evidence, RunnerTypeState
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals
from bot.render.diagnosis_text import amount

#: Busy runners held at a ceiling this many times those usually busy at this hour, and this
#: many more: the ceiling serves more than the usual demand.
CEILING_ABOVE_USUAL = 1.3
CEILING_MIN_EXTRA = 3.0
#: Jobs started over the last hour at this share or less of those arriving (and of those usually
#: started), by this many jobs and more than chance explains: the runners did not start them.
STARTS_SHORT = 0.6
GAP_JOBS = 5.0
STARTS_SHORT_Z = 2.0
#: Jobs that started in the window waited this many times their usual wait, and this many
#: seconds more, before runners can be said not to come: a queue that formed just now behind
#: runners taking jobs as quickly as usual is a scale-up under way.
WAITED_LONGER = 1.5
WAITED_MORE_SECONDS = 120.0
#: ...and this many times their usual wait, and at least this many seconds more than it, while
#: busy runners rise above the usual: runners that come, but long after the jobs asked for them.
WAITED_FAR_LONGER = 5.0
WAITED_FAR_MORE_SECONDS = 600.0
#: Jobs started short of what a ceiling turns over by more than chance explains.
TURNOVER_Z = 1.5


def not_coming(fleet: FleetSignals, state: RunnerTypeState) -> Evidence | None:
    """Where demand and job time are as usual and no ceiling holds, while jobs have waited
    through half an hour: far fewer jobs started over the hour than arrived; or busy runners no
    more than usual, and the jobs that started waited longer than usual. Healthy runners would
    have taken the usual demand without a queue, so runners are not coming (failing to start,
    to register or to take jobs), whatever no source measures of them. Told by elimination:
    low confidence."""
    if not waited_through(fleet, state.name):
        return None
    if (short := _starts_short(fleet, state)) is not None:
        return short
    if waits_as_usual(fleet, state.name):
        return None
    busy = supply(fleet, state.name)
    if busy is None or busy.usual is None:
        return None
    if busy.now > busy.usual + max(1.0, 0.1 * busy.usual):
        # More runners busy than usual: the backlog of runners slow to come, where the jobs
        # that started waited many times the usual; else work the demand did not tell.
        return _slow_to_come(fleet, state, busy)
    signal = busy_signal(fleet, state.name)
    found = evidence(fleet, signal, state.name, "busy runners", now=busy.now)
    why = (
        f"no more than usual while {amount(state.queued, '')} jobs wait, at usual demand and"
        " job time: runners are not coming (failing to start, register or take jobs?)"
    )
    return found.model_copy(update={"why": why})


def _slow_to_come(fleet: FleetSignals, state: RunnerTypeState, busy: Supply) -> Evidence | None:
    """Busy runners above the usual, rising or not held at any one level (no ceiling), yet the
    jobs that started waited many times their usual wait and minutes more: each runner comes
    long after its job asked for it (failing, or slow to provision or register), and the
    backlog keeps those that come busy."""
    far = _waited_far_longer(fleet, state.name)
    if far is None or (busy.flat and not busy.catching_up):
        return None  # held at one level: a ceiling, not runners slow to come
    found, waited, usual = far
    moved = (
        f"rose from {amount(busy.before[-1], '')} to {amount(busy.now, '')} in half an hour"
        if busy.catching_up
        else f"held at no one level ({_levels(busy)} over half an hour): no ceiling holds them"
    )
    why = (
        f"{waited / max(usual, 1.0):.0f}x the usual at usual demand and job time, while busy"
        f" runners {moved}: runners come long after jobs ask for them (failing, or slow to"
        " start or register?)"
    )
    return found.model_copy(update={"why": why})


def _levels(busy: Supply) -> str:
    """The levels busy runners were read at, the earliest first (their peaks where measured)."""
    levels = busy.peaks or (busy.now, *busy.before)
    return " → ".join(amount(level, "") for level in reversed(levels))


def _waited_far_longer(fleet: FleetSignals, name: str) -> tuple[Evidence, float, float] | None:
    """The jobs that started in the window waited many times their usual wait and minutes
    more: the evidence, their wait and the usual one."""
    wait = started_wait(fleet, name)
    if wait is None:
        return None
    signal, waited, usual = wait
    if waited < max(WAITED_FAR_LONGER * usual, usual + WAITED_FAR_MORE_SECONDS):
        return None
    center = "median" if signal is Signal.QUEUE_TIME_P50 else "mean"
    found = evidence(fleet, signal, name, f"{center} wait of jobs started", unit="s")
    return found, waited, usual


def not_turning_over(fleet: FleetSignals, state: RunnerTypeState) -> Evidence | None:
    """Busy runners held at one level, but starting far fewer jobs over the hour than runners
    held at a ceiling turn over (each one a job's usual time, then its successor's start,
    about the usual wait), by more than chance explains: no maximum holds them (its runners
    would take a new job as each one ends); jobs left running hold them while new runners do
    not come."""
    busy = supply(fleet, state.name)
    started = fleet.value(Signal.STARTED_HOUR, state.name)
    if busy is None or not busy.flat or busy.top < CEILING_MIN or started is None:
        return None
    if (turning := turnover(fleet, state.name, busy)) is None:
        return None
    turning_over, seconds, between = turning
    if started > TURNOVER_SHORT * turning_over:
        return None
    if not significant_rise(turning_over, started, 60.0, TURNOVER_Z):
        return None
    found = evidence(fleet, Signal.STARTED_HOUR, state.name, "jobs started per minute, last hour")
    why = (
        f"{amount(started * 60.0, '')} started in the last hour where {amount(busy.top, '')}"
        f" runners held at a ceiling would start {amount(turning_over * 60.0, '')} at the usual job"
        f" time ({amount(seconds / 60.0, '')} min{_and_wait(between)}): the runners are held by"
        " jobs left running, and new ones do not come (failing to start or register?)"
    )
    return found.model_copy(update={"why": why})


def rose_beneath_queue(fleet: FleetSignals, state: RunnerTypeState) -> Evidence | None:
    """Jobs waiting an hour ago and at each reading since, and the jobs that started lately
    waiting longer than usual, while the most runners busy at once rose clearly above their
    level of an hour before: no ceiling holds them (a ceiling stops busy runners rising while
    jobs wait, and a raised one clears the queue). Runners come, but too slowly to keep up
    (most failing to start or register, or slow to)."""
    name = state.name
    busy = supply(fleet, name)
    then_peak = fleet.an_hour_ago(Signal.RUNNING_PEAK, name)
    then_queued = fleet.an_hour_ago(Signal.QUEUED, name)
    if busy is None or not busy.peaks or then_peak is None or then_queued is None:
        return None
    if then_queued < QUEUED_AFFECTED or not waited_through(fleet, name):
        return None
    if waits_as_usual(fleet, name) or started_wait(fleet, name) is None:
        return None
    if busy.top < then_peak + moved_by(then_peak):
        return None
    found = evidence(
        fleet,
        Signal.RUNNING_PEAK,
        name,
        f"most runners busy at once, last {fleet.window}",
        now=busy.top,
        baseline=False,
    )
    why = (
        f"rose from {amount(then_peak, '')} an hour before while {amount(then_queued, '')} jobs"
        " waited then and jobs waited since: no ceiling holds them (it would stop them rising"
        " while jobs wait), and the runners come too slowly to keep up (most failing to start"
        " or register, or slow to?)"
    )
    return found.model_copy(update={"why": why})


def _and_wait(seconds: float) -> str:
    """The usual wait between two jobs of a runner's place, where there is one to say."""
    return f", then the usual wait of {amount(seconds / 60.0, '')} min" if seconds >= 30.0 else ""


def waits_as_usual(fleet: FleetSignals, name: str) -> bool:
    """The jobs that started in the window waited not much longer than usual (the median wait
    where measured, else the mean): the runners take jobs about as quickly as ever."""
    wait = started_wait(fleet, name)
    return wait is not None and wait[1] < WAITED_LONGER * wait[2] + WAITED_MORE_SECONDS


def _starts_short(fleet: FleetSignals, state: RunnerTypeState) -> Evidence | None:
    """Over the last hour, far fewer jobs started than arrived and than usually start, by more
    than chance explains: with demand and job time as usual and no ceiling, healthy runners
    would have started them."""
    name = state.name
    started, arrived = (
        fleet.value(Signal.STARTED_HOUR, name),
        fleet.value(Signal.ARRIVALS_HOUR, name),
    )
    usual = fleet.base(Signal.STARTED_HOUR, name)
    if started is None or arrived is None or usual is None:
        return None
    if started > STARTS_SHORT * min(arrived, usual) or (arrived - started) * 60.0 < GAP_JOBS:
        return None
    if not significant_rise(arrived, started, 60.0, STARTS_SHORT_Z):
        return None
    found = evidence(fleet, Signal.STARTED_HOUR, name, "jobs started per minute, last hour")
    why = (
        f"{amount(started * 60.0, '')} started in the last hour where"
        f" {amount(arrived * 60.0, '')} arrived, at usual demand and job time: runners are not"
        " coming (failing to start, register or take jobs?)"
    )
    return found.model_copy(update={"why": why})


def filled_above_usual(fleet: FleetSignals, state: RunnerTypeState) -> Evidence | None:
    """Busy runners held at a ceiling well above the number usually busy at this hour while
    jobs have waited through half an hour: the usual demand would fit beneath it, so more work
    than usual fills it, whatever too few jobs a minute to tell from chance say. The ceiling
    is where the extra work stops, not why it came."""
    busy = supply(fleet, state.name)
    if busy is None or busy.usual is None or not (busy.flat or state.at_max):
        return None
    if not waited_through(fleet, state.name):
        return None
    if busy.top < CEILING_ABOVE_USUAL * busy.usual + CEILING_MIN_EXTRA:
        return None
    if demand_short_of(fleet, state.name, busy.usual, busy.top) is not None:
        return None
    signal = busy_signal(fleet, state.name)
    origin = fleet.origin(signal, state.name)
    return Evidence(
        runner_type=state.name,
        measure="busy runners held at a ceiling",
        now=busy.top,
        baseline=busy.usual,
        source=origin.value if origin else "",
        why=(
            f"{busy.top / max(busy.usual, 1.0):.1f}x the runners usually busy at this hour,"
            " and jobs still wait: more work than usual fills it"
        ),
    )


def unfilled_ceiling(fleet: FleetSignals, state: RunnerTypeState) -> Evidence | None:
    """Busy runners held at one level, at or above the usual, while jobs wait through half an
    hour, where the demand of the last hour keeps clearly fewer busy and the jobs that started
    waited many times their usual wait: no ceiling the work fills, and healthy runners would
    have cleared the queue; the runners come too slowly (failing or slow to start, or to
    register)."""
    busy = supply(fleet, state.name)
    if busy is None or busy.usual is None or not busy.flat or not waited_through(fleet, state.name):
        return None
    if busy.top < busy.usual or lowered_within_the_hour(fleet, state.name, busy):
        return None  # a lowered maximum reads the same
    if (needed := demand_short_of(fleet, state.name, busy.usual, busy.top)) is None:
        return None
    if (far := _waited_far_longer(fleet, state.name)) is None:
        return None
    found, waited, usual = far
    why = (
        f"{waited / max(usual, 1.0):.0f}x the usual with {amount(busy.top, '')} runners busy,"
        f" where the last hour's demand keeps about {amount(needed, '')} busy: no ceiling the"
        " work fills, and the runners come too slowly to clear the queue (failing or slow to"
        " start or register?)"
    )
    return found.model_copy(update={"why": why})
