"""The runbook's checks on the runners themselves: infrastructure (runners failing to start,
register or stay online) and resource constraints (runner pods starved of CPU or memory, jobs
failing). What busy runners tell where no cause shows its own signature is in
`bot.diagnostics.busy_runners`; the other checks, and the ranking, in `bot.diagnostics.checks`."""

from __future__ import annotations

from bot.diagnostics.evidence import (
    Supply,
    busy_signal,
    evidence,
    rose,
    significant_rise,
    supply,
    waited_through,
)
from bot.domain.diagnosis import Evidence, RunnerTypeState, Verdict
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals, window_minutes
from bot.render.diagnosis_text import amount

FAILED_RUNNERS_LIKELY = 3.0
FAILED_RUNNERS_SHARE = 0.05
#: ...or risen over the half hour by less than this share of those still missing: at that pace
#: they would take over five hours to come, a trickle through a failure.
REGISTERING_SHARE = 0.1
THROTTLED_LIKELY = 0.25
OFFLINE_SHARE = 0.3
#: Idle runners this share of those online, while jobs wait through half an hour.
IDLE_SHARE = 0.5
#: Runners held at a ceiling turn over: each one whose job ended is replaced by one listed
#: offline while it starts, for as long as starting takes beside the job's own time. Offline
#: runners point to failing starts there only when they are most of those listed.
OFFLINE_SHARE_AT_CEILING = 2 / 3
OFFLINE_MIN = 3.0
#: Runners offline up to this many times the usual (and OFFLINE_MIN more): as on any day.
OFFLINE_AS_USUAL = 1.5
#: Runners still starting come online within minutes: offline ones are a scale-up under way
#: where busy runners rose over the half hour by at least this share of them, or where they
#: are no more than this many for each job waiting (one runner per job asked for; the alert's
#: count leaves out jobs waiting under 5 minutes).
STARTING_ONLINE_SHARE = 0.25
STARTING_PER_JOB = 2.0
FAILING_SHARE = 0.1
FAILING_RATIO = 2.0
FAILING_MIN_JOBS = 10.0
FAILING_Z = 2.0
GAP_SHARE = 0.3
GAP_MIN = 3.0
#: Busy runners below this share of usual while jobs have waited through the last half hour,
#: not held at one level: the runners are not there.
SHORT_OF_USUAL = 0.8
#: Busy runners held flat at this many or more: a ceiling (held at none is no ceiling).
CEILING_MIN = 2.0
Check = tuple[Verdict, tuple[Evidence, ...]]


def infrastructure(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    name = state.name
    found: list[Evidence] = []
    likely = False
    measured = False
    desired, registered = state.desired, state.registered
    if desired is not None and registered is not None and fleet.earlier.get(Signal.DESIRED):
        measured = True
        pairs = list(
            zip(
                fleet.earlier.get(Signal.DESIRED, []),
                fleet.earlier.get(Signal.REGISTERED, []),
                strict=False,
            )
        )
        gaps = [desired - registered]
        registered_before = []
        for then_desired, then_registered in pairs:
            if name in then_desired and name in then_registered:
                gaps.append(then_desired[name] - then_registered[name])
                registered_before.append(then_registered[name])
        # At the maximum, runners replacing those whose jobs ended are starting all the time
        # (a cold start beside short jobs): a gap counts there only as most of those desired.
        share = OFFLINE_SHARE_AT_CEILING if state.at_max else GAP_SHARE
        lasting = all(_missing(gap, desired, share) for gap in gaps)
        # Registered runners not rising, or rising by a trickle beside those missing.
        stalled = bool(registered_before) and (
            not rose(registered, min(registered_before))
            or registered - min(registered_before) < REGISTERING_SHARE * gaps[0]
        )
        likely = likely or (lasting and stalled)
        found.append(evidence(fleet, Signal.REGISTERED, name, "registered runners", baseline=False))
        if lasting and stalled:
            why = (
                f"{amount(registered, '')} of the {amount(desired, '')} asked for,"
                f" {amount(min(registered_before), '')} in the half hour before:"
                " runners are not coming up"
            )
            found[-1] = found[-1].model_copy(update={"why": why})
        found.append(evidence(fleet, Signal.DESIRED, name, "desired runners", baseline=False))
    failed = fleet.value(Signal.FAILED_RUNNERS, name)
    if failed is not None:
        measured = True
        # A few runners of a large scale set fail on any day: a share of it counts.
        size = max(desired or 0.0, registered or 0.0)
        likely = likely or failed >= max(FAILED_RUNNERS_LIKELY, FAILED_RUNNERS_SHARE * size)
        found.append(evidence(fleet, Signal.FAILED_RUNNERS, name, "failed runners", baseline=False))
    pending = fleet.value(Signal.PENDING_RUNNERS, name)
    if pending is not None:
        found.append(
            evidence(fleet, Signal.PENDING_RUNNERS, name, "pending runners", baseline=False)
        )
    offline, usual_offline = fleet.value(Signal.OFFLINE, name), fleet.base(Signal.OFFLINE, name)
    total = (offline or 0.0) + (fleet.value(Signal.REGISTERED, name) or 0.0)
    busy = supply(fleet, name)
    if offline is not None:
        measured = True
        # Runners still starting are listed offline too: while more come online each quarter
        # hour, offline ones are the scale-up under way, not a failure.
        share = OFFLINE_SHARE_AT_CEILING if busy is not None and busy.flat else OFFLINE_SHARE
        likely = likely or (
            offline >= OFFLINE_MIN
            and offline >= share * total
            and not _still_starting(busy, offline, state.queued)
            and not _offline_as_usual(offline, usual_offline)
        )
        found.append(evidence(fleet, Signal.OFFLINE, name, "runners offline", baseline=False))
    if busy is not None:
        measured = True
        # Jobs wait and yet fewer runners work than half an hour ago (they are not replaced),
        # or far fewer than usual at this hour and not held at one level (no maximum holds
        # them: they do not come).
        short = (
            busy.usual is not None
            and busy.now < SHORT_OF_USUAL * busy.usual
            and not (busy.flat and busy.top >= CEILING_MIN)
            and not busy.catching_up
            and waited_through(fleet, name)
        )
        if (busy.falling or short) and not state.at_max:
            likely = True
            signal = busy_signal(fleet, name)
            found.append(evidence(fleet, signal, name, "busy runners", now=busy.now))
            found.append(
                evidence(
                    fleet,
                    signal,
                    name,
                    "busy runners 30 min before",
                    now=busy.before[-1],
                    baseline=False,
                )
            )
    if (taking := _not_taking_jobs(fleet, state)) is not None:
        likely = measured = True
        found.insert(0, taking)
    if not measured:
        return Verdict.NO_DATA, ()
    if not likely and offline is not None and offline >= OFFLINE_MIN:
        # Many runners offline under "ruled out" reads as a contradiction: say what they are.
        at = next(i for i, e in enumerate(found) if e.measure == "runners offline")
        why = _offline_why(offline, total, busy, usual_offline, state.queued)
        found[at] = found[at].model_copy(update={"why": why})
        found.insert(0, found.pop(at))
    return (Verdict.LIKELY if likely else Verdict.RULED_OUT), tuple(found)


def runners_missing(state: RunnerTypeState) -> bool:
    """Fewer runners registered than even a ceiling's turnover leaves (replacements starting
    for those whose jobs ended are up to two thirds of those asked for)."""
    desired, registered = state.desired, state.registered
    if desired is None or registered is None:
        return False
    return _missing(desired - registered, desired, OFFLINE_SHARE_AT_CEILING)


def _missing(gap: float, desired: float, share: float) -> bool:
    """Runners asked for and not registered: `share` of those asked for, and a few."""
    return gap >= max(GAP_MIN, share * desired)


def _not_taking_jobs(fleet: FleetSignals, state: RunnerTypeState) -> Evidence | None:
    """Most runners online and idle, busy ones far short of usual, while jobs have waited
    through half an hour: runners that register and take no job (broken, or not matching what
    the jobs ask for)."""
    idle, registered = state.idle, state.registered
    signal = busy_signal(fleet, state.name)
    busy, usual = fleet.value(signal, state.name), fleet.base(signal, state.name)
    if idle is None or registered is None or busy is None or usual is None:
        return None
    if idle < max(OFFLINE_MIN, IDLE_SHARE * registered) or busy >= SHORT_OF_USUAL * usual:
        return None
    if not waited_through(fleet, state.name):
        return None
    found = evidence(fleet, Signal.IDLE, state.name, "idle runners", baseline=False)
    why = (
        f"online while {amount(state.queued, '')} jobs wait, and {amount(busy, '')} busy"
        f" where {amount(usual, '')} are usual: runners that take no job (broken, or not"
        " matching the labels jobs ask for?)"
    )
    return found.model_copy(update={"why": why})


def _still_starting(busy: Supply | None, offline: float, queued: float | None) -> bool:
    """Runners listed offline are starting, not failing: busy runners are catching up, and
    either came online over the half hour by a good share of the offline count, or the offline
    ones are about one per job waiting. 13 more busy in half an hour beside 165 offline for 51
    jobs waiting is a trickle through a failure."""
    if busy is None or not busy.catching_up or not busy.before:
        return False
    return (
        busy.now - busy.before[-1] >= STARTING_ONLINE_SHARE * offline
        or offline <= STARTING_PER_JOB * (queued or 0.0) + OFFLINE_MIN
    )


def _offline_as_usual(offline: float, usual: float | None) -> bool:
    """About as many runners offline as usual for this fleet (stale ones it always lists)."""
    return usual is not None and offline <= OFFLINE_AS_USUAL * usual + OFFLINE_MIN


def _offline_why(
    offline: float, total: float, busy: Supply | None, usual: float | None, queued: float | None
) -> str:
    """What offline runners are when they are no sign of failing runners."""
    share = offline / total if total else 0.0
    if busy is not None and busy.flat and OFFLINE_SHARE <= share < OFFLINE_SHARE_AT_CEILING:
        return (
            f"{share:.0%} of the {amount(total, '')} runners listed while busy runners hold at"
            f" {amount(busy.top, '')}: runners replacing those whose jobs ended, starting"
        )
    if _offline_as_usual(offline, usual):
        return f"about the usual for this fleet (usual {amount(usual, '')})"
    if busy is not None and _still_starting(busy, offline, queued):
        return (
            f"runners still starting ({share:.0%} of {amount(total, '')} listed): busy runners"
            f" rose from {amount(busy.before[-1], '')} to {amount(busy.now, '')} in half an hour"
        )
    return (
        f"{share:.0%} of the {amount(total, '')} runners listed, under the"
        f" {OFFLINE_SHARE:.0%} that points to runners failing"
    )


def resources(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    name = state.name
    throttled = fleet.value(Signal.CPU_THROTTLED, name)
    ooms = fleet.value(Signal.OOM_KILLS, name)
    failing = fleet.value(Signal.FAILED_SHARE, name)
    usual_failing = fleet.base(Signal.FAILED_SHARE, name)
    if throttled is None and ooms is None and (failing is None or usual_failing is None):
        return Verdict.NO_DATA, ()
    found: list[Evidence] = []
    starved = False
    if throttled is not None:
        base = fleet.base(Signal.CPU_THROTTLED, name)
        starved = throttled >= THROTTLED_LIKELY and (base is None or throttled >= 2 * base)
        found.append(evidence(fleet, Signal.CPU_THROTTLED, name, "CPU throttled", unit="%"))
    if ooms is not None:
        starved = starved or ooms >= 1
        found.append(evidence(fleet, Signal.OOM_KILLS, name, "OOM kills", baseline=False))
    if failing is not None and usual_failing is not None:
        jobs = fleet.value(Signal.JOBS_JUDGED, name)
        if jobs is None:
            completed = fleet.value(Signal.COMPLETED_PER_MINUTE, name) or 0.0
            jobs = completed * window_minutes(fleet.window)
        usual_share = max(usual_failing, 0.02)
        starved = starved or (
            jobs >= FAILING_MIN_JOBS
            and failing >= FAILING_SHARE
            and failing >= FAILING_RATIO * usual_share
            # Three failures in twenty jobs happen by chance: more than chance explains.
            and significant_rise(failing * jobs, usual_share * jobs, 1.0, FAILING_Z)
        )
        found.append(evidence(fleet, Signal.FAILED_SHARE, name, "jobs failing", unit="%"))
    return (Verdict.LIKELY if starved else Verdict.RULED_OUT), tuple(found)
