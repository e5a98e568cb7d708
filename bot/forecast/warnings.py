"""When to warn before the alert: per runner type, a heads-up once the queue is projected to
cross the alert's threshold within the horizon, kept while the trend holds, ended when it
reverses or when the threshold is crossed (the alert then speaks).

A heads-up needs the longest wait already HALFWAY to the threshold and risen over the last
quarter hour: a queue further off is usually caught by the runners the autoscaler adds, and one
holding a steady level just under the threshold is no news.

No flapping: a heads-up starts only after the crossing is projected at RAISE_CHECKS checks in a
row; it ends as back to normal only after CLEAR_CHECKS checks in a row that project no crossing
even over a longer horizon (CLEAR_HORIZON × the horizon); and a runner type whose heads-up ended
gets no new one for COOL_DOWN seconds, unless its alert fired meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.domain.heads_up import Phase
from bot.forecast.projection import RISE_SECONDS, QueueState, Threshold, crossing, project

RAISE_CHECKS = 2
CLEAR_CHECKS = 10
CLEAR_HORIZON = 1.5
COOL_DOWN = 1800.0
#: A heads-up needs the longest wait to have risen by this share of the time since it was read
#: before (a queue holding a steady level just under the threshold is no news).
RISE_SHARE = 0.2


@dataclass(frozen=True)
class HeadsUp:
    """One runner type's heads-up as it should read now."""

    runner_type: str
    phase: Phase
    started_at: float
    at: float
    state: QueueState
    #: Minutes until the threshold is crossed at this rate (None once it is not projected).
    crossing_in: float | None
    #: The queue and the longest wait projected at the crossing (or the horizon).
    projected_queued: float
    projected_wait: float

    @property
    def growth_per_minute(self) -> float:
        return self.state.arrivals_per_minute - self.state.starts_per_minute


@dataclass
class _Watch:
    raising: int = 0
    clearing: int = 0
    active: HeadsUp | None = None
    ended_at: float | None = None


@dataclass
class WarningBoard:
    """The heads-ups of one channel's runner types, stepped once a check."""

    threshold: Threshold = field(default_factory=Threshold)
    horizon_minutes: float = 30.0
    _watches: dict[str, _Watch] = field(default_factory=dict)

    def step(self, states: dict[str, QueueState]) -> list[HeadsUp]:
        """Take one check's queues; the heads-ups that start, change or end with it."""
        changed = []
        for name in sorted(set(states) | set(self._watches)):
            watch = self._watches.setdefault(name, _Watch())
            state = states.get(name)
            if state is None:
                continue
            found = self._check(name, watch, state)
            if found is not None:
                changed.append(found)
        return changed

    def resume(self, runner_type: str, started_at: float, at: float) -> None:
        """A heads-up out since `started_at` (found in the store): it is edited or ended, not
        raised again."""
        quiet = QueueState(at, (), 0.0, 0.0)
        watch = self._watches.setdefault(runner_type, _Watch())
        watch.active = HeadsUp(runner_type, Phase.WARNING, started_at, at, quiet, None, 0.0, 0.0)

    def ended(self, runner_type: str, at: float) -> None:
        """A heads-up that ended at `at` (found in the store): the cool-down runs from there."""
        self._watches.setdefault(runner_type, _Watch()).ended_at = at

    def active(self) -> list[HeadsUp]:
        return [w.active for w in self._watches.values() if w.active is not None]

    def _check(self, name: str, watch: _Watch, state: QueueState) -> HeadsUp | None:
        minutes = crossing(state, self.horizon_minutes, self.threshold)
        if minutes == 0.0:
            watch.raising = 0
            if watch.active is None:
                return None  # the alert's condition holds: the alert speaks, not a heads-up
            return self._end(watch, state, Phase.FIRED)
        if watch.active is None:
            cooling = watch.ended_at is not None and state.at - watch.ended_at < COOL_DOWN
            halfway = state.longest_wait() >= HALFWAY * self.threshold.wait_seconds
            heading = minutes is not None and not cooling and halfway and _rising(state)
            watch.raising = watch.raising + 1 if heading else 0
            if watch.raising < RAISE_CHECKS:
                return None
            watch.raising, watch.clearing = 0, 0
            watch.active = self._heads_up(name, Phase.WARNING, state, minutes, state.at)
            return watch.active
        longer = crossing(state, self.horizon_minutes * CLEAR_HORIZON, self.threshold)
        watch.clearing = watch.clearing + 1 if longer is None else 0
        if watch.clearing >= CLEAR_CHECKS:
            return self._end(watch, state, Phase.NORMAL)
        watch.active = self._heads_up(name, Phase.WARNING, state, minutes, watch.active.started_at)
        return watch.active

    def _end(self, watch: _Watch, state: QueueState, phase: Phase) -> HeadsUp:
        assert watch.active is not None
        ended = self._heads_up(
            watch.active.runner_type, phase, state, None, watch.active.started_at
        )
        watch.active, watch.clearing = None, 0
        watch.ended_at = None if phase is Phase.FIRED else state.at
        return ended

    def _heads_up(
        self, name: str, phase: Phase, state: QueueState, minutes: float | None, started: float
    ) -> HeadsUp:
        ahead = project(
            state, minutes if minutes is not None else self.horizon_minutes, self.threshold
        )
        return HeadsUp(
            runner_type=name,
            phase=phase,
            started_at=started,
            at=state.at,
            state=state,
            crossing_in=minutes,
            projected_queued=ahead.queued,
            projected_wait=ahead.wait_seconds,
        )


#: A heads-up needs the longest wait already at this share of the threshold: further off, the
#: autoscaler adding runners usually catches the queue before it gets there.
HALFWAY = 0.5


def _rising(state: QueueState) -> bool:
    before = state.longest_wait_before
    if before is None:
        return True
    return state.longest_wait() - before >= RISE_SHARE * RISE_SECONDS
