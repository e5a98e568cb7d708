"""The incident lifecycle as pure rules: what a notification does to an incident.

`decide` takes the incident a group key has now (if any) and the notification that arrived, and
says what happens: open an incident, note a change, resolve, reopen, or nothing. It does no I/O;
`bot.incidents.service` stores its answer and the deliveries it owes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from bot.domain.alerts import AlertGroup, AlertStatus
from bot.domain.incidents import (
    Incident,
    IncidentStatus,
    ThreadEvent,
    ThreadEventKind,
    ValueChange,
)

#: A group that fires again this soon after resolving reopens the same thread.
REOPEN_WINDOW = timedelta(minutes=30)


class Action(StrEnum):
    OPEN = "open"
    UPDATE = "update"
    IGNORE = "ignore"


@dataclass(frozen=True)
class Decision:
    """What a notification does: `OPEN` a new incident, `UPDATE` the current one, or `IGNORE`.

    For OPEN and UPDATE, `status`, `group`, `resolved_at` and `fired_count` are the incident's
    new state, and `event` the thread reply to post (None for a new incident's first message).
    """

    action: Action
    reason: str
    status: IncidentStatus = IncidentStatus.FIRING
    group: AlertGroup | None = None
    resolved_at: datetime | None = None
    fired_count: int = 1
    event: ThreadEvent | None = None


def decide(current: Incident | None, group: AlertGroup, now: datetime) -> Decision:
    """Apply one notification of `group` to the group key's current incident."""
    firing = group.status is AlertStatus.FIRING
    if current is None:
        if firing:
            return Decision(Action.OPEN, "first firing", group=group)
        return Decision(
            Action.OPEN,
            "resolved before queuebot saw it fire",
            status=IncidentStatus.RESOLVED,
            group=group,
            resolved_at=group.ended_at or now,
        )
    if current.status is IncidentStatus.FIRING:
        if not firing:
            resolved_at = group.ended_at or now
            latest_start = max(a.starts_at for a in current.group.firing)
            if resolved_at < latest_start:
                # A resolution resent late, from before the incident fired again.
                return Decision(Action.IGNORE, "stale resolution from before the latest firing")
            duration = max(resolved_at - current.group.started_at, timedelta(0))
            return Decision(
                Action.UPDATE,
                "resolved",
                status=IncidentStatus.RESOLVED,
                group=current.group,
                resolved_at=resolved_at,
                fired_count=current.fired_count,
                event=ThreadEvent(
                    kind=ThreadEventKind.RESOLVED, at=now, group=current.group, duration=duration
                ),
            )
        event = _changes(current.group, group, now)
        if event is None:
            return Decision(Action.IGNORE, "repeat notification, nothing changed")
        return Decision(
            Action.UPDATE, "changed", group=group, fired_count=current.fired_count, event=event
        )
    # The current incident is resolved.
    if not firing:
        return Decision(Action.IGNORE, "already resolved")
    resolved_at = current.resolved_at or now
    newest_start = max(a.starts_at for a in group.firing)
    if newest_start < resolved_at:
        # Grafana retries a failed delivery at the next flush, so a firing notice can arrive
        # after the resolution that followed it; it is history, not a new firing.
        return Decision(Action.IGNORE, "stale firing notification from before the resolution")
    if newest_start - resolved_at <= REOPEN_WINDOW:
        return Decision(
            Action.UPDATE,
            "fired again soon after resolving",
            group=group,
            fired_count=current.fired_count + 1,
            event=ThreadEvent(
                kind=ThreadEventKind.FIRED_AGAIN,
                at=newest_start,
                group=group,
                quiet_for=newest_start - resolved_at,
            ),
        )
    return Decision(Action.OPEN, "fired again long after resolving", group=group)


def _changes(old: AlertGroup, new: AlertGroup, now: datetime) -> ThreadEvent | None:
    before = {a.fingerprint: a for a in old.firing}
    after = {a.fingerprint: a for a in new.firing}
    joined = tuple(a for fp, a in after.items() if fp not in before)
    left = tuple(a for fp, a in before.items() if fp not in after)
    changes: list[ValueChange] = []
    for fp, alert in after.items():
        previous = before.get(fp)
        if previous is None:
            continue
        for key in sorted(set(previous.values) | set(alert.values)):
            was, now_value = previous.values.get(key), alert.values.get(key)
            if was != now_value:
                changes.append(ValueChange(alert=alert.name, key=key, old=was, new=now_value))
    summary = new.summary if new.summary != old.summary else None
    if not (joined or left or changes or summary):
        return None
    return ThreadEvent(
        kind=ThreadEventKind.CHANGED,
        at=now,
        group=new,
        changes=tuple(changes),
        joined=joined,
        left=left,
        summary=summary,
    )
