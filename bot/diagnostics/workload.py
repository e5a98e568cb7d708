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
#: Runners busy per job arriving this many times usual, with at least this many more busy:
#: the same demand keeps runners busy longer.
HELD_RATIO = 1.5
HELD_MIN_EXTRA = 3.0
#: A workflow slowed on both its mean and its p90 job time by this much, and by at least this
#: many seconds on the mean, lets a smaller rise in runners busy per job count: two measures
#: that agree, where either alone may be chance.
SLOWER_RATIO = 1.5
SLOWER_MIN_SECONDS = 300.0
HELD_WITH_SLOWER_WORKFLOW = 1.25
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


def slowed_workflows(fleet: FleetSignals, name: str) -> tuple[str, ...]:
    """The workflows of `name` whose jobs take far longer than usual on both their mean and
    their p90 time (one slow workflow among quick ones hardly moves the type's percentiles)."""
    slowed = []
    means = fleet.workflows.get(Signal.DURATION_MEAN_BY_WORKFLOW, {}).get(name, {})
    usual_means = fleet.workflow_baseline.get(Signal.DURATION_MEAN_BY_WORKFLOW, {}).get(name, {})
    p90s = fleet.workflows.get(Signal.DURATION_P90_BY_WORKFLOW, {}).get(name, {})
    usual_p90s = fleet.workflow_baseline.get(Signal.DURATION_P90_BY_WORKFLOW, {}).get(name, {})
    for workflow, mean in means.items():
        usual, p90, usual_p90 = (
            usual_means.get(workflow),
            p90s.get(workflow),
            usual_p90s.get(workflow),
        )
        if usual is None or p90 is None or usual_p90 is None or usual <= 0 or usual_p90 <= 0:
            continue
        if (
            mean >= SLOWER_RATIO * usual
            and mean - usual >= SLOWER_MIN_SECONDS
            and p90 >= SLOWER_RATIO * usual_p90
        ):
            slowed.append((mean - usual, workflow))
    return tuple(w for _, w in sorted(slowed, reverse=True)[:MAX_WORKFLOWS])


def held_longer(fleet: FleetSignals, name: str) -> Evidence | None:
    """Runners busy per job arriving (the last hour's demand) well above usual: the same demand
    keeps more runners busy, for longer (jobs running = arrivals x job time). Where jobs are
    slow, the few completing in the window may be the quick ones; the busy runners are not."""
    busy, usual_busy = fleet.value(Signal.RUNNING, name), fleet.base(Signal.RUNNING, name)
    hour, usual_hour = (
        fleet.value(Signal.ARRIVALS_HOUR, name),
        fleet.base(Signal.ARRIVALS_HOUR, name),
    )
    if busy is None or usual_busy is None or hour is None or usual_hour is None:
        return None
    if busy < usual_busy + HELD_MIN_EXTRA or usual_hour <= 0 or hour <= 0:
        return None
    if hour >= HELD_RATIO * usual_hour:
        return None  # more jobs, perhaps other jobs: no telling their time from the count
    per_job = (busy / hour) / (max(usual_busy, 1.0) / usual_hour)
    if per_job < HELD_RATIO and not (
        per_job >= HELD_WITH_SLOWER_WORKFLOW and slowed_workflows(fleet, name)
    ):
        return None
    return Evidence(
        runner_type=name,
        measure="runners busy per job arriving a minute",
        now=busy / hour,
        baseline=max(usual_busy, 1.0) / usual_hour,
        source=origin.value if (origin := fleet.origin(Signal.RUNNING, name)) else "",
        why=f"{per_job:.1f}x usual: the same demand keeps runners busy longer",
    )
