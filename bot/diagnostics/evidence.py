"""Reading one runner type out of the fleet's signals: its state now, what its demand and its
supply are doing, and each number as evidence with the source it came from.

Demand is arrivals: jobs created per minute, from GitHub's job events. Where only starts are
measured (actions-runner-controller), arrivals are starts plus the queue's growth: at a maximum
starts cannot rise whatever the demand, so starts alone never rule a surge out. Supply is the
jobs running (busy runners): flat at a ceiling, or falling while jobs wait.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from bot.diagnostics.queue_age import queue_ruled_out
from bot.diagnostics.workload import behind
from bot.domain.diagnosis import Evidence, PastQueue, RunnerTypeState
from bot.fleet.measures import Signal, told_how_long
from bot.fleet.signals import EARLIER, FleetSignals

#: "Well above the baseline".
RATIO_LIKELY = 1.5
#: A runner type is queueing when a job waited this long, or this many jobs wait.
WAIT_AFFECTED_SECONDS = 600.0
QUEUED_AFFECTED = 5.0
#: The alert counts jobs waiting longer than this.
QUEUED_AFTER_SECONDS = 300.0
#: ...and beyond its usual queue at this time: a queue it has every day at this hour is no
#: incident (the usual's size, as the alert ranks queues, times this, plus this much).
USUAL_RATIO = 1.5
USUAL_MARGIN = 5.0
#: Runners risen over the half hour beyond this share of what they were, and this many more:
#: the autoscaler's runners are coming (no more is a stall).
RUNNERS_RISING = 1.1
RUNNERS_RISING_MIN = 3.0


#: How long a type's jobs wait, from the first of these measured: the longest current wait,
#: else (actions-runner-controller's metrics) the p90, else the mean, of the jobs started lately.
WAITS = (Signal.MAX_WAIT, Signal.QUEUE_TIME_P90, Signal.QUEUE_TIME_MEAN)


def queue_floor(fleet: FleetSignals, name: str, waited: float | None) -> float:
    """How many jobs not yet running make a queue. Where the longest wait is measured (job
    events), `queued` is the alert's own count of jobs waiting over 5 minutes. Elsewhere it
    counts every job not yet running, and is measured against the runners there are:
    registered, or, where only jobs are counted (a lean scrape), the jobs running (7 waiting
    behind 98 running are runners starting); `waited` is how long the jobs that started lately
    waited."""
    if fleet.value(Signal.MAX_WAIT, name) is not None:
        return QUEUED_AFFECTED
    registered = fleet.value(Signal.REGISTERED, name)
    if registered is not None:
        runners = registered
    else:
        runners = fleet.value(Signal.BUSY, name) or fleet.value(Signal.RUNNING, name) or 0.0
    if waited is not None and waited < QUEUED_AFTER_SECONDS:
        # Jobs that started lately waited less than the alert's 5 minutes: most of those not
        # yet running have just arrived, and only a count well above it is a queue.
        return max(2 * QUEUED_AFFECTED, 0.5 * runners)
    return max(QUEUED_AFFECTED, 0.25 * runners)


def recent_wait(fleet: FleetSignals, name: str) -> float | None:
    """How long `name`'s jobs wait: the longest current wait, or, where that is not measured
    (actions-runner-controller's metrics), the p90 (else the mean) wait of the jobs that
    started lately."""
    return fleet.value(signal, name) if (signal := _wait_signal(fleet, name)) else None


def _wait_signal(fleet: FleetSignals, name: str) -> Signal | None:
    """The first of WAITS measured now that says how long: the wait now's and the usual's."""
    return next((s for s in WAITS if told_how_long(s, fleet.value(s, name))), None)


def severity(fleet: FleetSignals, state: RunnerTypeState) -> float:
    """How badly `state` queues, as the alert ranks queues, with the wait `recent_wait` reads;
    where no job started lately to tell it (runners held by long jobs), the wait the queue
    implies: the jobs waiting over those arriving a minute (Little's law)."""
    waited = recent_wait(fleet, state.name)
    if waited is None and state.queued:
        arriving = fleet.value(Signal.ARRIVALS_HOUR, state.name)
        if arriving is None:
            arriving = fleet.value(Signal.STARTED_HOUR, state.name)
        if arriving:
            waited = 60.0 * state.queued / arriving
    return queue_size(state.queued, waited)


def runner_state(fleet: FleetSignals, name: str) -> RunnerTypeState:
    """One runner type as the fleet's signals describe it now."""

    def get(signal: Signal) -> float | None:
        return fleet.value(signal, name)

    queued, wait = get(Signal.QUEUED), get(Signal.MAX_WAIT)
    registered = get(Signal.REGISTERED)
    waited = recent_wait(fleet, name)
    busy = get(Signal.BUSY)
    floor = queue_floor(fleet, name, waited)
    queueing = (waited or 0.0) >= WAIT_AFFECTED_SECONDS or (queued or 0.0) >= floor
    queueing = queueing and not queue_ruled_out(fleet, name, QUEUED_AFFECTED)
    usual = usual_queue(fleet, name)
    beyond = True
    if usual is not None:
        size, usual_size = sizes(fleet, name, queued, usual)
        beyond = size > USUAL_RATIO * usual_size + USUAL_MARGIN
        beyond = beyond or (_waits_beyond_usual(wait, waited, usual) and (queued or 0.0) >= floor)
        beyond = beyond and scaling_up(fleet, name, usual) is None
    (queued_then, queued_week), (wait_then, wait_week) = (
        fleet.days_before(Signal.QUEUED, name),
        fleet.days_before(Signal.MAX_WAIT, name),
    )
    return RunnerTypeState(
        name=name,
        queued=queued,
        max_wait_seconds=wait,
        busy=busy if busy is not None else get(Signal.RUNNING),
        registered=registered,
        idle=get(Signal.IDLE),
        desired=get(Signal.DESIRED),
        max=get(Signal.MAX_RUNNERS),
        affected=queueing and beyond and (queued or 0.0) > 0,
        queueing=queueing and (queued or 0.0) > 0,
        usual=usual,
        since=fleet.since.get(name),
        yesterday=(
            PastQueue(queued=queued_then, max_wait_seconds=wait_then)
            if queued_then is not None
            else None
        ),
        week_ago=(
            PastQueue(queued=queued_week, max_wait_seconds=wait_week)
            if queued_week is not None
            else None
        ),
    )


def _waits_beyond_usual(longest: float | None, waited: float | None, usual: PastQueue) -> bool:
    """Where the longest current wait is not measured (actions-runner-controller's metrics),
    the jobs not yet running count those that arrived a moment ago: a batch that arrives at
    this time every day makes a usual queue their count alone cannot rise above. The jobs that
    started lately waiting well beyond their usual wait (and past the alert's 5 minutes) are a
    queue beyond the usual all the same."""
    if longest is not None or waited is None or usual.max_wait_seconds is None:
        return False
    return waited >= max(
        WAIT_AFFECTED_SECONDS, USUAL_RATIO * usual.max_wait_seconds + QUEUED_AFTER_SECONDS
    )


def scaling_up(fleet: FleetSignals, name: str, usual: PastQueue | None) -> str | None:
    """Where the longest current wait is not measured (actions-runner-controller's metrics),
    jobs not yet running while runners come for them and the jobs that started lately waiting
    no longer than usual are a scale-up under way, not a queue: a scale-up in progress is not a
    fault. Runners come where the autoscaler asks for more than it has and less than its
    maximum, and registered runners rose over the half hour; on a lean scrape (no runner
    counts), where the jobs running rose. What the scale-up is, in the report's words, or
    None."""
    waited = recent_wait(fleet, name)
    if fleet.value(Signal.MAX_WAIT, name) is not None or waited is None:
        return None
    if usual is None or usual.max_wait_seconds is None:
        return None
    if waited >= WAIT_AFFECTED_SECONDS or waited > USUAL_RATIO * usual.max_wait_seconds:
        return None
    desired, registered = fleet.value(Signal.DESIRED, name), fleet.value(Signal.REGISTERED, name)
    if desired is not None and registered is not None:
        ceiling = fleet.value(Signal.MAX_RUNNERS, name)
        if desired <= registered or (ceiling is not None and desired >= ceiling):
            return None
        signal = Signal.REGISTERED
    else:
        signal = busy_signal(fleet, name)
    now, before = fleet.value(signal, name), fleet.before(signal, name)
    then = before[-1] if before else None
    if now is None or then is None or not rose(now, then):
        return None
    coming = (
        f"the autoscaler adding runners for them (desired {desired:g}, registered {now:g}"
        f" from {then:g} half an hour before)"
        if signal is Signal.REGISTERED
        else f"runners coming for them (jobs running rose from {then:g} to {now:g} in half an hour)"
    )
    return (
        f"{coming}, the jobs started lately waiting {waited / 60.0:.0f} min as usual:"
        " a scale-up under way"
    )


def rose(now: float, then: float) -> bool:
    """Runners risen from `then` to `now` by more than they waver: coming, not stalled."""
    return now > RUNNERS_RISING * then + RUNNERS_RISING_MIN


def sizes(
    fleet: FleetSignals, name: str, queued: float | None, usual: PastQueue
) -> tuple[float, float]:
    """The queue now and the usual one, as the alert ranks queues, like with like: where the
    usual wait is not known, the jobs waiting alone. The usual size is the median of each
    usual day's (where each day was read), not the size of the median queue and median wait:
    a day of many jobs waiting briefly and one of a few waiting long are two usual days."""
    signal = _wait_signal(fleet, name) if usual.max_wait_seconds is not None else None
    waits = fleet.daily.get(signal, []) if signal else []
    each = [
        queue_size(day[name], waits[i].get(name) if i < len(waits) else None)
        for i, day in enumerate(fleet.daily.get(Signal.QUEUED, []))
        if name in day
    ]
    usual_size = (
        statistics.median(each) if each else queue_size(usual.queued, usual.max_wait_seconds)
    )
    return queue_size(queued, fleet.value(signal, name) if signal else None), usual_size


def queue_size(queued: float | None, waited: float | None) -> float:
    """A queue's size as the alert ranks queues: the longest wait in minutes plus the jobs."""
    return (waited or 0.0) / 60.0 + (queued or 0.0)


def usual_queue(fleet: FleetSignals, name: str) -> PastQueue | None:
    """The queue `name` usually has at this time (the median of the previous days), where
    measured; the wait is the longest, or where that is not measured the p90 (or mean) of the
    jobs started in the window, as for the queue now."""
    queued = fleet.base(Signal.QUEUED, name)
    if queued is None:
        return None
    signal = _wait_signal(fleet, name)
    return PastQueue(queued=queued, max_wait_seconds=fleet.base(signal, name) if signal else None)


def evidence(
    fleet: FleetSignals,
    signal: Signal,
    name: str,
    measure: str,
    *,
    unit: str = "",
    baseline: bool = True,
    workflows: tuple[str, ...] = (),
    now: float | None = None,
) -> Evidence:
    """The value of `signal` for `name` (or `now`), its baseline with the same time yesterday
    and a week before, and where it came from; with `workflows` behind a change, the job and
    the repository behind most of it, when one is."""
    origin = fleet.origin(signal, name)
    yesterday, week_ago = fleet.days_before(signal, name) if baseline else (None, None)
    job, repository = behind(fleet, signal, name) if workflows else ("", "")
    return Evidence(
        runner_type=name,
        measure=measure,
        now=fleet.value(signal, name) if now is None else now,
        baseline=fleet.base(signal, name) if baseline else None,
        yesterday=yesterday,
        week_ago=week_ago,
        unit=unit,
        workflows=workflows,
        job=job,
        repository=repository,
        source=origin.value if origin else "",
    )


@dataclass(frozen=True)
class Demand:
    """Jobs asked for per minute now and usually; `measured` says how."""

    now: float
    usual: float
    measured: str  # "arrivals", "starts and the queue's growth", or "starts"


def demand(fleet: FleetSignals, name: str) -> Demand | None:
    """Arrivals, or starts plus the queue's growth; None when neither can be told."""
    arrivals = fleet.value(Signal.ARRIVALS_PER_MINUTE, name)
    usual = fleet.base(Signal.ARRIVALS_PER_MINUTE, name)
    if arrivals is not None and usual is not None:
        return Demand(arrivals, usual, "arrivals")
    started = fleet.value(Signal.STARTED_PER_MINUTE, name)
    usual_starts = fleet.base(Signal.STARTED_PER_MINUTE, name)
    if started is None or usual_starts is None:
        return None
    queued = fleet.value(Signal.QUEUED, name)
    then = fleet.earlier.get(Signal.QUEUED, [])
    if queued is None or not then or name not in then[0]:
        return Demand(started, usual_starts, "starts")
    # The growth over the reading closest to the rate window (15 minutes for 10), so that
    # both parts count the same stretch of time as nearly as they can. A queue that shrank
    # counts too: runners catching up start jobs that arrived before, not more of them.
    span = EARLIER[0].total_seconds() / 60.0
    growth = (queued - then[0][name]) / span
    return Demand(max(started + growth, 0.0), usual_starts, "starts and the queue's growth")


def waited_through(fleet: FleetSignals, name: str) -> bool:
    """Jobs were waiting at each earlier reading too (where one was made): a queue the level
    held against, not one that just formed."""
    return all(then.get(name, 0.0) > 0 for then in fleet.earlier.get(Signal.QUEUED, []))


def significant_rise(now: float, usual: float, minutes: float, z: float) -> bool:
    """More jobs in the window than chance explains: counts of jobs are Poisson, so at a few a
    minute, 21 where 12 are usual is noise (z 1.6), 50 is a surge (z 4.8)."""
    counted, expected = now * minutes, usual * minutes
    return (counted - expected) / math.sqrt(counted + expected + 1.0) >= z


@dataclass(frozen=True)
class Supply:
    """Jobs running (busy runners) now and 15, 30 minutes before, and usually; and, where
    measured, the most running at once in the window ending at each of those moments (the
    peaks: ephemeral runners come and go beneath a ceiling, the peaks stay at it)."""

    now: float
    before: tuple[float, ...]
    usual: float | None
    peaks: tuple[float, ...] = ()

    def _levels(self) -> tuple[float, tuple[float, ...]]:
        if len(self.peaks) > 1:
            return self.peaks[0], self.peaks[1:]
        return self.now, self.before

    @property
    def flat(self) -> bool:
        """Held at one level the last half hour: a ceiling. Runners coming and going beneath
        a few dozen waver by chance (about the square root of their number)."""
        now, before = self._levels()
        levels = (now, *before)
        low = min(levels)
        return len(levels) > 1 and max(levels) <= low + max(0.07 * low + 1.0, math.sqrt(low))

    @property
    def exact(self) -> bool:
        """The peaks measured, and the same number each time: a ceiling, whatever the queue."""
        return len(self.peaks) > 1 and min(self.peaks) == max(self.peaks)

    @property
    def catching_up(self) -> bool:
        """Clearly more than half an hour ago, and not far below usual: new runners are coming
        online (a trickle of them, far below usual, is not a scale-up that works)."""
        now, before = self._levels()
        rising = bool(before) and now >= 1.15 * min(before) + 2.0
        return rising and (self.usual is None or self.now >= 0.5 * self.usual)

    @property
    def falling(self) -> bool:
        """Clearly fewer than half an hour ago, by more than runners coming and going waver
        by: runners going and not coming back."""
        now, before = self._levels()
        if not before:
            return False
        if _fell(now, before):
            return True
        # Busy read at each moment fell as far, and the peaks fell too (a ceiling keeps them).
        if not self.peaks or not self.before or not _fell(self.now, self.before):
            return False
        high = max(self.peaks[1:])
        return self.peaks[0] <= high - math.sqrt(high)

    @property
    def top(self) -> float:
        """The level runners are held at: the peak where measured."""
        return self.peaks[0] if self.peaks else self.now


def _fell(now: float, before: tuple[float, ...]) -> bool:
    """Clearly below the highest of `before`, by more than runners coming and going waver by."""
    high = max(before)
    return now <= high - max(0.15 * high + 2.0, 2.0 * math.sqrt(high))


def busy_signal(fleet: FleetSignals, name: str) -> Signal:
    """Which signal counts `name`'s busy runners: jobs running where measured, else busy."""
    return Signal.RUNNING if fleet.value(Signal.RUNNING, name) is not None else Signal.BUSY


def supply(fleet: FleetSignals, name: str) -> Supply | None:
    """Busy runners over the last half hour: jobs running (job events) or busy (a gauge), with
    the peaks of jobs running where measured."""
    peak = fleet.value(Signal.RUNNING_PEAK, name)
    peaks_before = fleet.before(Signal.RUNNING_PEAK, name)
    peaks = (peak, *peaks_before) if peak is not None and peaks_before else ()
    for signal in (Signal.RUNNING, Signal.BUSY):
        now = fleet.value(signal, name)
        before = fleet.before(signal, name)
        if now is not None and before:
            return Supply(now, tuple(before), fleet.base(signal, name), peaks)
    return None


def ratio_of(now: float | None, base: float | None, floor: float) -> float | None:
    """`now` against `base` (at least `floor`); None where either is unknown."""
    if now is None or base is None:
        return None
    return now / max(base, floor)
