"""Behind a change in a runner type's demand or job time: the workflows whose jobs changed most,
the one job name and the one repository behind most of the change (job events only), and the
runner types the extra jobs may have moved from (a workflow retargeted from one type to another
raises one and lowers the other); and a slowdown told by the runners it keeps busy."""

from __future__ import annotations

from bot.diagnostics.measures import Breakdown, Signal
from bot.diagnostics.signals import FleetSignals
from bot.domain.diagnosis import Evidence

#: A workflow counts as behind a change when its rate or time grew this much.
WORKFLOW_RATIO = 1.5
MAX_WORKFLOWS = 3
#: A workflow counts as moved away from a type when its arrivals there fell this much.
MOVED_SHARE = 0.5
MOVED_MIN_PER_MINUTE = 0.2
#: A job or a repository is named when it alone holds this share of the growth: most of it.
DOMINANT_SHARE = 2 / 3
#: The time a job holds a runner (runners busy / jobs started a minute) this many times usual,
#: with about as many runners busy as usual or more (at a ceiling, as many): jobs are slower.
HELD_RATIO = 1.5
HELD_BUSY_SHARE = 0.9
HELD_MIN_BUSY = 3.0
#: ...and the type's job time (p90, p50 or mean: the highest) at least this many times usual.
HELD_TIMED_RATIO = 1.2
#: Jobs started in the last hour below this: too few to time anything by.
HELD_MIN_STARTS = 5.0
_PER_MINUTE = frozenset({Signal.ARRIVALS_PER_MINUTE, Signal.STARTED_PER_MINUTE})


def top_workflows(fleet: FleetSignals, signal: Signal, name: str, floor: float) -> tuple[str, ...]:
    """The workflows of `name` whose `signal` grew most against the baseline."""
    now = fleet.workflows.get(signal, {}).get(name, {})
    base = fleet.workflow_baseline.get(signal, {}).get(name, {})
    grown = []
    for workflow, value in now.items():
        usual = base.get(workflow)
        if usual is None or value / max(usual, floor) >= WORKFLOW_RATIO:
            grown.append((value - (usual or 0.0), workflow))
    return tuple(w for _, w in sorted(grown, reverse=True)[:MAX_WORKFLOWS])


def _dominant(fleet: FleetSignals, by: Breakdown, signal: Signal, name: str) -> str:
    now, base = fleet.broken_down(by, signal, name)
    if len(now.keys() | base.keys()) < 2:
        return ""  # the only job or repository there is explains nothing
    # A job new to the type added all its jobs a minute; a job's time without a usual one is
    # compared with the type's usual time.
    new = 0.0 if signal in _PER_MINUTE else fleet.base(signal, name)
    growth = {}
    for key, value in now.items():
        usual = base.get(key, new)
        if key and usual is not None:
            growth[key] = value - usual
    total = sum(g for g in growth.values() if g > 0)
    if total <= 0:
        return ""
    key, most = max(growth.items(), key=lambda item: item[1])
    return key if most >= DOMINANT_SHARE * total else ""


def behind(fleet: FleetSignals, signal: Signal, name: str) -> tuple[str, str]:
    """The job name and the repository of `name` whose `signal` grew most against the
    baseline, each where it alone holds most of the growth ("" where none does)."""
    return (
        _dominant(fleet, Breakdown.JOB, signal, name),
        _dominant(fleet, Breakdown.REPOSITORY, signal, name),
    )


def moved_from(fleet: FleetSignals, name: str, workflows: tuple[str, ...]) -> list[Evidence]:
    """Other runner types where the same workflows now send far fewer jobs than usual (jobs
    arriving; where only starts are measured, as on ARC's metrics, jobs started)."""
    found = []
    signal, measure = Signal.ARRIVALS_BY_WORKFLOW, "jobs arriving per minute (moved away?)"
    if not fleet.workflow_baseline.get(signal):
        signal, measure = Signal.STARTED_BY_WORKFLOW, "jobs started per minute (moved away?)"
    now_all = fleet.workflows.get(signal, {})
    base_all = fleet.workflow_baseline.get(signal, {})
    for other, usual_by_workflow in base_all.items():
        if other == name:
            continue
        fewer = []
        for workflow in workflows:
            usual = usual_by_workflow.get(workflow, 0.0)
            now = now_all.get(other, {}).get(workflow, 0.0)
            if usual - now >= MOVED_MIN_PER_MINUTE and now <= (1 - MOVED_SHARE) * usual:
                fewer.append(workflow)
        if fewer:
            rate = (
                Signal.ARRIVALS_PER_MINUTE
                if signal is Signal.ARRIVALS_BY_WORKFLOW
                else Signal.STARTED_PER_MINUTE
            )
            origin = fleet.origin(rate, other)
            found.append(
                Evidence(
                    runner_type=other,
                    measure=measure,
                    now=sum(now_all.get(other, {}).get(w, 0.0) for w in fewer),
                    baseline=sum(usual_by_workflow.get(w, 0.0) for w in fewer),
                    workflows=tuple(fewer),
                    source=origin.value if origin else "",
                )
            )
    return found


def hold_time(fleet: FleetSignals, name: str) -> tuple[float, float] | None:
    """How long a job holds a runner now and usually, in seconds: runners busy over jobs
    started a minute in the last hour (Little's law). None where too few jobs started to
    time anything by."""
    busy, usual_busy = fleet.value(Signal.RUNNING, name), fleet.base(Signal.RUNNING, name)
    started, usual_started = (
        fleet.value(Signal.STARTED_HOUR, name),
        fleet.base(Signal.STARTED_HOUR, name),
    )
    if busy is None or usual_busy is None or started is None or usual_started is None:
        return None
    if started * 60.0 < HELD_MIN_STARTS or usual_started <= 0:
        return None
    return 60.0 * busy / started, 60.0 * max(usual_busy, 1.0) / usual_started


def held_longer(fleet: FleetSignals, name: str) -> Evidence | None:
    """How long a job holds a runner well above usual. Where jobs are slow the few completing
    in the window may be the quick ones; the runners they keep busy are not. More demand
    starts more jobs and busies more runners alike, and a ceiling holds both: neither moves
    this."""
    hold = hold_time(fleet, name)
    busy, usual_busy = fleet.value(Signal.RUNNING, name), fleet.base(Signal.RUNNING, name)
    if hold is None or busy is None or usual_busy is None:
        return None
    if busy < HELD_BUSY_SHARE * usual_busy or busy < HELD_MIN_BUSY:
        return None  # runners that do not come leave fewer busy, not more
    held, usual_held = hold
    ratio = held / usual_held
    # Busy runners and starts at this hour vary from day to day: a hold well above usual
    # counts where the jobs completing are slower too, if only a little.
    if ratio < HELD_RATIO or _job_time_ratio(fleet, name) < HELD_TIMED_RATIO:
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
