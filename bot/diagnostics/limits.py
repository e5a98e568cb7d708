"""The runbook's check on autoscaling limits: the autoscaler at its maximum, or where that is
not measured, busy runners held at a ceiling while jobs wait; why runners that may all be
busy are no limit, in the report's words; and a ceiling below the level usually busy, which
no surge drove the type to."""

from __future__ import annotations

from bot.diagnostics.evidence import (
    RATIO_LIKELY,
    Supply,
    busy_signal,
    demand,
    evidence,
    ratio_of,
    supply,
    waited_through,
)
from bot.diagnostics.inference import below_usual_guess
from bot.diagnostics.levels import fell_below_its_peak, fell_over_the_hour
from bot.diagnostics.runner_checks import SHORT_OF_USUAL, Check, runners_missing
from bot.domain.diagnosis import Evidence, RunnerTypeState, Verdict
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals
from bot.render.diagnosis_text import amount

#: Runners idle beyond this while jobs wait (and a tenth of those registered): not capacity.
IDLE_WHILE_WAITING = 2.0


def idle_while_waiting(state: RunnerTypeState) -> bool:
    """Runners idle while jobs wait: a label or scheduling problem, not capacity."""
    idle, registered = state.idle or 0.0, state.registered or 0.0
    return idle > IDLE_WHILE_WAITING and idle >= 0.1 * registered


def autoscaling(fleet: FleetSignals, state: RunnerTypeState) -> Check:
    """Autoscaling limits: the autoscaler at its maximum (unless most of the runners it asks
    for never came); where the maximum is not measured, busy runners held at one level while
    jobs wait, not fallen over the hour nor below their peaks within the half hour."""
    name = state.name
    if state.max is not None and (state.desired is not None or state.registered is not None):
        at_max = (
            evidence(fleet, Signal.DESIRED, name, "desired runners", baseline=False),
            evidence(fleet, Signal.MAX_RUNNERS, name, "maximum runners", baseline=False),
        )
        likely = state.at_max and not idle_while_waiting(state)
        if likely and runners_missing(state):
            # The autoscaler asks for its maximum but most of those runners never came: the
            # maximum is not what holds the queue.
            why = (
                f"{state.registered:g} of the {state.desired:g} runners asked for registered:"
                " the maximum is not what holds them"
            )
            first = at_max[0].model_copy(update={"why": why})
            return Verdict.RULED_OUT, (first, *at_max[1:])
        return (Verdict.LIKELY if likely else Verdict.RULED_OUT), at_max
    busy = supply(fleet, name)
    if busy is None:
        return Verdict.NO_DATA, ()
    signal = busy_signal(fleet, name)
    found: tuple[Evidence, ...] = (
        evidence(fleet, signal, name, "busy runners (jobs running)", now=busy.now),
        evidence(
            fleet, signal, name, "busy runners 30 min before", now=busy.before[-1], baseline=False
        ),
    )
    if busy.peaks:
        # Ephemeral runners come and go beneath a ceiling: the most busy at once hold at it.
        found += (
            evidence(
                fleet,
                Signal.RUNNING_PEAK,
                name,
                f"most runners busy at once, last {fleet.window}",
                now=busy.peaks[0],
                baseline=False,
            ).model_copy(update={"why": f"{amount(busy.peaks[-1], '')} half an hour before"}),
        )
    # Without the maximum measured: runners all busy, held at one level while jobs wait (at
    # its peaks, where measured: ephemeral runners come and go beneath a ceiling); the peaks
    # held at one number exactly while jobs waited a quarter of an hour are one too.
    ceiling = (
        busy.flat
        and fell_over_the_hour(fleet, name) is None
        and _below_its_peak(fleet, busy, name) is None
        and busy.top >= (2.0 if busy.peaks else 3.0)
        and not idle_while_waiting(state)
        and (waited_through(fleet, name) or (busy.exact and _waited_since(fleet, name)))
    )
    if ceiling:
        return Verdict.LIKELY, found
    first = found[0].model_copy(update={"why": _no_ceiling(fleet, state, busy)})
    return Verdict.RULED_OUT, (first, *found[1:])


def _below_its_peak(fleet: FleetSignals, busy: Supply, name: str) -> float | None:
    """The peak the most busy at once fell clearly below within the half hour
    (`fell_below_its_peak`), to at most the level usually busy: above it, runners too slow to
    come arrive in bursts, and the level the demand needs tells them. None where not so."""
    if busy.usual is None or busy.top > busy.usual:
        return None
    return fell_below_its_peak(fleet, name)


def _no_ceiling(fleet: FleetSignals, state: RunnerTypeState, busy: Supply) -> str:
    """Why busy runners that may all be busy are no autoscaler's limit, in the report's words."""
    if idle_while_waiting(state):
        return f"{amount(state.idle, '')} runners idle while jobs wait: no limit holds them"
    then = busy.before[-1]
    if (level := fell_over_the_hour(fleet, state.name)) is not None:
        why = (
            f"fallen from {amount(level, '')} at once an hour before, not held at a ceiling:"
            " runners going and not coming back"
        )
    elif (peak := _below_its_peak(fleet, busy, state.name)) is not None:
        why = (
            f"fallen from {amount(peak, '')} at once within the half hour, not held at a"
            " ceiling (its peaks stay at it): runners going and not coming back"
        )
    elif busy.falling:
        why = f"falling ({amount(then, '')} half an hour before), not held at a ceiling"
    elif busy.catching_up:
        why = (
            f"not held at a ceiling, still rising ({amount(then, '')} half an hour before):"
            " the autoscaler is adding runners"
        )
    elif not busy.flat:
        why = f"not held at a ceiling, wavering ({amount(then, '')} half an hour before)"
    elif not waited_through(fleet, state.name):
        why = "held at one level, but jobs began waiting within the half hour: too soon to tell"
    else:
        why = "too few runners to tell a ceiling"
    asked = demand(fleet, state.name)
    ratio = ratio_of(asked.now, asked.usual, 0.1) if asked is not None else None
    if ratio is not None and ratio >= RATIO_LIKELY:
        why += f"; demand is {ratio:.1f}x usual"
    return why + "; the autoscaler's maximum is not measured"


def cut_below_usual(fleet: FleetSignals, state: RunnerTypeState) -> bool:
    """A ceiling for `state` below the runners usually busy at this hour: its maximum, or
    where none is measured, busy runners held below their usual level."""
    busy = supply(fleet, state.name)
    if busy is None or busy.usual is None:
        return False
    if state.max is not None:
        return state.max < SHORT_OF_USUAL * busy.usual
    return below_usual_guess(fleet, state)


def _waited_since(fleet: FleetSignals, name: str) -> bool:
    """Jobs were waiting a quarter of an hour before too."""
    return (fleet.quarter_hour_ago(Signal.QUEUED, name) or 0.0) > 0
