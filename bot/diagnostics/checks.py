"""The runbook's checks as pure functions: fleet signals in, a ranked report out.

For each runner type with jobs waiting long, each cause gets a verdict from its own evidence,
comparing now with the baseline (the same hour on previous days):

- increased workload: job starts per minute well above the baseline;
- long-running jobs: p90 execution time well above the baseline;
- autoscaling limits: desired or registered runners at the configured maximum;
- infrastructure: runners failing to start or register (desired far above registered for half
  an hour with registered not growing), or failed ephemeral runners;
- resource constraints: CPU throttling of runner pods far above normal, or OOM kills.

The most likely cause is that of the worst-queueing runner type. When one type shows several,
the more specific explanation wins: starved or failing runners and slow jobs explain a queue
that a surge or the autoscaler's maximum would otherwise be blamed for. No signal, no verdict:
"no data" is said, never guessed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from bot.diagnostics.signals import FleetSignals
from bot.diagnostics.sources.querypack import Signal
from bot.domain.diagnosis import Cause, Evidence, Finding, Report, RunnerTypeState, Scope, Verdict

#: A runner type is queueing when a job waited this long, or this many jobs wait.
WAIT_AFFECTED_SECONDS = 600.0
QUEUED_AFFECTED = 5.0
#: "Well above the baseline".
RATIO_LIKELY = 1.5
MIN_EXTRA_STARTS_PER_MINUTE = 0.5
#: A rise in job starts counts as a surge when it is this many standard deviations of the
#: counts above the usual number (see _significant_rise).
SURGE_Z = 3.0
#: Job times: with fewer jobs than this in the window, a p90 above RATIO_LIKELY counts as a
#: slowdown only with the median above it too, or at this many times the usual p90.
ENOUGH_JOBS = 50.0
SLOWDOWN_FEW_JOBS = 2.0
#: Runners failing to register: desired exceeds registered by this share, now and earlier.
GAP_SHARE = 0.3
GAP_MIN = 3.0
FAILED_RUNNERS_LIKELY = 3.0
#: Registered runners "not growing": at most this factor above their level 15-30 min ago.
REGISTERED_STALL = 1.1
THROTTLED_LIKELY = 0.25
#: Idle runners while jobs wait: more than this many, and this share of the registered.
IDLE_WHILE_WAITING = 2.0
#: A surge or slowdown is traced to the workflows whose rate or time grew this much.
WORKFLOW_RATIO = 1.5
MAX_WORKFLOWS = 3

#: When one runner type shows several causes, the first of these explains the others.
PRECEDENCE = (
    Cause.RESOURCE_CONSTRAINTS,
    Cause.INFRASTRUCTURE,
    Cause.LONG_RUNNING_JOBS,
    Cause.INCREASED_WORKLOAD,
    Cause.AUTOSCALING_LIMITS,
)

Check = tuple[Verdict, tuple[Evidence, ...]]


def _ratio(now: float | None, base: float | None, floor: float) -> float | None:
    if now is None or base is None:
        return None
    return now / max(base, floor)


def runner_state(fleet: FleetSignals, name: str) -> RunnerTypeState:
    """One runner type as the fleet's signals describe it now."""

    def get(signal: Signal) -> float | None:
        return fleet.value(signal, name)

    queued, wait = get(Signal.QUEUED), get(Signal.MAX_WAIT)
    registered = get(Signal.REGISTERED)
    affected = (wait or 0.0) >= WAIT_AFFECTED_SECONDS or (queued or 0.0) >= max(
        QUEUED_AFFECTED, 0.25 * (registered or 0.0)
    )
    return RunnerTypeState(
        name=name,
        queued=queued,
        max_wait_seconds=wait,
        busy=get(Signal.BUSY),
        registered=registered,
        idle=get(Signal.IDLE),
        desired=get(Signal.DESIRED),
        max=get(Signal.MAX_RUNNERS),
        affected=affected and (queued or 0.0) > 0,
    )


def _severity(state: RunnerTypeState) -> float:
    return (state.max_wait_seconds or 0.0) / 60.0 + (state.queued or 0.0)


def _top_workflows(fleet: FleetSignals, signal: Signal, name: str, floor: float) -> tuple[str, ...]:
    now = fleet.workflows.get(signal, {}).get(name, {})
    base = fleet.workflow_baseline.get(signal, {}).get(name, {})
    grown = []
    for workflow, value in now.items():
        ratio = _ratio(value, base.get(workflow), floor)
        if ratio is None or ratio >= WORKFLOW_RATIO:
            grown.append((value - base.get(workflow, 0.0), workflow))
    return tuple(w for _, w in sorted(grown, reverse=True)[:MAX_WORKFLOWS])


def _workload(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    name = state.name
    now, base = (
        fleet.value(Signal.STARTED_PER_MINUTE, name),
        fleet.base(Signal.STARTED_PER_MINUTE, name),
    )
    if now is None or base is None:
        return Verdict.NO_DATA, ()
    ratio = _ratio(now, base, 0.1) or 0.0
    likely = (
        ratio >= RATIO_LIKELY
        and now - base >= MIN_EXTRA_STARTS_PER_MINUTE
        and _significant_rise(now, base, _minutes(fleet.window))
    )
    workflows = _top_workflows(fleet, Signal.STARTED_BY_WORKFLOW, name, 0.05) if likely else ()
    evidence = Evidence(
        runner_type=name,
        measure="job starts per minute",
        now=now,
        baseline=base,
        workflows=workflows,
    )
    return (Verdict.LIKELY if likely else Verdict.RULED_OUT), (evidence,)


def _minutes(window: str) -> float:
    """`10m`, `90s`, `1h` in minutes (the query pack's rate window)."""
    unit = {"s": 1 / 60, "m": 1.0, "h": 60.0}.get(window[-1:], 1.0)
    try:
        return float(window[:-1]) * unit
    except ValueError:
        return 10.0


def _significant_rise(now: float, base: float, minutes: float) -> bool:
    """More jobs started in the window than chance explains: job starts are a Poisson count,
    so at a few a minute, 21 starts where 12 are usual is noise (z 1.6), 50 is a surge (z 4.8).
    Without this, a quiet runner type at night reads as a surge now and then."""
    started, usual = now * minutes, base * minutes
    return (started - usual) / math.sqrt(started + usual + 1.0) >= SURGE_Z


def _long_running(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    name = state.name
    p90, base90 = fleet.value(Signal.DURATION_P90, name), fleet.base(Signal.DURATION_P90, name)
    if p90 is None or base90 is None:
        return Verdict.NO_DATA, ()
    ratio = _ratio(p90, base90, 1.0) or 0.0
    p50, base50 = fleet.value(Signal.DURATION_P50, name), fleet.base(Signal.DURATION_P50, name)
    ratio50 = _ratio(p50, base50, 1.0) or 0.0
    starts = (fleet.value(Signal.STARTED_PER_MINUTE, name) or 0.0) * _minutes(fleet.window)
    # The p90 of a few jobs, read from coarse histogram buckets, moves by a bucket (x1.3-1.5)
    # by chance. With few jobs a rise counts when the median moved too, or the p90 doubled.
    likely = ratio >= RATIO_LIKELY and (
        starts >= ENOUGH_JOBS or ratio50 >= RATIO_LIKELY or ratio >= SLOWDOWN_FEW_JOBS
    )
    workflows = _top_workflows(fleet, Signal.DURATION_P90_BY_WORKFLOW, name, 1.0) if likely else ()
    evidence = [
        Evidence(
            runner_type=name,
            measure="p90 job time",
            now=p90,
            baseline=base90,
            unit="s",
            workflows=workflows,
        )
    ]
    if p50 is not None:
        evidence.append(
            Evidence(runner_type=name, measure="p50 job time", now=p50, baseline=base50, unit="s")
        )
    return (Verdict.LIKELY if likely else Verdict.RULED_OUT), tuple(evidence)


def _idle_while_waiting(state: RunnerTypeState) -> bool:
    idle, registered = state.idle or 0.0, state.registered or 0.0
    return idle > IDLE_WHILE_WAITING and idle >= 0.1 * registered


def _autoscaling(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    if state.max is None or (state.desired is None and state.registered is None):
        return Verdict.NO_DATA, ()
    evidence = (
        Evidence(runner_type=state.name, measure="desired runners", now=state.desired, unit=""),
        Evidence(runner_type=state.name, measure="maximum runners", now=state.max, unit=""),
    )
    if state.at_max and not _idle_while_waiting(state):
        return Verdict.LIKELY, evidence
    return Verdict.RULED_OUT, evidence


def _infrastructure(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    name = state.name
    pending = fleet.value(Signal.PENDING_RUNNERS, name)
    failed = fleet.value(Signal.FAILED_RUNNERS, name)
    desired, registered = state.desired, state.registered
    if (desired is None or registered is None) and pending is None and failed is None:
        return Verdict.NO_DATA, ()
    evidence: list[Evidence] = []
    stalled = False
    if desired is not None and registered is not None:
        earlier = list(
            zip(
                fleet.earlier.get(Signal.DESIRED, []),
                fleet.earlier.get(Signal.REGISTERED, []),
                strict=False,
            )
        )
        gaps = [desired - registered]
        registered_before = []
        for earlier_desired, earlier_registered in earlier:
            if name in earlier_desired and name in earlier_registered:
                gaps.append(earlier_desired[name] - earlier_registered[name])
                registered_before.append(earlier_registered[name])
        lasting_gap = all(gap >= max(GAP_MIN, GAP_SHARE * desired) for gap in gaps)
        # Scaling up through a surge, registered runners climb towards desired; failing to
        # register, they stay where they were.
        not_growing = bool(registered_before) and registered <= (
            REGISTERED_STALL * min(registered_before) + GAP_MIN
        )
        stalled = lasting_gap and not_growing
        evidence.append(
            Evidence(runner_type=name, measure="registered runners", now=registered, unit="")
        )
        evidence.append(Evidence(runner_type=name, measure="desired runners", now=desired))
    if failed is not None:
        evidence.append(Evidence(runner_type=name, measure="failed runners", now=failed))
    if pending is not None:
        evidence.append(Evidence(runner_type=name, measure="pending runners", now=pending))
    likely = stalled or (failed or 0.0) >= FAILED_RUNNERS_LIKELY
    return (Verdict.LIKELY if likely else Verdict.RULED_OUT), tuple(evidence)


def _resources(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    name = state.name
    throttled = fleet.value(Signal.CPU_THROTTLED, name)
    base = fleet.base(Signal.CPU_THROTTLED, name)
    ooms = fleet.value(Signal.OOM_KILLS, name)
    if throttled is None and ooms is None:
        return Verdict.NO_DATA, ()
    evidence: list[Evidence] = []
    starved = False
    if throttled is not None:
        starved = throttled >= THROTTLED_LIKELY and (base is None or throttled >= 2 * base)
        evidence.append(
            Evidence(
                runner_type=name, measure="CPU throttled", now=throttled, baseline=base, unit="%"
            )
        )
    if ooms is not None:
        starved = starved or ooms >= 1
        evidence.append(Evidence(runner_type=name, measure="OOM kills", now=ooms))
    return (Verdict.LIKELY if starved else Verdict.RULED_OUT), tuple(evidence)


CHECKS: dict[Cause, Callable[[FleetSignals, RunnerTypeState], Check]] = {
    Cause.INCREASED_WORKLOAD: _workload,
    Cause.LONG_RUNNING_JOBS: _long_running,
    Cause.AUTOSCALING_LIMITS: _autoscaling,
    Cause.INFRASTRUCTURE: _infrastructure,
    Cause.RESOURCE_CONSTRAINTS: _resources,
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
        (runner_state(fleet, name) for name in fleet.runner_types()), key=_severity, reverse=True
    )
    affected = [s for s in states if s.affected]
    verdicts: dict[Cause, dict[str, Check]] = {cause: {} for cause in Cause}
    for state in affected:
        for cause, check in CHECKS.items():
            verdicts[cause][state.name] = check(fleet, state)

    # The worst-queueing type with any likely cause decides; its most specific cause wins.
    primary: Cause | None = None
    rank: dict[Cause, tuple[float, int]] = {}
    for state in affected:
        likely = [c for c in PRECEDENCE if verdicts[c][state.name][0] is Verdict.LIKELY]
        if likely and primary is None:
            primary = likely[0]
        for cause in likely:
            rank.setdefault(cause, (_severity(state), -PRECEDENCE.index(cause)))

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
    notes = []
    for state in affected:
        if _idle_while_waiting(state):
            notes.append(
                f"{state.name}: {state.idle:g} idle runners while {state.queued:g} jobs wait:"
                " a label or scheduling problem, not capacity."
            )
    missing = tuple(f"{signal.value}: {reason}" for signal, reason in sorted(fleet.missing.items()))
    return Report(
        at=fleet.at,
        window=fleet.window,
        scope=_scope(len(affected), len(states)),
        runner_types=tuple(states),
        findings=tuple(findings),
        primary_cause=primary,
        notes=tuple(notes),
        missing=missing,
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
    evidence = tuple(e for name in names[:5] for e in by_type[name][1])
    return Finding(cause=cause, verdict=verdict, runner_types=tuple(names), evidence=evidence)
