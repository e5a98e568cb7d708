"""How long a job holds its runner (Little's law: runners busy over jobs started a minute): a
slowdown told by the runners it keeps busy, where the few jobs completing may be the quick
ones."""

from __future__ import annotations

from bot.domain.diagnosis import Evidence
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals

#: The time a job holds a runner (runners busy / jobs started a minute) this many times usual,
#: with about as many runners busy as usual or more (at a ceiling, as many): jobs are slower.
HELD_RATIO = 1.5
HELD_BUSY_SHARE = 0.9
HELD_MIN_BUSY = 3.0
#: ...and the type's job time (p90, p50 or mean: the highest) at least this many times usual.
HELD_TIMED_RATIO = 1.2
#: A hold this many times usual agrees with a p90 of a few jobs well above usual: two measures
#: of the job time, one from the jobs completing, one from the runners they keep busy.
HELD_AGREES = 1.3
#: Jobs started in the last hour below this: too few to time anything by.
HELD_MIN_STARTS = 5.0


def hold_time(fleet: FleetSignals, name: str) -> tuple[float, float] | None:
    """How long a job holds a runner now and usually, in seconds: runners busy over jobs
    started a minute in the last hour (Little's law), the usual one at least the usual mean
    job time. Where busy runners changed over the half hour, the lower of those busy now and
    of their average now and 15 and 30 minutes before: runners arriving late after a long
    wait are busy now, not over the hour, and a hold is no slowdown unless both readings show
    it. None where too few jobs started to time anything by."""
    busy, usual_busy = fleet.value(Signal.RUNNING, name), fleet.base(Signal.RUNNING, name)
    started, usual_started = (
        fleet.value(Signal.STARTED_HOUR, name),
        fleet.base(Signal.STARTED_HOUR, name),
    )
    if busy is None or usual_busy is None or started is None or usual_started is None:
        return None
    if started * 60.0 < HELD_MIN_STARTS or usual_started <= 0:
        return None
    levels = [busy, *fleet.before(Signal.RUNNING, name)]
    held = min(busy, sum(levels) / len(levels))
    # A runner is busy for its job's whole time: the usual hold is at least the usual mean job
    # time, where busy runners read at one moment of a quiet hour say less.
    usual_seconds = fleet.base(Signal.DURATION_MEAN, name) or 0.0
    return 60.0 * held / started, max(60.0 * max(usual_busy, 1.0) / usual_started, usual_seconds)


def _timed_hold(fleet: FleetSignals, name: str) -> tuple[float, float] | None:
    """`hold_time`, where as many runners are busy as usual or more: runners that do not come
    leave fewer busy and fewer jobs started, and the long jobs left behind would read as a
    longer hold."""
    hold = hold_time(fleet, name)
    busy, usual_busy = fleet.value(Signal.RUNNING, name), fleet.base(Signal.RUNNING, name)
    if hold is None or busy is None or usual_busy is None:
        return None
    if busy < HELD_BUSY_SHARE * usual_busy or busy < HELD_MIN_BUSY:
        return None
    return hold


def hold_ratio(fleet: FleetSignals, name: str) -> float | None:
    """The time a job holds a runner against usual (see `_timed_hold` for where it counts)."""
    hold = _timed_hold(fleet, name)
    return hold[0] / hold[1] if hold is not None else None


def held_longer(fleet: FleetSignals, name: str, at_least: float = HELD_RATIO) -> Evidence | None:
    """How long a job holds a runner well above usual. Where jobs are slow the few completing
    in the window may be the quick ones; the runners they keep busy are not. More demand
    starts more jobs and busies more runners alike, and a ceiling holds both: neither moves
    this."""
    hold = _timed_hold(fleet, name)
    if hold is None:
        return None
    held, usual_held = hold
    ratio = held / usual_held
    # Busy runners and starts at this hour vary from day to day: a hold well above usual
    # counts where the jobs completing are slower too, if only a little.
    if ratio < at_least or _job_time_ratio(fleet, name) < HELD_TIMED_RATIO:
        return None
    return Evidence(
        runner_type=name,
        measure="time a job holds a runner (runners busy / jobs started a minute, last hour)",
        now=held,
        baseline=usual_held,
        unit="s",
        source=origin.value if (origin := fleet.origin(Signal.RUNNING, name)) else "",
        why=f"{ratio:.1f}x usual: jobs keep their runners longer",
    )


def _job_time_ratio(fleet: FleetSignals, name: str) -> float:
    """The most any measure of the job time rose against usual (infinite where none is
    measured: nothing to contradict a hold)."""
    ratios = []
    for signal in (Signal.DURATION_P90, Signal.DURATION_P50, Signal.DURATION_MEAN):
        now, usual = fleet.value(signal, name), fleet.base(signal, name)
        if now is not None and usual is not None and usual > 0:
            ratios.append(now / usual)
    return max(ratios) if ratios else float("inf")
