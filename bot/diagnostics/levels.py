"""What the levels busy runners hold say of a ceiling: held at one number exactly while the
jobs started are what runners there turn over (a maximum, lowered within the hour where the
level fell), fallen over the hour or below the half hour's peaks (runners going and not coming
back), and the level the last hour's demand keeps busy."""

from __future__ import annotations

import math

from bot.diagnostics.evidence import Supply, supply
from bot.diagnostics.runner_checks import CEILING_MIN
from bot.fleet.measures import Signal, told_how_long
from bot.fleet.signals import FleetSignals

#: Jobs started over the last hour at this share or less of those busy runners held at a
#: ceiling would start (each a job's usual time, then the usual wait): not turning over.
#: Lowered maxima started 0.7-1.1 of it counting the job time alone; the wait adds to that.
TURNOVER_SHORT = 0.6
#: A level held at one number is a maximum (lowered, where it fell over the hour) where no more
#: than this share above what the level turns over started over the hour.
HELD_STARTS = 1.15
#: The most runners busy at once apart from the level of an hour before by this share and this
#: many more (and at least by its square root, what runners coming and going beneath a level
#: waver by): risen beneath a queue while jobs waited all the while, or fallen below a ceiling.
LEVEL_MOVED_SHARE = 0.15
LEVEL_MOVED_MORE = 2.0
#: The most runners busy at once beneath a ceiling dip below it by this many at least before
#: they count as fallen below it (see `fell_below_its_peak`).
PEAK_DIP_MIN = 2.0
#: The demand of the last hour counted over at least this many jobs: fewer cannot tell demand
#: from chance. It fills a level where it keeps this share of it busy.
DEMAND_JOBS = 30.0
FILLED_SHARE = 0.9


def started_wait(fleet: FleetSignals, name: str) -> tuple[Signal, float, float] | None:
    """How long the jobs that started in the window waited, and usually: the median where
    measured with its usual, else the mean."""
    for signal in (Signal.QUEUE_TIME_P50, Signal.QUEUE_TIME_MEAN):
        waited, usual = fleet.value(signal, name), fleet.base(signal, name)
        if waited is not None and usual is not None and told_how_long(signal, waited):
            return signal, waited, usual
    return None


def _below_an_hour_before(fleet: FleetSignals, name: str, busy: Supply) -> float | None:
    """The most runners busy at once an hour before, where the level now is clearly below it
    (by more than runners coming and going beneath a level waver by). None where not so, or
    where the peaks are not measured."""
    then = fleet.an_hour_ago(Signal.RUNNING_PEAK, name)
    if not busy.peaks or then is None or busy.top > then - moved_by(then):
        return None
    return then


def fell_over_the_hour(fleet: FleetSignals, name: str) -> float | None:
    """The most runners busy at once an hour before, where the level now is clearly below it
    and holds no ceiling: a ceiling holds its level hour after hour, while runners that end
    their jobs and are not replaced leave fewer busy each half hour. None where not so."""
    busy = supply(fleet, name)
    if busy is None or (then := _below_an_hour_before(fleet, name, busy)) is None:
        return None
    return None if holds_a_ceiling(fleet, name, busy) else then


def holds_a_ceiling(fleet: FleetSignals, name: str, busy: Supply | None = None) -> bool:
    """The most busy at once at one number exactly through the half hour, the hour's starts
    what runners held there turn over (above TURNOVER_SHORT of it, at most HELD_STARTS; at the
    usual job time or the window's where shorter): a maximum, lowered within the hour where the
    level fell. Runners failing leave fewer busy reading by reading, or start next to none."""
    busy = busy if busy is not None else supply(fleet, name)
    if busy is None or len(busy.peaks) < 3 or not busy.exact or busy.top < CEILING_MIN:
        return False
    turning = turnover(fleet, name, busy, shortest=True)
    started = fleet.value(Signal.STARTED_HOUR, name)
    if turning is None or started is None:
        return False
    return TURNOVER_SHORT * turning[0] < started <= HELD_STARTS * turning[0]


def lowered_within_the_hour(fleet: FleetSignals, name: str, busy: Supply) -> bool:
    """A maximum lowered within the hour: the level held at one number exactly, turning over
    as a ceiling does, clearly beneath the most busy at once an hour before (the demand that
    kept those busy fills it, whatever the usual at this hour says)."""
    return _below_an_hour_before(fleet, name, busy) is not None and holds_a_ceiling(
        fleet, name, busy
    )


def turnover(
    fleet: FleetSignals, name: str, busy: Supply, shortest: bool = False
) -> tuple[float, float, float] | None:
    """The jobs a minute `busy.top` runners held at a ceiling start, with the seconds of a job
    and between two: each runner a job's usual time (or, `shortest`, the window's where
    shorter), then its successor's start, about the usual wait of the jobs started at this
    hour (a runner's place waits for the next ephemeral runner to start)."""
    seconds = fleet.base(Signal.DURATION_MEAN, name)
    if shortest and seconds and (lately := fleet.value(Signal.DURATION_MEAN, name)):
        seconds = min(seconds, lately)
    usual_started = fleet.base(Signal.STARTED_HOUR, name)
    if seconds is None and busy.usual and usual_started:
        seconds = 60.0 * busy.usual / usual_started  # the usual hold (Little's law)
    if not seconds:
        return None
    wait = started_wait(fleet, name)
    between = wait[2] if wait is not None else 0.0
    return busy.top * 60.0 / (seconds + between), seconds, between


def fell_below_its_peak(fleet: FleetSignals, name: str) -> float | None:
    """The most runners busy at once 15 or 30 minutes before, where the most busy at once now
    is clearly below it. Beneath a ceiling ephemeral runners come and go, but each one's job
    ends into the next queued job and the peaks stay at it, a few below at most (those being
    replaced at once: half the square root of the level, at least PEAK_DIP_MIN); peaks
    falling further are runners going and not coming back. None where not so, or where the
    peaks are not measured."""
    busy = supply(fleet, name)
    if busy is None or len(busy.peaks) < 2:
        return None
    then = max(busy.peaks[1:])
    return then if busy.peaks[0] < then - max(PEAK_DIP_MIN, math.sqrt(then) / 2) else None


def moved_by(level: float) -> float:
    """How far the most runners busy at once must move from `level` to have moved: more than
    runners coming and going beneath it waver by."""
    return max(LEVEL_MOVED_SHARE * level + LEVEL_MOVED_MORE, math.sqrt(level))


def demand_level(fleet: FleetSignals, name: str, usual_busy: float) -> float | None:
    """The busy runners the demand of the last hour keeps busy: those usually busy at this hour
    times arrivals (over the hour, or the window where higher) and mean job time against their
    usual. None where fewer jobs arrived over the hour than can tell demand from chance."""
    hour, usual_hour = (
        fleet.value(Signal.ARRIVALS_HOUR, name),
        fleet.base(Signal.ARRIVALS_HOUR, name),
    )
    if hour is None or not usual_hour or hour * 60.0 < DEMAND_JOBS:
        return None
    ratio = hour / usual_hour
    window, usual_window = (
        fleet.value(Signal.ARRIVALS_PER_MINUTE, name),
        fleet.base(Signal.ARRIVALS_PER_MINUTE, name),
    )
    if window is not None and usual_window:
        ratio = max(ratio, window / usual_window)
    seconds, usual_seconds = (
        fleet.value(Signal.DURATION_MEAN, name),
        fleet.base(Signal.DURATION_MEAN, name),
    )
    if seconds is not None and usual_seconds:
        ratio *= seconds / usual_seconds
    return usual_busy * ratio


def demand_short_of(
    fleet: FleetSignals, name: str, usual_busy: float, level: float
) -> float | None:
    """The busy runners the last hour's demand keeps, where measured and clearly fewer than
    the `level` held (under FILLED_SHARE of it): no work fills that level. Else None."""
    needed = demand_level(fleet, name, usual_busy)
    return needed if needed is not None and needed < FILLED_SHARE * level else None
