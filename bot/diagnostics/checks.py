"""The runbook's checks as pure functions: fleet signals in, a ranked report out.

For each runner type with jobs waiting long, each cause gets a verdict from its own evidence,
comparing now with the baseline (the same time on previous days), from whichever source
measured it (bot.diagnostics.evidence):

- increased workload: demand (arrivals, or starts plus the queue's growth) well above usual;
- long-running jobs: job time (p90, or the mean where no percentile is measured) well above
  usual;
- resource constraints: CPU throttling of runner pods or OOM kills, or a share of jobs
  failing well above usual (runners too small fail the jobs they are given);
- infrastructure: runners failing to start or register (desired far above registered for half
  an hour with registered not growing; at the maximum, by most of those desired), failed
  runners, runners offline, or busy runners falling while jobs wait;
- autoscaling limits: runners at the autoscaler's maximum, or, where the maximum is not
  measured, busy runners held flat at a ceiling while jobs wait.

Causes, not symptoms: a surge or a slowdown drives a runner type to its maximum, so the maximum
is the primary cause only when demand and job time are usual. No signal, no verdict: "not
measured" is said, never "ruled out" (starts cannot show a surge at the maximum). Where both
more jobs and longer jobs are found on a type, the one that rose by the larger factor comes
first, at medium confidence at most (both signatures hold). The primary cause is that of the
worst-queueing type (the longest wait, or where that is not measured the wait of the jobs
started lately, in minutes, plus the jobs waiting), with a confidence; healthy data gets no
cause.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.diagnostics.certainty import at_most_medium, confidence_of, unproven
from bot.diagnostics.evidence import (
    RATIO_LIKELY,
    demand,
    evidence,
    ratio_of,
    runner_state,
    scaling_up,
    severity,
    significant_rise,
    supply,
)
from bot.diagnostics.inference import Guess, across_fleet, failing_across, infer
from bot.diagnostics.job_time import long_running, weigh
from bot.diagnostics.limits import autoscaling, cut_below_usual, idle_while_waiting
from bot.diagnostics.runner_checks import Check, infrastructure, resources
from bot.diagnostics.workload import moved_from, moved_in, top_workflows
from bot.domain.diagnosis import (
    Cause,
    Confidence,
    Finding,
    PastQueue,
    Report,
    RunnerTypeState,
    Scope,
    Verdict,
)
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals, window_minutes
from bot.render.diagnosis_text import past_text

#: Demand well above the baseline (RATIO_LIKELY), by at least this many more jobs than usual
#: over the span (ten minutes: 0.5 a minute).
MIN_EXTRA_JOBS = 5.0
SURGE_Z = 3.0

PRECEDENCE = (
    Cause.RESOURCE_CONSTRAINTS,
    Cause.INFRASTRUCTURE,
    Cause.LONG_RUNNING_JOBS,
    Cause.INCREASED_WORKLOAD,
    Cause.AUTOSCALING_LIMITS,
)


def _queue_now(state: RunnerTypeState) -> PastQueue:
    return PastQueue(queued=state.queued, max_wait_seconds=state.max_wait_seconds)


def _at_ceiling(fleet: FleetSignals, state: RunnerTypeState) -> bool:
    busy = supply(fleet, state.name)
    return state.at_max or (busy is not None and busy.flat)


def _workload(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    name = state.name
    asked = demand(fleet, name)
    if asked is None:
        return Verdict.NO_DATA, ()
    likely = _rose(asked.now, asked.usual, window_minutes(fleet.window))
    hour = fleet.value(Signal.ARRIVALS_HOUR, name)
    usual_hour = fleet.base(Signal.ARRIVALS_HOUR, name)
    over_hour = hour is not None and usual_hour is not None and _rose(hour, usual_hour, 60.0)
    likely = likely or over_hour
    by_workflow = (
        Signal.ARRIVALS_BY_WORKFLOW if asked.measured == "arrivals" else Signal.STARTED_BY_WORKFLOW
    )
    if not likely and asked.measured == "starts" and _at_ceiling(fleet, state):
        # At its maximum a type starts no more jobs whatever the demand: starts alone cannot
        # rule a surge out there.
        return Verdict.NO_DATA, ()
    workflows = top_workflows(fleet, by_workflow, name, 0.05) if likely else ()
    # A job moved here within a workflow that ran here before: more work of another kind,
    # though jobs a minute rose less than a surge's.
    arrived = None if likely else moved_in(fleet, name)
    if arrived is not None:
        likely, workflows = True, arrived.workflows
    signal = (
        Signal.ARRIVALS_PER_MINUTE if asked.measured == "arrivals" else Signal.STARTED_PER_MINUTE
    )
    found = [
        evidence(
            fleet,
            signal,
            name,
            {
                "arrivals": "jobs arriving per minute",
                "starts": "jobs started per minute",
            }.get(asked.measured, "jobs per minute (started, and the queue's growth)"),
            now=asked.now,
            workflows=workflows,
        ).model_copy(update={"baseline": asked.usual})
    ]
    if hour is not None and usual_hour is not None:
        found.append(
            evidence(fleet, Signal.ARRIVALS_HOUR, name, "jobs arriving per minute, last hour")
        )
    if arrived is not None:
        found.append(arrived)
    for other in moved_from(fleet, name, workflows) if likely else ():
        found.append(other)
    return (Verdict.LIKELY if likely else Verdict.RULED_OUT), tuple(found)


def _rose(now: float, usual: float, minutes: float) -> bool:
    """Jobs a minute well above usual, by more than chance explains over `minutes`."""
    return (
        (ratio_of(now, usual, 0.1) or 0.0) >= RATIO_LIKELY
        and (now - usual) * minutes >= MIN_EXTRA_JOBS
        and significant_rise(now, usual, minutes, SURGE_Z)
    )


CHECKS: dict[Cause, Callable[[FleetSignals, RunnerTypeState], Check]] = {
    Cause.INCREASED_WORKLOAD: _workload,
    Cause.LONG_RUNNING_JOBS: long_running,
    Cause.AUTOSCALING_LIMITS: autoscaling,
    Cause.INFRASTRUCTURE: infrastructure,
    Cause.RESOURCE_CONSTRAINTS: resources,
}


def _scope(affected: int, total: int) -> Scope:
    if affected == 0:
        return Scope.NONE
    if affected == 1 or (affected <= 2 and affected <= 0.25 * total):
        return Scope.ISOLATED
    return Scope.WIDESPREAD


def diagnose(fleet: FleetSignals) -> Report:
    """Turn the fleet's signals into a ranked report."""
    states = sorted(
        (runner_state(fleet, name) for name in fleet.runner_types()),
        key=lambda state: severity(fleet, state),
        reverse=True,
    )
    affected = [s for s in states if s.affected]
    verdicts: dict[Cause, dict[str, Check]] = {cause: {} for cause in Cause}
    # Causes told by what the others leave, not by their own signature: their confidence.
    guessed: dict[str, Guess] = {}
    for state in affected:
        for cause, check in CHECKS.items():
            verdicts[cause][state.name] = check(fleet, state)
        if (inferred := infer(verdicts, fleet, state)) is not None:
            guessed[state.name] = inferred
    guessed.update(across_fleet(verdicts, fleet, affected, guessed))

    primary: Cause | None = None
    confidence: Confidence | None = None
    rank: dict[Cause, tuple[float, int]] = {}
    weighed: list[str] = []
    for state in affected:
        likely = [c for c in PRECEDENCE if verdicts[c][state.name][0] is Verdict.LIKELY]
        both = {Cause.LONG_RUNNING_JOBS, Cause.INCREASED_WORKLOAD} <= set(likely)
        if both:
            likely = weigh(fleet, state.name, likely, weighed)
        limit, more = Cause.AUTOSCALING_LIMITS, Cause.INCREASED_WORKLOAD
        if {limit, more} <= set(likely) and cut_below_usual(fleet, state):
            # A ceiling below the level usually busy: the usual demand alone does not fit
            # beneath it, whatever more came; no surge drove the type there.
            likely.remove(limit)
            likely.insert(likely.index(more), limit)
        if likely and primary is None:
            primary = likely[0]
            confidence = confidence_of(primary, {c: verdicts[c][state.name] for c in Cause})
            if unproven(fleet, state, primary, verdicts) or (
                both and primary in (Cause.LONG_RUNNING_JOBS, Cause.INCREASED_WORKLOAD)
            ):
                confidence = at_most_medium(confidence)
            if state.name in guessed and guessed[state.name][0] is primary:
                confidence = guessed[state.name][1]
        for cause in likely:
            rank.setdefault(cause, (severity(fleet, state), -PRECEDENCE.index(cause)))
    overall = failing_across(verdicts, [state.name for state in affected])
    if overall is not None and overall[0] is not primary:
        primary, confidence = overall

    findings = [_finding(cause, verdicts[cause], affected) for cause in Cause]
    findings.sort(
        key=lambda f: (
            f.verdict is not Verdict.LIKELY,
            f.cause is not primary,
            -rank.get(f.cause, (0.0, 0))[0],
            PRECEDENCE.index(f.cause),
            [Verdict.LIKELY, Verdict.RULED_OUT, Verdict.NO_DATA].index(f.verdict),
        )
    )
    notes = (
        weighed
        + [
            f"{state.name}: {state.idle:g} idle runners while {state.queued:g} jobs wait:"
            " a label or scheduling problem, not capacity."
            for state in affected
            if idle_while_waiting(state)
        ]
        + [
            f"{state.name}: {past_text(_queue_now(state))} now, as usual at this time"
            f" ({past_text(state.usual)}): not an incident."
            if (scale_up := scaling_up(fleet, state.name, state.usual)) is None
            else f"{state.name}: {state.queued:g} jobs not yet running, {scale_up},"
            " not an incident."
            for state in states
            if state.queueing and not state.affected and state.usual is not None
        ]
    )
    missing = tuple(f"{signal.value}: {reason}" for signal, reason in sorted(fleet.missing.items()))
    return Report(
        at=fleet.at,
        window=fleet.window,
        scope=_scope(len(affected), len(states)),
        runner_types=tuple(states),
        findings=tuple(findings),
        primary_cause=primary,
        confidence=confidence,
        notes=tuple(notes) + tuple(fleet.problems),
        missing=missing,
        sources=tuple(origin.value for origin in fleet.sources),
        waiting=tuple(
            (name, tuple((j.workflow, j.job, j.created_at, j.html_url or "") for j in jobs))
            for name, jobs in fleet.longest.items()
            if name in {s.name for s in affected}
        ),
    )


def _finding(cause: Cause, by_type: dict[str, Check], affected: list[RunnerTypeState]) -> Finding:
    likely = [name for name, (verdict, _) in by_type.items() if verdict is Verdict.LIKELY]
    with_data = [name for name, (verdict, _) in by_type.items() if verdict is not Verdict.NO_DATA]
    if likely:
        verdict, names = Verdict.LIKELY, likely
    elif with_data:
        verdict, names = Verdict.RULED_OUT, with_data
    elif affected:
        verdict, names = Verdict.NO_DATA, []
    else:
        verdict, names = Verdict.RULED_OUT, []
    evidence_found = tuple(e for name in names[:5] for e in by_type[name][1])
    return Finding(cause=cause, verdict=verdict, runner_types=tuple(names), evidence=evidence_found)
