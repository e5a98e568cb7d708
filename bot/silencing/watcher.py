"""Watching the silences of firing incidents, because Grafana tells nobody when they change.

Every few seconds, for each firing incident queuebot silenced:
- a silence that ended, or was expired in Grafana's UI, stops showing (one line in the thread);
- an end time changed in Grafana is shown;
- a silenced alert sends no resolved notification, so Grafana's alert list is read too. Once the
  alert has been absent from it for `resolve_after` (several checks, longer than a rule's usual
  evaluation interval, so a Grafana restart that empties the list for a moment is not a
  resolution), the incident resolves. An alert list that cannot be read proves nothing.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import datetime, timedelta

from bot.domain.clock import SYSTEM, Clock
from bot.domain.incidents import Incident, ThreadEvent, ThreadEventKind
from bot.domain.silences import MatcherSet, Silence
from bot.silencing.grafana import GrafanaClient, GrafanaDenied, GrafanaError, SilenceNotFound
from bot.silencing.ledger import SilenceLedger
from bot.store import Store
from bot.telemetry.metrics import Metrics
from bot.telemetry.passes import PassRecord

log = logging.getLogger(__name__)

#: The leader lease of the watcher: held for this many check intervals, renewed at each.
LEADER_ROLE = "silence-watcher"
LEADER_INTERVALS = 3
#: A silence found ended this close to its planned end ended as planned.
END_TOLERANCE = timedelta(seconds=5)
RESOLVED_NOTE = (
    "Grafana no longer lists the alert. It was silenced, so no resolved notification came;"
    " queuebot read Grafana's alert state."
)


class SilenceWatcher:
    def __init__(
        self,
        store: Store,
        grafana: GrafanaClient | None,
        ledger: SilenceLedger,
        metrics: Metrics,
        *,
        resolve_after: timedelta,
        clock: Clock = SYSTEM,
    ) -> None:
        self._store = store
        self._grafana = grafana
        self._ledger = ledger
        self._metrics = metrics
        self._resolve_after = resolve_after
        self._clock = clock
        self._owner = uuid.uuid4().hex
        #: How its passes have gone (for /healthz and /metrics).
        self.record = PassRecord("silence watcher", metrics)

    async def run(self, interval: float) -> None:
        """Check every `interval` seconds until cancelled; a failed pass never stops it. Of
        several replicas on one store, only the one holding the watcher's leader lease checks
        (Grafana is asked once, not once per replica); another takes over within a few
        intervals of its death."""
        while True:
            await asyncio.sleep(interval)
            try:
                until = self._clock.time() + LEADER_INTERVALS * interval
                if not await self._store.lead(LEADER_ROLE, self._owner, until):
                    continue
                await self.check()
                self.record.succeeded()
            except Exception:
                self.record.failed()
                log.exception("checking silences failed; trying again in %.0fs", interval)

    async def check(self) -> None:
        """One pass over the firing incidents queuebot silenced, counted when it is done."""
        if self._grafana is None:
            return
        for incident in await self._store.silenced_incidents():
            owner = await self._ledger.claim(incident.id)
            if owner is None:
                continue  # being silenced or unsilenced right now
            try:
                current = await self._store.get_incident(incident.id)
                if current is not None and current.silence is not None:
                    await self._check_one(self._grafana, current, current.silence)
            except GrafanaError as exc:
                log.warning("cannot check the silence of incident %s: %s", incident.id, exc)
            except Exception:
                log.exception("checking the silence of incident %s failed", incident.id)
            finally:
                await self._ledger.release(incident.id, owner)
        self._metrics.inc("queuebot_silence_checks_total")

    async def _check_one(
        self, grafana: GrafanaClient, incident: Incident, silence: Silence
    ) -> None:
        now = self._clock.now()
        active_ends: list[datetime] = []
        for silence_id in silence.ids:
            try:
                found = await grafana.get_silence(silence_id)
            except SilenceNotFound:
                continue
            if found.active and found.ends_at > now:
                active_ends.append(found.ends_at)
        if not active_ends:
            planned = silence.ends_at <= now + END_TOLERANCE
            ended = ThreadEvent(
                kind=ThreadEventKind.SILENCE_ENDED,
                at=now,
                group=incident.group,
                silence=silence,
                note=None if planned else "was expired in Grafana",
            )
            if await self._ledger.lift(incident.id, silence, ended):
                self._metrics.inc("queuebot_silences_total", action="ended")
                log.info("silence ended (incident=%s planned=%s)", incident.id, planned)
            return
        revised = silence
        event: ThreadEvent | None = None
        ends_at = max(active_ends)
        if abs(ends_at - silence.ends_at) > END_TOLERANCE:
            revised = revised.model_copy(update={"ends_at": ends_at})
            event = ThreadEvent(
                kind=ThreadEventKind.SILENCED,
                at=now,
                group=incident.group,
                silence=revised,
                note="was changed in Grafana",
            )
        listed = await self._alert_state(grafana, silence.matchers, incident.id)
        if listed:
            revised = revised.model_copy(update={"alert_seen": True, "alert_absent_since": None})
        elif listed is False and silence.alert_seen:
            since = silence.alert_absent_since or now
            if now - since >= self._resolve_after:
                if await self._ledger.resolve(incident.id, silence, now, RESOLVED_NOTE):
                    self._metrics.inc("queuebot_incidents_resolved_while_silenced_total")
                    log.info(
                        "resolved while silenced: Grafana no longer lists the alert (incident=%s)",
                        incident.id,
                    )
                return
            revised = revised.model_copy(update={"alert_absent_since": since})
        if revised != silence:
            await self._ledger.revise(incident.id, revised, event)

    @staticmethod
    async def _alert_state(
        grafana: GrafanaClient, sets: tuple[MatcherSet, ...], incident_id: int
    ) -> bool | None:
        """Whether Grafana lists the silenced alert; None when its answer proves nothing."""
        try:
            for matcher_set in sets:
                if await grafana.alerts(matcher_set):
                    return True
        except GrafanaDenied as exc:
            log.error(
                "cannot read alert state (%s): GRAFANA_TOKEN needs alert.instances:read, or"
                " silenced incidents are not resolved when their alert goes (incident=%s)",
                exc,
                incident_id,
            )
            return None
        except GrafanaError as exc:
            log.warning("cannot read alert state from Grafana: %s (incident=%s)", exc, incident_id)
            return None
        return False
