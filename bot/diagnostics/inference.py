"""Causes told by what the other checks leave, not by a signature of their own, each with the
confidence that deserves (bot.diagnostics.checks ranks them with the rest):

- runners not coming: no cause found, demand and job time measured and as usual, far fewer
  jobs started over the hour than arrived, or no more runners busy than usual while jobs wait
  through half an hour and the jobs that started waited longer than usual; or a ceiling
  guessed at the level usually busy at this hour, which the usual demand fitted beneath
  without a queue, the usual load by Little's law included (infrastructure, low confidence);
  or more runners busy than usual, rising or held at no one level, while the jobs that
  started waited many times their usual wait: runners slow to come (infrastructure, low
  confidence);
- busy runners held at one level below the usual (no maximum measured) that start far fewer
  jobs than a ceiling turns over (each runner a job's usual time and its next one's start,
  about the usual wait): jobs left running hold them, new runners do not come
  (infrastructure, medium confidence);
- a ceiling filled above the usual: busy runners held well above those usually busy at this
  hour while jobs wait, where more demand could not be told from chance (more work, medium
  confidence); unless the last hour's demand, measured, keeps clearly fewer busy and the jobs
  that started waited many times their usual: runners too slow to come (infrastructure, low
  confidence); so too where the most busy at once rose clearly above their level of an hour
  before while jobs waited all the while (a ceiling stops them rising);
- work new to the type (workflows that usually send it next to none) filling a ceiling,
  with demand above usual if too little to tell from chance (more work, medium confidence);
- runners failing across the fleet: runners failing, or held at a ceiling guessed below the
  usual level, on half the types queueing (three or more, or two with runners failing), or
  every type queueing short of runners or held, their queues begun together; which counts
  with them the types held at a ceiling guessed at any level, those whose cause was only
  guessed, those with no cause nor anything against runners failing, and those with more
  work where fewer jobs started than usual (infrastructure, low confidence);
- a queue far beyond the usual one at the usual ceiling of a type that queues every day: the
  ceiling did not come down and jobs take their usual time (more work, low confidence).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from bot.diagnostics.busy_runners import (
    filled_above_usual,
    not_coming,
    not_turning_over,
    rose_beneath_queue,
    unfilled_ceiling,
    waits_as_usual,
)
from bot.diagnostics.evidence import (
    QUEUED_AFFECTED,
    WAIT_AFFECTED_SECONDS,
    Supply,
    demand,
    supply,
)
from bot.diagnostics.levels import fell_over_the_hour, holds_a_ceiling
from bot.diagnostics.runner_checks import SHORT_OF_USUAL, Check
from bot.diagnostics.workload import work_new_to
from bot.domain.diagnosis import Cause, Confidence, Evidence, RunnerTypeState, Verdict
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals
from bot.render.diagnosis_text import amount

#: Busy runners held at this share of those usually busy at this hour or more: a ceiling the
#: usual demand fits beneath, no limit that explains a queue at usual demand and job time.
CEILING_AT_USUAL = 0.9
#: ...with demand no more than this times usual: not merely short of telling from chance.
DEMAND_AS_USUAL = 1.2
#: Jobs waiting this many times the usual queue of a type that queues every day at its ceiling.
QUEUE_BEYOND_USUAL = 1.75
#: Runners failing, or held below their usual level, on this many of the types queueing, and
#: this share of them: one cause across the fleet.
FLEET_WIDE_TYPES = 3
FLEET_WIDE_SHARE = 1 / 2
#: ...or runners failing on this many (a small fleet's half), by their own signature or by
#: elimination.
FLEET_WIDE_FAILING = 2
#: ...or, where every type queueing (three or more) is held at a ceiling or short of runners,
#: runners failing on one and short on another, their queues begun within this many seconds
#: of each other where measured: runners stopped coming everywhere at once.
FLEET_WIDE_TOGETHER_SECONDS = 1800.0


#: Causes told by a type's own signature: a type found with one keeps it across the fleet.
OWN_SIGNATURE = (Cause.RESOURCE_CONSTRAINTS, Cause.LONG_RUNNING_JOBS, Cause.INFRASTRUCTURE)

#: A cause told by what the others leave, with the confidence it deserves.
Guess = tuple[Cause, Confidence]


def infer(
    verdicts: dict[Cause, dict[str, Check]], fleet: FleetSignals, state: RunnerTypeState
) -> Guess | None:
    """Add to `verdicts` the cause the others leave for `state`, if one; it and its
    confidence."""
    name = state.name
    if below_usual_guess(fleet, state) and (stalled := not_turning_over(fleet, state)):
        # Held below the usual level over the half hour, a lowered maximum or runners not
        # coming: a ceiling turns over, runners held by jobs left running do not. (Above the
        # usual level, work new to the type may take longer than the usual job time; the jobs
        # completing do not show the long ones still running.)
        if _likely(verdicts, name) == [Cause.AUTOSCALING_LIMITS]:
            why = "held, but not turning over as runners at a ceiling do (see infrastructure)"
            _not_a_ceiling(verdicts, name, stalled, why)
            return Cause.INFRASTRUCTURE, Confidence.MEDIUM
        if not _likely(verdicts, name) and fell_over_the_hour(fleet, name) is not None:
            # No ceiling already (fallen over the hour): the same runners held, not replaced.
            verdicts[Cause.INFRASTRUCTURE][name] = (Verdict.LIKELY, (stalled,))
            return Cause.INFRASTRUCTURE, Confidence.MEDIUM
    if _eliminated(verdicts, fleet, state) and (found := not_coming(fleet, state)):
        verdicts[Cause.INFRASTRUCTURE][name] = (Verdict.LIKELY, (found,))
        return Cause.INFRASTRUCTURE, Confidence.LOW
    if not _filled(verdicts, name):
        return None
    # A ceiling guessed from busy runners (no maximum measured) that no work fills, or that
    # busy runners rose through while jobs waited: runners too slow to come. Not where work
    # new to the type holds most of the runners beyond the usual: its jobs' time is not the
    # usual one.
    too_slow = (
        (unfilled_ceiling, "held above the level the demand needs"),
        (rose_beneath_queue, "risen while jobs waited"),
    )
    guessed = state.max is None and work_new_to(fleet, name, holding_the_rise=True) is None
    for ceiling_against, why in too_slow if guessed else ():
        if (slow := ceiling_against(fleet, state)) is not None:
            _not_a_ceiling(verdicts, name, slow, f"{why}: no ceiling holds it (see infrastructure)")
            return Cause.INFRASTRUCTURE, Confidence.LOW
    more_work: tuple[tuple[Callable[[], Evidence | None], Confidence], ...] = (
        (lambda: filled_above_usual(fleet, state), Confidence.MEDIUM),
        (
            # At usual demand, only where the new work holds most of the extra runners: its
            # jobs take longer than the type's own.
            lambda: work_new_to(fleet, name, holding_the_rise=demand_as_usual(fleet, name)),
            Confidence.MEDIUM,
        ),
        (lambda: _beyond_usual_ceiling(fleet, state), Confidence.LOW),
    )
    for told, confidence in more_work:
        if (found := told()) is not None:
            workload = verdicts[Cause.INCREASED_WORKLOAD]
            workload[name] = (Verdict.LIKELY, (found, *workload[name][1]))
            return Cause.INCREASED_WORKLOAD, confidence
    return None


def _not_a_ceiling(
    verdicts: dict[Cause, dict[str, Check]], name: str, found: Evidence, why: str
) -> None:
    """Runners failing for `name`, told by `found`; the ceiling ruled out, saying `why`."""
    infra = verdicts[Cause.INFRASTRUCTURE]
    infra[name] = (Verdict.LIKELY, (found, *infra[name][1]))
    first, *rest = verdicts[Cause.AUTOSCALING_LIMITS][name][1]
    verdicts[Cause.AUTOSCALING_LIMITS][name] = (
        Verdict.RULED_OUT,
        (first.model_copy(update={"why": why}), *rest),
    )


def _beyond_usual_ceiling(fleet: FleetSignals, state: RunnerTypeState) -> Evidence | None:
    """A type that queues at its ceiling every day at this hour, held at the usual level,
    with far more jobs waiting than usual: the ceiling did not come down, and jobs take their
    usual time, so more jobs came over the hours before than the last hour can tell from
    chance (a few more a minute add up at a ceiling)."""
    busy, before = supply(fleet, state.name), state.usual
    if busy is None or busy.usual is None or before is None or not _at_usual_level(busy):
        return None
    usual_queue, queued = before.queued or 0.0, state.queued or 0.0
    if usual_queue < QUEUED_AFFECTED or queued < QUEUE_BEYOND_USUAL * usual_queue:
        return None
    return Evidence(
        runner_type=state.name,
        measure="jobs waiting at the usual ceiling",
        now=queued,
        baseline=usual_queue,
        source=origin.value if (origin := fleet.origin(Signal.QUEUED, state.name)) else "",
        why=(
            f"{queued / usual_queue:.1f}x the usual queue behind busy runners held at the usual"
            f" {amount(busy.usual, '')}: the ceiling did not come down and jobs take their usual"
            " time, so more jobs came than usual (over hours, a few more a minute)"
        ),
    )


def _eliminated(
    verdicts: dict[Cause, dict[str, Check]], fleet: FleetSignals, state: RunnerTypeState
) -> bool:
    """No cause found for `state`, with demand and job time measured and as usual (job time
    unmeasured counts where no ceiling holds and no more runners are busy than usual); or
    only a ceiling guessed from busy runners held at the level usually busy at this hour (no
    maximum measured): the usual demand fitted beneath it on the usual days without a
    queue."""
    found = {cause: verdicts[cause][state.name][0] for cause in Cause}
    usual = found[Cause.INCREASED_WORKLOAD] is Verdict.RULED_OUT and (
        found[Cause.LONG_RUNNING_JOBS] is Verdict.RULED_OUT
        or (
            found[Cause.LONG_RUNNING_JOBS] is Verdict.NO_DATA
            and found[Cause.AUTOSCALING_LIMITS] is Verdict.RULED_OUT
            and _no_busier(fleet, state.name)
        )
    )
    others = _likely(verdicts, state.name)
    if others == [Cause.AUTOSCALING_LIMITS] and state.max is None:
        busy, before = supply(fleet, state.name), state.usual
        return (
            usual
            and demand_as_usual(fleet, state.name)
            and busy is not None
            and _at_usual_level(busy, usual_load(fleet, state.name))
            and before is not None
            and (before.queued or 0.0) < QUEUED_AFFECTED
            and (before.max_wait_seconds or 0.0) < WAIT_AFFECTED_SECONDS
        )
    return usual and not others


def _no_busier(fleet: FleetSignals, name: str) -> bool:
    """No more runners busy at once than usual, at demand no more than usual: where no job
    completed to be timed and no ceiling holds them, longer jobs would keep more busy."""
    busy = supply(fleet, name)
    return (
        busy is not None
        and busy.usual is not None
        and busy.top <= busy.usual
        and demand_as_usual(fleet, name, 1.0)
    )


def _at_usual_level(busy: Supply, load: float | None = None) -> bool:
    """Busy runners held at the level usually busy at this hour (or the usual `load`, where
    higher), or above."""
    if busy.usual is None:
        return False
    return busy.top >= CEILING_AT_USUAL * max(busy.usual, load or 0.0)


def usual_load(fleet: FleetSignals, name: str) -> float | None:
    """Runners the usual demand keeps busy on average at this hour (Little's law: jobs started
    a minute over the hour times the minutes a job runs). A few busy runners read at one moment
    waver below it: a ceiling at that reading is full at the usual demand, and queues."""
    started, seconds = fleet.base(Signal.STARTED_HOUR, name), fleet.base(Signal.DURATION_MEAN, name)
    if started is None or seconds is None:
        return None
    return started * seconds / 60.0


def demand_as_usual(fleet: FleetSignals, name: str, within: float = DEMAND_AS_USUAL) -> bool:
    """Demand no more than `within` times usual (by default a little above): over the last hour
    where measured (ten minutes of a few jobs a minute vary by half), else over the window."""
    hour, usual_hour = (
        fleet.value(Signal.ARRIVALS_HOUR, name),
        fleet.base(Signal.ARRIVALS_HOUR, name),
    )
    if hour is not None and usual_hour is not None:
        return hour <= within * usual_hour
    asked = demand(fleet, name)
    return asked is not None and asked.now <= within * asked.usual


def _likely(verdicts: dict[Cause, dict[str, Check]], name: str) -> list[Cause]:
    """The causes found likely for `name` so far."""
    return [cause for cause in Cause if verdicts[cause][name][0] is Verdict.LIKELY]


def _filled(verdicts: dict[Cause, dict[str, Check]], name: str) -> bool:
    """A ceiling holds `name` and neither more demand nor longer jobs were told apart."""
    found = _likely(verdicts, name)
    return Cause.AUTOSCALING_LIMITS in found and not any(
        c in found
        for c in (Cause.INCREASED_WORKLOAD, Cause.LONG_RUNNING_JOBS, Cause.INFRASTRUCTURE)
    )


def below_usual_guess(fleet: FleetSignals, state: RunnerTypeState) -> bool:
    """A ceiling guessed from busy runners (no maximum measured) below the level usually busy
    at this hour, or below the usual load: a lowered maximum, or runners failing to start where
    no source sees them (machines that never register) - the same numbers."""
    busy = supply(fleet, state.name)
    if state.max is not None or busy is None or busy.usual is None:
        return False
    # Busy runners read at one moment waver: below them by a margin. The usual load is an
    # average over the hour's jobs: below it by less.
    load = usual_load(fleet, state.name)
    return busy.top < SHORT_OF_USUAL * busy.usual or (
        load is not None and busy.top < CEILING_AT_USUAL * load
    )


def across_fleet(
    verdicts: dict[Cause, dict[str, Check]],
    fleet: FleetSignals,
    affected: list[RunnerTypeState],
    guessed: dict[str, Guess],
) -> dict[str, Guess]:
    """Runners failing, or busy runners held at a ceiling guessed below their usual level (a
    maximum lowered and machines that never register read the same) or fallen over the hour
    with no cause of their own, on half the types
    queueing, three or more of them or two with runners failing, or every type queueing
    short of runners or held, its queue begun with the others' (`_stopped_together`): one
    cause across the fleet (the cloud, GitHub's registration) is likelier than one of each
    type's own, or than maxima lowered on many types at once. Counted with them (low
    confidence): the types held at a ceiling guessed at any level (runners that stop coming
    leave those there busy), those whose cause was only guessed from what the others leave,
    those with no cause found and nothing against runners failing, and those with more work
    where fewer jobs started over the hour than usual (more work brings runners, unless they
    do not come). A type with a cause told by its own signature keeps it. Returns the types
    so counted."""
    infra = verdicts[Cause.INFRASTRUCTURE]
    names = [state.name for state in affected]
    likely = {name: _likely(verdicts, name) for name in names}
    failing = [n for n in names if Cause.INFRASTRUCTURE in likely[n]]
    # Ceilings guessed from busy runners (no maximum measured), with no other cause; those
    # below the usual level count as short of runners. Once the fleet is, a ceiling at any
    # level reads the same: runners that stopped coming leave those already there busy.
    ceilings = {
        state.name: state
        for state in affected
        if likely[state.name] == [Cause.AUTOSCALING_LIMITS] and state.max is None
    }
    # Not those held at one number exactly and turning over as a ceiling does: a maximum.
    held = [
        name
        for name, state in ceilings.items()
        if below_usual_guess(fleet, state) and not holds_a_ceiling(fleet, name)
    ]
    # No ceiling, as busy runners fell over the hour, and no cause of their own: short too.
    fallen = [n for n in names if not likely[n] and fell_over_the_hour(fleet, n) is not None]
    short = failing + held + fallen
    enough = len(short) >= FLEET_WIDE_TYPES or len(failing) >= FLEET_WIDE_FAILING
    if not _stopped_together(affected, failing, short, {*ceilings, *guessed}) and (
        not enough or len(short) < FLEET_WIDE_SHARE * len(names)
    ):
        return {}
    counted: dict[str, Guess] = {}
    for name in names:
        found = likely[name]
        if any(cause in found for cause in OWN_SIGNATURE) or not (
            name in ceilings
            or name in guessed
            # Nothing found, nor said against runners failing (starting, or quick as usual).
            or (not found and not infra[name][1] and not waits_as_usual(fleet, name))
            or (Cause.INCREASED_WORKLOAD in found and _fewer_started(fleet, name))
        ):
            continue
        evidence = Evidence(
            runner_type=name,
            measure="runner types short of runners",
            now=float(len(short)),
            baseline=None,
            why=(
                f"{len(short)} of the {len(names)} types queueing with runners not coming or"
                " held below their usual level: one cause across the fleet (the cloud, or"
                " GitHub's registration) likelier than one of each type's own"
            ),
        )
        infra[name] = (Verdict.LIKELY, (evidence, *infra[name][1]))
        counted[name] = Cause.INFRASTRUCTURE, Confidence.LOW
    return counted


def _fewer_started(fleet: FleetSignals, name: str) -> bool:
    """Fewer jobs started over the last hour than usually start, while more arrived than
    usually start: more work brings the autoscaler's runners, and more jobs start, unless the
    runners do not come."""
    started, usual = fleet.value(Signal.STARTED_HOUR, name), fleet.base(Signal.STARTED_HOUR, name)
    arrived = fleet.value(Signal.ARRIVALS_HOUR, name)
    if started is None or usual is None or arrived is None:
        return False
    return started < SHORT_OF_USUAL * usual and arrived > usual


def _stopped_together(
    affected: list[RunnerTypeState], failing: list[str], short: list[str], others: Iterable[str]
) -> bool:
    """Three or more types queueing, every one of them short of runners, held at a ceiling or
    with a cause only guessed from what the others leave; one with runners failing by its own
    signature and another short; where their queues began is measured, within half an hour of
    each other. Runners that stop coming on every type at once leave those already there busy;
    maxima are not lowered on every type at once."""
    names = {state.name for state in affected}
    if len(names) < FLEET_WIDE_TYPES or not failing or len(short) < 2:
        return False
    if not names <= set(short) | set(others):
        return False
    began = [state.since for state in affected if state.since is not None]
    return len(began) < len(names) or max(began) - min(began) <= FLEET_WIDE_TOGETHER_SECONDS


def failing_across(verdicts: dict[Cause, dict[str, Check]], names: list[str]) -> Guess | None:
    """Runners failing on most of the types queueing (more than half, and at least
    FLEET_WIDE_FAILING; with no other cause of their own, as jobs failing or slower) is the
    fleet's cause, whatever the worst type shows besides: one cause across the fleet explains
    the alert better than the worst type's own. Medium confidence on FLEET_WIDE_TYPES types or
    more, low on fewer. None where not so."""
    failing = [
        name
        for name in names
        if [c for c in _likely(verdicts, name) if c in OWN_SIGNATURE] == [Cause.INFRASTRUCTURE]
    ]
    if len(failing) < FLEET_WIDE_FAILING or len(failing) <= FLEET_WIDE_SHARE * len(names):
        return None
    many = len(failing) >= FLEET_WIDE_TYPES
    return Cause.INFRASTRUCTURE, Confidence.MEDIUM if many else Confidence.LOW
