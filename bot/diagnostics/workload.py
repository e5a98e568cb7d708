"""Behind a change in a runner type's demand or job time: the workflows whose jobs changed most,
the one job name and the one repository behind most of the change (job events only), and the
runner types the extra jobs may have moved from (a workflow retargeted from one type to another
raises one and lowers the other); and what work new to a type brings it."""

from __future__ import annotations

from bot.diagnostics.hold import HELD_MIN_BUSY, HELD_TIMED_RATIO
from bot.domain.diagnosis import Evidence
from bot.fleet.measures import Breakdown, Signal
from bot.fleet.signals import FleetSignals, window_minutes

#: A workflow counts as behind a change when its rate or time grew this much.
WORKFLOW_RATIO = 1.5
MAX_WORKFLOWS = 3
#: A workflow counts as moved away from a type when its arrivals there fell this much.
MOVED_SHARE = 0.5
MOVED_MIN_PER_MINUTE = 0.2
#: ...and came to another type: this many more of its jobs there in the window than usual.
MOVED_MIN_JOBS = 5.0
#: A job or a repository is named when it alone holds this share of the growth: most of it.
DOMINANT_SHARE = 2 / 3
#: A workflow sending a type jobs where it usually sends this share of them or less is new to
#: the type; new workflows bringing this share of its jobs change its job mix.
NEW_WORK_USUAL = 0.1
NEW_WORK_SHARE = 0.25
NEW_WORK_MIN_JOBS = 2.0
#: A workflow that ran on the type before counts as slower (against a changed mix) where its
#: time rose HELD_TIMED_RATIO with at least this many of its jobs in the window (arriving, or
#: started: about as many as are timed), or doubled with fewer: the mean of one or two jobs
#: moves by more than a fifth by chance.
SLOWER_MIN_JOBS = 5.0
SLOWER_FEW_JOBS = 2.0
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


Grouped = tuple[dict[str, float], dict[str, float]]
#: The groupings that name workflows: by workflow, and by a repository's workflow.
WORKFLOW_GROUPINGS = ("workflow", Breakdown.REPOSITORY_WORKFLOW.value)


def _groupings(fleet: FleetSignals, name: str) -> dict[str, tuple[Grouped, list[Grouped]]]:
    """`name`'s jobs now and usually, by workflow, by repository and workflow within it, and
    by repository (job events only), the most precise first: jobs a minute (arriving, else
    started), and job times (mean, then p90)."""
    rate = Signal.ARRIVALS_BY_WORKFLOW
    if not fleet.workflows.get(rate, {}).get(name):
        rate = Signal.STARTED_BY_WORKFLOW

    def by_workflow(signal: Signal) -> Grouped:
        return (
            fleet.workflows.get(signal, {}).get(name, {}),
            fleet.workflow_baseline.get(signal, {}).get(name, {}),
        )

    found = {
        "workflow": (
            by_workflow(rate),
            [
                by_workflow(s)
                for s in (Signal.DURATION_MEAN_BY_WORKFLOW, Signal.DURATION_P90_BY_WORKFLOW)
            ],
        )
    }
    for by in (Breakdown.REPOSITORY_WORKFLOW, Breakdown.REPOSITORY):
        found[by.value] = (
            fleet.broken_down(by, Signal.ARRIVALS_PER_MINUTE, name),
            [fleet.broken_down(by, s, name) for s in (Signal.DURATION_MEAN, Signal.DURATION_P90)],
        )
    return found


def new_work(
    jobs: Grouped, times: dict[str, float], held: Grouped | None = None
) -> tuple[float, tuple[str, ...]]:
    """The share of the work now (jobs a minute times their mean time, where measured) from
    groups (workflows, repositories) that usually send next to none of it, and those groups:
    a few long jobs moved in keep as many runners busy as many short ones. Where the runners
    each group holds now and usually are counted (`held`, HELD_MIN_BUSY or more now), they
    are its work, and a group new to the type holds next to none usually: long jobs moved in
    hold runners well before one of them completes to be timed."""
    now, base = jobs
    if not base or sum(now.values()) <= 0:
        return 0.0, ()
    counted = _counted(held)
    work = dict(counted[0]) if counted is not None else _work(now, times)
    total = sum(work.values())
    new = {
        w: work.get(w, 0.0)
        for w in {*now, *work}
        if base.get(w, 0.0) <= NEW_WORK_USUAL * now.get(w, 0.0)
        and (counted is None or counted[1].get(w, 0.0) <= NEW_WORK_USUAL * work[w])
    }
    if total <= 0:
        return 0.0, ()
    return sum(new.values()) / total, tuple(sorted(new, key=new.__getitem__, reverse=True))


def _counted(held: Grouped | None) -> Grouped | None:
    """`held`, where enough runners are held now to tell shares by (HELD_MIN_BUSY)."""
    return held if held is not None and sum(held[0].values()) >= HELD_MIN_BUSY else None


def _held(fleet: FleetSignals, name: str, grouping: str) -> Grouped | None:
    """The runners the jobs of `name` hold now and usually by repository (job events only);
    None for other groupings."""
    if grouping != Breakdown.REPOSITORY.value:
        return None
    return fleet.broken_down(Breakdown.REPOSITORY, Signal.RUNNING, name)


def _work(rates: dict[str, float], times: dict[str, float]) -> dict[str, float]:
    """Each group's work: its jobs a minute times their time (where not timed, the median
    time of those timed)."""
    known = sorted(times.values())
    usual_time = known[len(known) // 2] if known else 1.0
    return {group: rate * times.get(group, usual_time) for group, rate in rates.items()}


def _slower(group: str, times: Grouped, counted: dict[str, float], moved: bool) -> bool:
    """`group` ran on the type before and its jobs take longer now beyond chance: by
    HELD_TIMED_RATIO over enough jobs, or twice its usual time over fewer. Beside work `moved`
    here (seen leaving another type), only twice its usual time: a few jobs' spread of a fifth
    or more says less than work that left one type as it came to this one."""
    now, base = times
    if group not in base or now[group] < HELD_TIMED_RATIO * base[group]:
        return False
    if now[group] >= SLOWER_FEW_JOBS * base[group]:
        return True
    return not moved and counted.get(group, 0.0) >= SLOWER_MIN_JOBS


def _workflows_of(grouping: str, groups: tuple[str, ...]) -> tuple[str, ...]:
    """The workflows `groups` name: workflows, or a repository's workflows ("owner/repo:
    workflow"); none for repositories."""
    if grouping == Breakdown.REPOSITORY_WORKFLOW.value:
        return tuple(group.partition(": ")[2] for group in groups)
    return groups if grouping == "workflow" else ()


def moved_in(fleet: FleetSignals, name: str) -> Evidence | None:
    """Workflows that ran on `name` before and now send it far more jobs while they send
    another type far fewer: a job of theirs moved here (its `runs-on` changed), work new to the
    type though its workflow is not. Evidence where their extra jobs bring a good share of the
    type's work (jobs a minute times their time); None where not, or where no jobs a minute are
    measured by workflow."""
    (now, base), timed = _groupings(fleet, name)["workflow"]
    minutes = window_minutes(fleet.window)
    grown = tuple(
        workflow
        for workflow, rate in now.items()
        if (usual := base.get(workflow, 0.0)) > NEW_WORK_USUAL * rate
        and rate >= WORKFLOW_RATIO * usual
        and (rate - usual) * minutes >= MOVED_MIN_JOBS
    )
    # Each workflow on its own (the evidence sums them): its fall elsewhere at least half
    # its rise here, or it is more runs of it, not a job of it moved.
    fell = {
        w: sum((e.baseline or 0.0) - (e.now or 0.0) for e in moved_from(fleet, name, (w,)))
        for w in grown
    }
    moved = tuple(w for w in grown if fell[w] >= MOVED_SHARE * (now[w] - base[w]))
    times = timed[0][0] or timed[1][0]
    total = sum(_work(now, times).values())
    extra = sum(_work({w: now[w] - base[w] for w in moved}, times).values())
    if not moved or total <= 0 or extra < NEW_WORK_SHARE * total:
        return None
    # Work moved here before the window brought its jobs over the hour too: where the hour's
    # arrivals rose by less than half the window's extra, ten minutes' rise is chance.
    hour, usual_hour = (
        fleet.value(Signal.ARRIVALS_HOUR, name),
        fleet.base(Signal.ARRIVALS_HOUR, name),
    )
    rise = sum(now[w] - base[w] for w in moved)
    if hour is not None and usual_hour is not None and hour - usual_hour < MOVED_SHARE * rise:
        return None
    origin = fleet.origin(Signal.ARRIVALS_PER_MINUTE, name) or fleet.origin(
        Signal.STARTED_PER_MINUTE, name
    )
    return Evidence(
        runner_type=name,
        measure="jobs a minute of workflows moved here",
        now=sum(now[w] for w in moved),
        baseline=sum(base[w] for w in moved),
        workflows=moved,
        source=origin.value if origin else "",
        why=f"their extra jobs are {extra / total:.0%} of its work (jobs times their time),"
        " while these workflows send another type far fewer: a job of theirs moved here",
    )


def mix_explains(fleet: FleetSignals, name: str) -> tuple[str, ...]:
    """Workflows or repositories new to `name` that explain its longer job time: where they
    bring a good share of its jobs and none of those that ran there before takes longer than
    usual, the job mix changed (more work of another kind), not the jobs. Where their
    workflows left another type as they came here, the work moved, and only a doubling makes
    those that ran here before slower. Last, workflows that ran here before with a job of
    theirs moved in (`moved_in`) count as new. Empty where that is not so, or where no job
    time is measured per workflow or repository."""
    minutes = window_minutes(fleet.window)
    groupings = _groupings(fleet, name)
    found = [
        (grouping, *new_work(jobs, timed[0][0], _held(fleet, name, grouping)))
        for grouping, (jobs, timed) in groupings.items()
    ]
    if (arrived := moved_in(fleet, name)) is not None:
        # Then workflows that ran here before, with a job of theirs moved in: their time is
        # the moved job's, no measure of the jobs that ran here before.
        found.append(("workflow", 1.0, arrived.workflows))
    for grouping, share, new in found:
        jobs, timed = groupings[grouping]
        # The first measure of job time with a usual to compare with: mean, else p90.
        times = next(((now, base) for now, base in timed if now and base), None)
        if share < NEW_WORK_SHARE or times is None:
            continue
        counted = {group: rate * minutes for group, rate in jobs[0].items()}
        named = _workflows_of(grouping, new)
        moved = bool(named) and bool(moved_from(fleet, name, named))
        if _holds_the_rise(fleet, name, _held(fleet, name, grouping), new) or not any(
            _slower(g, times, counted, moved) for g in times[0] if g not in new
        ):
            return new
    return ()


def _holds_the_rise(
    fleet: FleetSignals, name: str, held: Grouped | None, new: tuple[str, ...]
) -> bool:
    """More runners busy on `name` than usual (HELD_MIN_BUSY more or more), and the groups
    `new` to it hold over half of the rise (`held`: runners counted by group): more than the
    work that ran here before holds beyond the runners usually busy. The new work is the
    larger part of the rise, whatever the jobs of the old take (a mean of a few moves by a
    fifth by chance)."""
    usual = fleet.base(Signal.RUNNING, name)
    if usual is None or held is None:
        return False
    rise = sum(held[0].values()) - usual
    return rise >= HELD_MIN_BUSY and sum(held[0].get(group, 0.0) for group in new) > rise / 2


def work_new_to(
    fleet: FleetSignals, name: str, *, holding_the_rise: bool = False
) -> Evidence | None:
    """Jobs of `name` from workflows that usually send it next to none, where they are a good
    share of its jobs, or from repositories whose jobs usually hold next to none of its
    runners, where they hold a good share of them (job events): work moved here from another
    type, or new. With `holding_the_rise`, only where the runners they hold are counted and
    over half of the rise of its busy runners."""
    groupings = _groupings(fleet, name)
    # By workflow, then by a repository's workflow (a repository is not a workflow to name),
    # then by the runners a repository's jobs hold.
    for grouping in (*WORKFLOW_GROUPINGS, Breakdown.REPOSITORY.value):
        (now, base), timed = groupings[grouping]
        held = _counted(_held(fleet, name, grouping))
        if grouping not in WORKFLOW_GROUPINGS and held is None:
            continue  # a repository is named by the runners its jobs hold, not as a workflow
        share, new = new_work((now, base), timed[0][0], held)
        if held is not None:
            held_now = sum(held[0].values())
            brought = sum(held[0].get(w, 0.0) for w in new)
            found = Evidence(
                runner_type=name,
                measure="runners held by jobs of repositories new to this type",
                now=brought,
                baseline=sum(held[1].get(w, 0.0) for w in new),
                repository=", ".join(new),
                source=origin.value if (origin := fleet.origin(Signal.RUNNING, name)) else "",
                why=f"{brought / held_now:.0%} of its busy runners, where they usually hold next"
                " to none: work moved here, or new",
            )
            jobs = brought
        else:
            rate = sum(now.get(w, 0.0) for w in new)
            origin = fleet.origin(Signal.ARRIVALS_PER_MINUTE, name) or fleet.origin(
                Signal.STARTED_PER_MINUTE, name
            )
            found = Evidence(
                runner_type=name,
                measure="jobs a minute from workflows new to this type",
                now=rate,
                baseline=sum(base.get(w, 0.0) for w in new),
                workflows=new,
                source=origin.value if origin else "",
                why=f"{share:.0%} of its work (jobs times their time), from workflows that"
                " usually send it next to none: work moved here, or new",
            )
            # Where a workflow usually sends a tenth of a job or less in the window, two of
            # them come by chance less than once in a hundred.
            jobs = rate * window_minutes(fleet.window)
        holds = not holding_the_rise or _holds_the_rise(fleet, name, held, new)
        if share >= NEW_WORK_SHARE and jobs >= NEW_WORK_MIN_JOBS and holds:
            return found
    return None
