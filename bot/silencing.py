"""Silencing incidents from Slack: who may, making and lifting Grafana silences, and watching them.

`Silencer.silence` creates a real Grafana silence (one per matcher set, see `bot.silences`) and
records it with the incident; `unsilence` expires it. Both then owe the incident's thread a line
and its parent an edit, written to the outbox in one store transaction like any other change.
`Silencer.run` checks the silences of firing incidents every few seconds: a silence that ended
or was expired in Grafana's UI stops showing, and because a silenced alert sends no resolved
notification, an alert Grafana no longer lists resolves its incident.

Refusals a user should read are `SilenceRefused` (mrkdwn text); Grafana's failures are
`GrafanaError`s, which `explain` turns into words for the person who clicked.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from bot.config import SilencePolicy
from bot.grafana import GrafanaClient, GrafanaDenied, GrafanaError, SilenceNotFound
from bot.incidents import Clock, utcnow
from bot.silences import (
    MAX_SILENCES_PER_INCIDENT,
    MatcherSet,
    Person,
    Silence,
    silence_matchers,
)
from bot.slack import SlackError, SlackGateway
from bot.state import EventKind, Incident, IncidentStatus, ThreadEvent
from bot.store import OutboxKind, Store
from bot.telemetry import Metrics
from bot.text import date_token, escape_mrkdwn, link, oneline

log = logging.getLogger(__name__)

#: How long one silencing may hold an incident, and how long a second one waits for it.
CLAIM_SECONDS = 60.0
CLAIM_WAIT_SECONDS = 15.0
#: How long a user group's member list is trusted.
GROUP_CACHE_SECONDS = 60.0
#: A silence found ended this close to its planned end ended as planned.
END_TOLERANCE = timedelta(seconds=5)

NOT_CONFIGURED = (
    ":information_source: Silencing from Slack is off: queuebot needs `GRAFANA_URL` and"
    " `GRAFANA_TOKEN` (a Grafana service-account token whose role has `alert.silences:create`,"
    " `alert.silences:write` and `alert.silences:read` on the rule's folder). The README's"
    " “Silences” section says how to set it up."
)


class SilenceRefused(Exception):
    """Nothing was done, for a reason the person who clicked should read (mrkdwn)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def explain(exc: GrafanaError, doing: str, incident: Incident | None = None) -> str:
    """A Grafana failure in the words of the person who clicked; `doing` is "silence" or
    "unsilence"."""
    nothing = "Nothing was silenced." if doing == "silence" else "The silence is unchanged."
    rule = incident.group.lead.rule_uid if incident else ""
    where = f"the folder of rule `{escape_mrkdwn(rule)}`" if rule else "the rule's folder"
    detail = escape_mrkdwn(oneline(exc.detail))[:300]
    if isinstance(exc, GrafanaDenied) and exc.status == 401:
        text = (
            "Grafana did not accept queuebot's token (HTTP 401): `GRAFANA_TOKEN` is wrong,"
            f" expired or revoked. {nothing}"
        )
    elif isinstance(exc, GrafanaDenied):
        permission = "alert.silences:create" if doing == "silence" else "alert.silences:write"
        text = (
            f"Grafana refused (HTTP 403: {detail}): queuebot's service account lacks"
            f" `{permission}` on {where}. {nothing}"
        )
    elif exc.status is not None and exc.status < 500 and exc.status != 409:
        text = f"Grafana refused to {doing} it (HTTP {exc.status}): {detail}. {nothing}"
    else:
        text = f"Grafana could not be reached to {doing} it: {detail}. {nothing} Try again."
    if incident is not None and doing == "silence" and incident.group.lead.silence_url:
        text += " Or " + link(incident.group.lead.silence_url, "silence it in Grafana") + "."
    return ":warning: " + text


def who_may(policy: SilencePolicy) -> str:
    """The people and groups to ask, as Slack mentions (only ever shown to one person)."""
    names = [f"<!subteam^{g}>" for g in policy.allowed_groups]
    names += [f"<@{u}>" for u in policy.allowed_users]
    return " or ".join(names)


class Permissions:
    """Who may silence: everyone, or the users and user groups the YAML file lists."""

    def __init__(
        self,
        policy: SilencePolicy,
        slack: SlackGateway,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._policy = policy
        self._slack = slack
        self._monotonic = monotonic
        self._groups: dict[str, tuple[float, set[str]]] = {}

    async def check(self, user_id: str) -> None:
        """Raises SilenceRefused unless `user_id` may silence."""
        policy = self._policy
        if not policy.restricted or user_id in policy.allowed_users:
            return
        unchecked: list[str] = []
        for group in policy.allowed_groups:
            try:
                members = await self._members(group)
            except SlackError as exc:
                # Fail closed: an unreadable group grants nothing.
                log.warning("cannot read the members of user group %s: %s", group, exc)
                unchecked.append(group)
                continue
            if user_id in members:
                return
        text = f":no_entry: You are not allowed to silence this; ask {who_may(policy)}."
        if unchecked:
            text += (
                " (queuebot could not read the members of "
                + ", ".join(f"<!subteam^{g}>" for g in unchecked)
                + "; its Slack app needs the `usergroups:read` scope.)"
            )
        log.info("silencing refused to %s: not in the allowed users or groups", user_id)
        raise SilenceRefused(text)

    async def _members(self, group: str) -> set[str]:
        cached = self._groups.get(group)
        now = self._monotonic()
        if cached is not None and now - cached[0] < GROUP_CACHE_SECONDS:
            return cached[1]
        members = await self._slack.usergroup_members(group)
        self._groups[group] = (now, members)
        return members


class Silencer:
    """Creates, lifts and watches the Grafana silences of incidents."""

    def __init__(
        self,
        store: Store,
        grafana: GrafanaClient | None,
        slack: SlackGateway,
        permissions: Permissions,
        metrics: Metrics,
        *,
        on_enqueued: Callable[[], None] = lambda: None,
        clock: Clock = utcnow,
    ) -> None:
        self._store = store
        self._grafana = grafana
        self._slack = slack
        self.permissions = permissions
        self._metrics = metrics
        self._on_enqueued = on_enqueued
        self._clock = clock

    # -- checks before the modal opens ---------------------------------------------------------

    def _require_grafana(self, incident: Incident | None = None) -> GrafanaClient:
        if self._grafana is None:
            text = NOT_CONFIGURED
            if incident is not None and incident.group.lead.silence_url:
                url = incident.group.lead.silence_url
                text += " Meanwhile you can " + link(url, "silence it in Grafana") + "."
            raise SilenceRefused(text)
        return self._grafana

    async def incident(self, incident_id: int) -> Incident:
        incident = await self._store.get_incident(incident_id)
        if incident is None:
            raise SilenceRefused(":warning: queuebot has no record of this incident.")
        return incident

    @staticmethod
    def _check_silenceable(incident: Incident) -> tuple[MatcherSet, ...]:
        if incident.status is not IncidentStatus.FIRING:
            raise SilenceRefused(
                ":large_green_circle: This incident is resolved; there is nothing to silence."
            )
        if incident.silence is not None:
            silence = incident.silence
            raise SilenceRefused(
                f":mute: Already silenced until {date_token(silence.ends_at)}"
                f" by @{escape_mrkdwn(oneline(silence.by.name))}."
                " Use *Unsilence* on the alert message to lift it."
            )
        sets = silence_matchers(incident.group)
        if not sets:
            raise SilenceRefused(":warning: These alerts carry no labels a silence could match.")
        if len(sets) > MAX_SILENCES_PER_INCIDENT:
            raise SilenceRefused(
                f":warning: This incident spans {len(sets)} rules; silence them in Grafana."
            )
        return sets

    async def prepare(
        self, incident_id: int, user_id: str
    ) -> tuple[Incident, tuple[MatcherSet, ...]]:
        """What the Silence… modal shows; SilenceRefused when it should not open."""
        incident = await self.incident(incident_id)
        self._require_grafana(incident)
        await self.permissions.check(user_id)
        return incident, self._check_silenceable(incident)

    # -- silence and unsilence -----------------------------------------------------------------

    async def silence(
        self, incident_id: int, person: Person, ends_at: datetime, comment: str
    ) -> Silence:
        """Create the incident's silence in Grafana and record it; one at a time per incident."""
        incident = await self.incident(incident_id)
        grafana = self._require_grafana(incident)
        await self.permissions.check(person.id)
        self._check_silenceable(incident)
        await self._claim(incident_id)
        try:
            # Whoever held the claim before may have silenced it meanwhile.
            incident = await self.incident(incident_id)
            sets = self._check_silenceable(incident)
            now = self._clock()
            text = await self._comment(incident, person, comment)
            created: list[str] = []
            try:
                for matcher_set in sets:
                    created.append(
                        await grafana.create_silence(
                            matcher_set, now, ends_at, person.created_by, text
                        )
                    )
            except GrafanaError as exc:
                log.warning(
                    "silence not created: %s (incident=%s user=%s grafana=%s)",
                    exc,
                    incident_id,
                    person.id,
                    grafana.base_url,
                )
                await self._undo(grafana, created)
                raise
            silence = Silence(
                ids=tuple(created),
                matchers=sets,
                starts_at=now,
                ends_at=ends_at,
                by=person,
                comment=comment,
                alert_seen=await self._alert_listed(grafana, sets),
            )
            async with self._store.transaction() as tx:
                current = await tx.incident(incident_id)
                assert current is not None
                await tx.save_incident(
                    current.model_copy(update={"silence": silence, "version": current.version + 1})
                )
                event = ThreadEvent(
                    kind=EventKind.SILENCED, at=now, group=current.group, silence=silence
                )
                await tx.enqueue(incident_id, OutboxKind.POST_REPLY, event.model_dump_json())
                await tx.enqueue(incident_id, OutboxKind.UPDATE_PARENT)
        finally:
            await self._store.release_silencing(incident_id)
        self._on_enqueued()
        self._metrics.inc("queuebot_silences_total", action="created")
        log.info(
            "silenced until %s by %s (incident=%s silences=%s)",
            ends_at.isoformat(),
            person.id,
            incident_id,
            ",".join(created),
        )
        return silence

    async def unsilence(self, incident_id: int, person: Person) -> Silence:
        """Expire the incident's silence in Grafana (one already gone counts as expired)."""
        incident = await self.incident(incident_id)
        grafana = self._require_grafana(incident)
        await self.permissions.check(person.id)
        silence = incident.silence
        if silence is None:
            raise SilenceRefused(":bell: This incident is not silenced (any more).")
        for silence_id in silence.ids:
            try:
                await grafana.expire_silence(silence_id)
            except SilenceNotFound:
                log.info("silence %s was already gone (incident=%s)", silence_id, incident_id)
            except GrafanaError as exc:
                log.warning(
                    "silence not expired: %s (incident=%s user=%s silence=%s)",
                    exc,
                    incident_id,
                    person.id,
                    silence_id,
                )
                raise
        event = ThreadEvent(
            kind=EventKind.UNSILENCED,
            at=self._clock(),
            group=incident.group,
            silence=silence,
            actor=person,
        )
        await self._lift(incident_id, silence, event)
        self._metrics.inc("queuebot_silences_total", action="expired")
        log.info("unsilenced by %s (incident=%s)", person.id, incident_id)
        return silence

    async def _lift(self, incident_id: int, silence: Silence, event: ThreadEvent) -> bool:
        """Record that `silence` no longer holds, unless another path already did."""
        async with self._store.transaction() as tx:
            current = await tx.incident(incident_id)
            if current is None or current.silence != silence:
                return False
            await tx.save_incident(
                current.model_copy(update={"silence": None, "version": current.version + 1})
            )
            await tx.enqueue(incident_id, OutboxKind.POST_REPLY, event.model_dump_json())
            await tx.enqueue(incident_id, OutboxKind.UPDATE_PARENT)
        self._on_enqueued()
        return True

    async def _claim(self, incident_id: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLAIM_WAIT_SECONDS
        while not await self._store.claim_silencing(incident_id, time.time() + CLAIM_SECONDS):
            if loop.time() > deadline:
                raise SilenceRefused(
                    ":hourglass: Someone else is silencing this incident right now;"
                    " try again in a minute."
                )
            await asyncio.sleep(0.1)

    async def _comment(self, incident: Incident, person: Person, comment: str) -> str:
        """The user's comment plus a link back to the incident's thread."""
        where = "the incident's thread in Slack"
        if incident.channel_id and incident.parent_ts:
            try:
                where = await self._slack.permalink(incident.channel_id, incident.parent_ts)
            except SlackError as exc:
                log.warning("no permalink for incident %s: %s", incident.id, exc)
        said = comment.strip()
        lead = said if said else f"Silenced from Slack by {person.name}"
        return f"{lead}\n\nSlack thread: {where}"

    @staticmethod
    async def _undo(grafana: GrafanaClient, created: list[str]) -> None:
        for silence_id in created:
            try:
                await grafana.expire_silence(silence_id)
            except GrafanaError as exc:
                log.error("silence %s left behind after a failure: %s", silence_id, exc)

    async def _alert_listed(self, grafana: GrafanaClient, sets: tuple[MatcherSet, ...]) -> bool:
        try:
            for matcher_set in sets:
                if await grafana.alerts(matcher_set):
                    return True
        except GrafanaError as exc:
            log.warning("cannot read alert state from Grafana: %s", exc)
        return False

    # -- watching ------------------------------------------------------------------------------

    async def run(self, interval: float) -> None:
        """Check silenced incidents every `interval` seconds until cancelled."""
        while True:
            await asyncio.sleep(interval)
            await self.check()

    async def check(self) -> None:
        """One pass over the firing incidents queuebot silenced."""
        if self._grafana is None:
            return
        for incident in await self._store.silenced_incidents():
            try:
                await self._check_one(self._grafana, incident)
            except GrafanaError as exc:
                log.warning("cannot check the silence of incident %s: %s", incident.id, exc)

    async def _check_one(self, grafana: GrafanaClient, incident: Incident) -> None:
        silence = incident.silence
        assert silence is not None
        now = self._clock()
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
            note = None if planned else "was expired in Grafana"
            event = ThreadEvent(
                kind=EventKind.SILENCE_ENDED,
                at=now,
                group=incident.group,
                silence=silence,
                note=note,
            )
            if await self._lift(incident.id, silence, event):
                self._metrics.inc("queuebot_silences_total", action="ended")
                log.info("silence ended (incident=%s planned=%s)", incident.id, planned)
            return
        if await self._alert_listed(grafana, silence.matchers):
            ends_at = max(active_ends)
            if not silence.alert_seen or abs(ends_at - silence.ends_at) > END_TOLERANCE:
                await self._update_silence(incident.id, silence, ends_at, now)
        elif silence.alert_seen:
            await self._resolve(incident.id, silence, now)

    async def _update_silence(
        self, incident_id: int, silence: Silence, ends_at: datetime, now: datetime
    ) -> None:
        """Note that the alert was seen, and an end time changed in Grafana."""
        changed = abs(ends_at - silence.ends_at) > END_TOLERANCE
        updated = silence.model_copy(update={"alert_seen": True, "ends_at": ends_at})
        async with self._store.transaction() as tx:
            current = await tx.incident(incident_id)
            if current is None or current.silence != silence:
                return
            if not changed:
                await tx.save_incident(current.model_copy(update={"silence": updated}))
                return
            await tx.save_incident(
                current.model_copy(update={"silence": updated, "version": current.version + 1})
            )
            event = ThreadEvent(
                kind=EventKind.SILENCED,
                at=now,
                group=current.group,
                silence=updated,
                note="was changed in Grafana",
            )
            await tx.enqueue(incident_id, OutboxKind.POST_REPLY, event.model_dump_json())
            await tx.enqueue(incident_id, OutboxKind.UPDATE_PARENT)
        self._on_enqueued()

    async def _resolve(self, incident_id: int, silence: Silence, now: datetime) -> None:
        """The silenced alert is gone from Grafana: it resolved without telling anyone."""
        async with self._store.transaction() as tx:
            current = await tx.incident(incident_id)
            if current is None or current.silence != silence:
                return
            if current.status is not IncidentStatus.FIRING:
                return
            resolved = current.model_copy(
                update={
                    "status": IncidentStatus.RESOLVED,
                    "resolved_at": now,
                    "version": current.version + 1,
                }
            )
            await tx.save_incident(resolved)
            event = ThreadEvent(
                kind=EventKind.RESOLVED,
                at=now,
                group=current.group,
                duration=resolved.duration,
                note=(
                    "Grafana no longer lists the alert. It was silenced, so no resolved"
                    " notification came; queuebot read Grafana's alert state."
                ),
            )
            await tx.enqueue(incident_id, OutboxKind.POST_REPLY, event.model_dump_json())
            await tx.enqueue(incident_id, OutboxKind.UPDATE_PARENT)
        self._on_enqueued()
        self._metrics.inc("queuebot_incidents_resolved_while_silenced_total")
        log.info(
            "resolved while silenced: Grafana no longer lists the alert (incident=%s)", incident_id
        )
