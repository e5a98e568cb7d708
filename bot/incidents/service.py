"""The incident lifecycle: the one place that combines the store, the rules and delivery.

`IncidentService.accept` applies a notification inside one store transaction: it finds the group
key's incident, asks `state.decide` what the notification does, writes the new state and the
Slack deliveries it owes into the outbox, and commits. Only then does the webhook answer 2xx;
`bot.delivery` takes it from there.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from datetime import timedelta

from bot.delivery import owed
from bot.domain.alerts import AlertGroup
from bot.domain.clock import SYSTEM, Clock
from bot.domain.incidents import Incident, ThreadEventKind
from bot.incidents.lifecycle import Action, Decision, decide
from bot.incidents.routing import Route, route_channel
from bot.store import NewIncident, Store
from bot.telemetry.metrics import Metrics

log = logging.getLogger(__name__)

#: An alert storm: more than this many incidents opening in one channel within the window.
#: Past it, new incidents are listed in one digest message, updated in place, instead of a
#: message each (Slack takes about one message a second per channel).
STORM_THRESHOLD = 10
STORM_WINDOW = timedelta(seconds=60)
#: Grafana's default group interval: it sends a group's news at most this often.
DUPLICATE_WINDOW = timedelta(minutes=5)
DUPLICATE = "duplicate of a notification already seen"


def content_key(group: AlertGroup) -> str:
    """What a notification says, without how it was sent: status, and each alert's identity,
    state, times and values."""
    lines = sorted(
        json.dumps(
            [
                a.fingerprint,
                a.status.value,
                a.starts_at.isoformat(),
                a.ends_at.isoformat() if a.ends_at else "",
                sorted(a.values.items()),
            ]
        )
        for a in group.alerts
    )
    digest = hashlib.sha256(group.status.value.encode())
    for line in lines:
        digest.update(b"\n" + line.encode())
    return digest.hexdigest()


class IncidentService:
    """Turns accepted notifications into incident state and owed Slack deliveries."""

    def __init__(
        self,
        store: Store,
        *,
        default_channel: str,
        routes: Sequence[Route] = (),
        metrics: Metrics,
        on_enqueued: Callable[[], None] = lambda: None,
        clock: Clock = SYSTEM,
    ) -> None:
        self._metrics = metrics
        self._store = store
        self._default_channel = default_channel
        self._routes = tuple(routes)
        self._on_enqueued = on_enqueued
        self._clock = clock

    async def accept(self, group: AlertGroup, body: str) -> tuple[Decision, int | None]:
        """Store the notification and its consequences; returns the decision and incident id."""
        now = self._clock.now()
        # Thousands of alerts take a while to key: not on the event loop.
        content = await asyncio.to_thread(content_key, group)
        async with self._store.transaction() as tx:
            current = await tx.current_incident(group.group_key)
            decision = decide(current, group, now)
            if (
                decision.action is not Action.IGNORE
                and current is not None
                and await tx.seen_since(group.group_key, content, now - DUPLICATE_WINDOW)
            ):
                # Grafana in HA sends each notification from every replica, and a lagging
                # replica's copy can come after a newer one: the same content again within a
                # group interval is that copy, never news (it would undo a change).
                decision = Decision(Action.IGNORE, DUPLICATE)
            incident_id = current.id if current else None
            if decision.action is Action.OPEN:
                assert decision.group is not None
                channel = route_channel(group, self._routes, self._default_channel)
                digest_id = None
                digest = await tx.open_digest(channel, now - STORM_WINDOW)
                # Counted in the store, so replicas sharing it see one storm.
                opened = await tx.count_opening(channel, now, STORM_WINDOW)
                if digest is None and opened > STORM_THRESHOLD:
                    digest = await tx.create_digest(channel, now)
                    log.warning("alert storm in %s: new incidents go to one digest", channel)
                if digest is not None:
                    digest_id = digest.id
                    await tx.touch_digest(digest.id, now)
                incident = await tx.insert_incident(
                    NewIncident(
                        group_key=group.group_key,
                        generation=current.generation + 1 if current else 1,
                        channel=channel,
                        status=decision.status,
                        group=decision.group,
                        started_at=decision.group.started_at,
                        resolved_at=decision.resolved_at,
                        previous_id=current.id if current else None,
                        digest_id=digest_id,
                    )
                )
                incident_id = incident.id
                if digest_id:
                    await owed.digest_update(tx, incident.id)
                else:
                    await owed.parent(tx, incident.id)
            elif decision.action is Action.UPDATE:
                assert current is not None and decision.group is not None
                await tx.save_incident(_updated(current, decision))
                if current.digest_id is not None:
                    # A storm's incident changes its line in the digest, not a thread.
                    await tx.touch_digest(current.digest_id, None)
                    await owed.digest_update(tx, current.id)
                else:
                    if decision.event is not None:
                        await owed.reply(tx, current.id, decision.event)
                    await owed.parent_edit(tx, current.id)
            # A copy of what was already seen says nothing new: its body is not kept again.
            kept = None if decision.reason == DUPLICATE else body
            await tx.add_notification(
                group.group_key, now, kept, decision.reason, incident_id, content
            )
        log.info(
            "notification accepted: %s (incident=%s group_key=%r alerts=%d)",
            decision.reason,
            incident_id,
            group.group_key,
            len(group.alerts),
        )
        self._metrics.inc("queuebot_notifications_total", action=decision.action.value)
        if decision.action is not Action.IGNORE:
            self._on_enqueued()
        return decision, incident_id


def _updated(current: Incident, decision: Decision) -> Incident:
    assert decision.group is not None
    refired = decision.event is not None and decision.event.kind is ThreadEventKind.FIRED_AGAIN
    return current.model_copy(
        update={
            # Grafana only notifies a firing again once no silence holds it back.
            "silence": None if refired else current.silence,
            "status": decision.status,
            "group": decision.group,
            "resolved_at": decision.resolved_at,
            "fired_count": decision.fired_count,
            "version": current.version + 1,
        }
    )
