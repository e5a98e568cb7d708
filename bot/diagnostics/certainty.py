"""How sure a diagnosis is. "High" only where the primary cause's signature holds
unambiguously; a queue that may be gone or young, a queue little beyond the usual, more work
with the last hour's arrivals as usual, and a cause told from signals that other causes leave
the same, are medium at most.
"""

from __future__ import annotations

from bot.diagnostics.evidence import RATIO_LIKELY, queue_floor, sizes, supply
from bot.diagnostics.inference import below_usual_guess, demand_as_usual
from bot.diagnostics.job_time import completing_slower, runners_not_grown, timed_by_few
from bot.diagnostics.runner_checks import Check
from bot.domain.diagnosis import Cause, Confidence, RunnerTypeState, Verdict
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals

CONFIDENCE_ORDER = (Confidence.LOW, Confidence.MEDIUM, Confidence.HIGH)
#: A queue under this many times the usual one is the queue the type has every day at this
#: hour, only larger: beyond the usual, but no certainty of an incident.
NEAR_USUAL_RATIO = 2.0
#: Jobs not yet running that were not waiting a quarter of an hour before, beyond this share
#: of them: a queue that has just formed (how long its jobs waited is not measured).
YOUNG_SHARE = 0.5
#: What the runners themselves say (registered, offline, idle, failed to start); without any of
#: them, runners failing are told from busy runners alone.
RUNNER_SIGNALS = (Signal.REGISTERED, Signal.OFFLINE, Signal.IDLE, Signal.FAILED_RUNNERS)


def confidence_of(primary: Cause, verdicts: dict[Cause, Check]) -> Confidence:
    """High when every cause had its evidence; medium when some could not be measured; low
    when the maximum is named without knowing whether demand or job time changed."""
    unmeasured = [c for c, (v, _) in verdicts.items() if v is Verdict.NO_DATA]
    if primary is Cause.AUTOSCALING_LIMITS and (
        Cause.INCREASED_WORKLOAD in unmeasured or Cause.LONG_RUNNING_JOBS in unmeasured
    ):
        return Confidence.LOW
    return Confidence.MEDIUM if unmeasured else Confidence.HIGH


def at_most_medium(confidence: Confidence) -> Confidence:
    return min(confidence, Confidence.MEDIUM, key=CONFIDENCE_ORDER.index)


def unproven(
    fleet: FleetSignals,
    state: RunnerTypeState,
    primary: Cause,
    verdicts: dict[Cause, dict[str, Check]],
) -> bool:
    """Whether `primary`, found for `state`, is no certainty: its queue in doubt or near the
    usual one, or the cause's signature not unambiguous."""
    return (
        queue_in_doubt(fleet, state)
        or near_usual(fleet, state)
        or (
            primary is Cause.AUTOSCALING_LIMITS
            and (
                _limit_unproven(fleet, state)
                # A ceiling is the cause only at the usual demand; more, if too few more to
                # tell from chance, is not shown usual.
                or not demand_as_usual(fleet, state.name, within=RATIO_LIKELY)
            )
        )
        # More work told from the window alone, the last hour's arrivals as usual: a burst.
        or (primary is Cause.INCREASED_WORKLOAD and demand_as_usual(fleet, state.name))
        or (primary is Cause.LONG_RUNNING_JOBS and _slower_unproven(fleet, state, verdicts))
        or (primary is Cause.INFRASTRUCTURE and _failure_unproven(fleet, state))
    )


def queue_in_doubt(fleet: FleetSignals, state: RunnerTypeState) -> bool:
    """Where the longest current wait is not measured (actions-runner-controller's metrics),
    jobs waiting now are told by those that started lately, which waited before now: the queue
    may have drained since, unless the jobs not yet running are many (twice a queue's count);
    and where most of them were not waiting a quarter of an hour before, they may all have
    just arrived (a batch fired on the hour): how long they wait is yet to be seen."""
    if state.max_wait_seconds is not None:
        return False
    queued = state.queued or 0.0
    then = fleet.quarter_hour_ago(Signal.QUEUED, state.name)
    young = then is not None and queued - then > YOUNG_SHARE * queued
    return young or queued < 2 * queue_floor(fleet, state.name, None)


def near_usual(fleet: FleetSignals, state: RunnerTypeState) -> bool:
    """`state` queues beyond its usual, but less than twice the usual queue (as the alert ranks
    queues): a type that queues every day at this hour, a little worse today."""
    if state.usual is None:
        return False
    size, usual_size = sizes(fleet, state.name, state.queued, state.usual)
    return size < NEAR_USUAL_RATIO * usual_size


def _limit_unproven(fleet: FleetSignals, state: RunnerTypeState) -> bool:
    """A ceiling guessed from busy runners (no maximum measured) where its signature cannot
    hold unambiguously: below the level usually busy at this hour, or with no runner seen
    idle or not (job events alone: runners starting or failing are not seen), or with some
    idle while jobs wait (a ceiling leaves none)."""
    return state.max is None and (
        below_usual_guess(fleet, state) or state.idle is None or state.idle > 0
    )


def _slower_unproven(
    fleet: FleetSignals, state: RunnerTypeState, verdicts: dict[Cause, dict[str, Check]]
) -> bool:
    """Long-running jobs told from few jobs with no clear rise of the time a job holds its
    runner, or with no ceiling holding the runners and none added, or at a ceiling without
    the jobs completing clearly slower on their own."""
    limit = verdicts[Cause.AUTOSCALING_LIMITS][state.name][0]
    return (
        timed_by_few(fleet, state.name)
        or (limit is Verdict.RULED_OUT and runners_not_grown(fleet, state.name))
        or (limit is Verdict.LIKELY and not completing_slower(fleet, state.name))
    )


def _failure_unproven(fleet: FleetSignals, state: RunnerTypeState) -> bool:
    """Runners failing told from busy runners alone (no runner counted registered, offline,
    idle or failed: a lean scrape, or job events), short of usual but not clearly falling: a
    ceiling whose runners come and go more than usual reads the same."""
    if any(fleet.value(signal, state.name) is not None for signal in RUNNER_SIGNALS):
        return False
    busy = supply(fleet, state.name)
    return busy is None or not busy.falling
