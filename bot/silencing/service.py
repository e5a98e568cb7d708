"""Silencing incidents from Slack: making and lifting Grafana silences.

`Silencer.silence` creates a real Grafana silence (one per matcher set, see
`bot.silencing.matchers`) and records it with the incident; `unsilence` expires it. Both hold
the incident's silencing claim (`bot.silencing.ledger`), so double clicks and two people at once
make one silence. A silence is made only with the matchers the person was shown: when the
incident's alerts changed since the modal opened, nothing is sent. Whatever stops them is a
`SilenceRefused` whose text the person who clicked reads: a Grafana failure explained, with what
to fix, and the incident left as it was.
"""

from __future__ import annotations

import logging
from datetime import datetime

from bot.domain.clock import SYSTEM, Clock
from bot.domain.incidents import Incident, IncidentStatus, ThreadEvent, ThreadEventKind
from bot.domain.silences import RULE_UID_LABEL, MatcherSet, Person, Silence, matchers_digest
from bot.render.mrkdwn import date_token, escape_mrkdwn, link, oneline, who
from bot.silencing.grafana import (
    GrafanaClient,
    GrafanaDenied,
    GrafanaError,
    GrafanaUnreachable,
    SilenceNotFound,
)
from bot.silencing.ledger import CLAIM_WAIT_SECONDS, ClaimLost, SilenceLedger
from bot.silencing.matchers import MAX_SILENCES_PER_INCIDENT, silence_matchers
from bot.silencing.permissions import NotAllowed, Permissions
from bot.store import Store
from bot.telemetry.metrics import Metrics

log = logging.getLogger(__name__)

SILENCING_OFF = (
    ":information_source: Silencing from Slack is off: queuebot needs `GRAFANA_URL` and"
    " `GRAFANA_TOKEN` (a Grafana service-account token whose role has `alert.silences:create`,"
    " `:write` and `:read` on the rule's folder, and `alert.instances:read`). docs/slack.md,"
    " “Silences”, says how to set it up."
)


class SilenceRefused(Exception):
    """Nothing was done, for a reason the person who clicked should read (mrkdwn)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def explain(
    exc: GrafanaError, doing: str, incident: Incident | None = None, outcome: str | None = None
) -> str:
    """A Grafana failure in the words of the person who clicked; `doing` is "silence" or
    "unsilence", `outcome` what became of it when that is not "nothing"."""
    nothing = "Nothing was silenced." if doing == "silence" else "The silence is unchanged."
    nothing = outcome or nothing
    rule = incident.group.lead.rule_uid if incident else ""
    where = f"the folder of rule `{escape_mrkdwn(rule)}`" if rule else "the rule's folder"
    detail = escape_mrkdwn(oneline(exc.detail))[:300]
    if isinstance(exc, GrafanaDenied) and exc.status == 401:
        text = (
            "Grafana did not accept queuebot's token (HTTP 401): `GRAFANA_TOKEN` is wrong,"
            f" expired or revoked. {nothing}"
        )
    elif isinstance(exc, GrafanaDenied):
        rule_specific = incident is None or all(
            any(m.name == RULE_UID_LABEL and m.is_equal and not m.is_regex for m in matcher_set)
            for matcher_set in silence_matchers(incident.group)
        )
        if rule_specific:
            action = "create" if doing == "silence" else "write"
            lacks = f"`alert.silences:{action}` on {where}"
        else:
            # Silences without a rule UID are not rule-specific: folder permissions do not
            # cover them (Grafana's ngalert api/authorization.go).
            lacks = f"`alert.instances:{'create' if doing == 'silence' else 'write'}`"
        text = f"Grafana refused (HTTP 403: {detail}): queuebot's service account lacks {lacks}."
        text += f" {nothing}"
    elif exc.status is not None and exc.status < 500 and exc.status != 409:
        text = f"Grafana refused to {doing} it (HTTP {exc.status}): {detail}. {nothing}"
    else:
        text = f"Grafana could not be reached to {doing} it: {detail}. {nothing} Try again."
    url = incident.group.lead.usable_silence_url if incident is not None else ""
    if doing == "silence" and url:
        text += " Or " + link(url, "silence it in Grafana") + "."
    return ":warning: " + text


class Silencer:
    """Creates and lifts the Grafana silences of incidents."""

    def __init__(
        self,
        store: Store,
        grafana: GrafanaClient | None,
        permissions: Permissions,
        metrics: Metrics,
        ledger: SilenceLedger,
        *,
        clock: Clock = SYSTEM,
    ) -> None:
        self._store = store
        self._grafana = grafana
        self._permissions = permissions
        self._metrics = metrics
        self._ledger = ledger
        self._clock = clock

    def _require_grafana(self, incident: Incident) -> GrafanaClient:
        if self._grafana is None:
            text = SILENCING_OFF
            if url := incident.group.lead.usable_silence_url:
                text += " Meanwhile you can " + link(url, "silence it in Grafana") + "."
            raise SilenceRefused(text)
        return self._grafana

    async def incident(self, incident_id: int) -> Incident:
        incident = await self._store.get_incident(incident_id)
        if incident is None:
            raise SilenceRefused(":warning: queuebot has no record of this incident.")
        return incident

    async def _allowed(self, user_id: str) -> None:
        try:
            await self._permissions.check(user_id)
        except NotAllowed as refused:
            raise SilenceRefused(refused.text) from None

    @staticmethod
    def _silenceable(incident: Incident) -> tuple[MatcherSet, ...]:
        if incident.status is not IncidentStatus.FIRING:
            raise SilenceRefused(
                ":large_green_circle: This incident is resolved; there is nothing to silence."
            )
        if incident.silence is not None:
            silence = incident.silence
            raise SilenceRefused(
                f":mute: Already silenced until {date_token(silence.ends_at)}"
                f" by {who(silence.by)}. Use *Unsilence* on the alert message to lift it."
            )
        sets = silence_matchers(incident.group)
        if not sets:
            text = (
                ":warning: Some of these alerts carry nothing a silence could match (no rule UID,"
                " no labels), and a silence without matchers would silence every alert in"
                " Grafana. Nothing was silenced."
            )
            if url := incident.group.lead.usable_silence_url:
                text += " Use " + link(url, "Grafana's silence page") + " instead."
            raise SilenceRefused(text)
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
        await self._allowed(user_id)
        for alert in incident.group.firing or incident.group.alerts:
            if foreign := alert.foreign_silence_rule:
                log.warning(
                    "the silenceURL of an alert names rule %r, not its own %r: ignored"
                    " (incident=%s)",
                    foreign[:80],
                    alert.rule_uid,
                    incident_id,
                )
        return incident, self._silenceable(incident)

    async def _claim(self, incident_id: int) -> str:
        owner = await self._ledger.claim(incident_id, wait=CLAIM_WAIT_SECONDS)
        if owner is None:
            raise SilenceRefused(
                ":hourglass: Someone else is changing this incident's silence right now;"
                " try again in a minute."
            )
        return owner

    # -- silence -------------------------------------------------------------------------------

    async def silence(
        self,
        incident_id: int,
        person: Person,
        ends_at: datetime,
        comment: str,
        *,
        shown: str | None,
    ) -> Silence:
        """Create the incident's silence in Grafana and record it; one at a time per incident.

        `shown` is the `matchers_digest` of what the person saw in the modal: when the matchers
        are not those any more, nothing is created."""
        incident = await self.incident(incident_id)
        grafana = self._require_grafana(incident)
        await self._allowed(person.id)
        self._silenceable(incident)
        thread = incident.permalink or "the incident's thread in Slack"
        owner = await self._claim(incident_id)
        try:
            # Whoever held the claim before may have silenced it meanwhile.
            incident = await self.incident(incident_id)
            sets = self._silenceable(incident)
            if shown != matchers_digest(sets):
                raise SilenceRefused(
                    ":warning: The incident's alerts changed after the silence dialog opened,"
                    " so the silence would no longer match what it showed. Nothing was"
                    " silenced: press *Silence…* again to see what it would match now."
                )
            now = self._clock.now()
            # Lets a silence whose creation answer was lost be found again.
            marker = f"queuebot incident {incident_id} request {owner[:12]}"
            said = comment.strip() or f"Silenced from Slack by {person.name}"
            text = f"{said}\n\nSlack thread: {thread}\n({marker})"
            created = await self._create(
                grafana, incident, sets, now, ends_at, person, text, marker
            )
            silence = Silence(
                ids=tuple(created),
                matchers=sets,
                starts_at=now,
                ends_at=ends_at,
                by=person,
                comment=comment,
                alert_seen=await self._alert_listed(grafana, sets),
            )
            try:
                await self._ledger.record(incident_id, owner, silence, now)
            except BaseException as exc:
                # Not recorded means not shown: take the silences back rather than leave
                # ones nobody in Slack knows about.
                await self._undo(grafana, created)
                if isinstance(exc, ClaimLost):
                    raise SilenceRefused(
                        ":warning: Grafana took too long; the silence was taken back."
                        " Nothing was silenced; try again."
                    ) from None
                raise
        finally:
            await self._ledger.release(incident_id, owner)
        self._metrics.inc("queuebot_silences_total", action="created")
        log.info(
            "silenced until %s by %s (incident=%s silences=%s)",
            ends_at.isoformat(),
            person.id,
            incident_id,
            ",".join(created),
        )
        return silence

    async def _create(
        self,
        grafana: GrafanaClient,
        incident: Incident,
        sets: tuple[MatcherSet, ...],
        now: datetime,
        ends_at: datetime,
        person: Person,
        text: str,
        marker: str,
    ) -> list[str]:
        created: list[str] = []
        try:
            for matcher_set in sets:
                created.append(
                    await grafana.create_silence(matcher_set, now, ends_at, person.created_by, text)
                )
        except GrafanaError as exc:
            log.warning(
                "silence not created: %s (incident=%s user=%s)", exc, incident.id, person.id
            )
            # Timed out, answer lost or unreadable, or a 5xx from a proxy in front of Grafana:
            # the silence may exist all the same.
            unclear = not isinstance(exc, GrafanaUnreachable) and (
                exc.status is None or exc.status >= 500
            )
            if unclear:
                try:
                    for matcher_set in sets:
                        found = await grafana.find_silences(matcher_set[0], marker)
                        created.extend(s.id for s in found if s.id not in created)
                except GrafanaError as lookup:
                    log.error("cannot tell whether Grafana made the silence: %s", lookup)
                    outcome = (
                        f"Grafana may have made it anyway: look for “{marker}” in its silences."
                    )
                    raise SilenceRefused(explain(exc, "silence", incident, outcome)) from None
            if not await self._undo(grafana, created):
                outcome = f"Part of it may remain in Grafana: look for “{marker}” in its silences."
                raise SilenceRefused(explain(exc, "silence", incident, outcome)) from None
            raise SilenceRefused(explain(exc, "silence", incident)) from None
        return created

    @staticmethod
    async def _undo(grafana: GrafanaClient, created: list[str]) -> bool:
        undone = True
        for silence_id in created:
            try:
                await grafana.expire_silence(silence_id)
            except SilenceNotFound:
                pass
            except GrafanaError as exc:
                log.error("silence %s left behind after a failure: %s", silence_id, exc)
                undone = False
        return undone

    @staticmethod
    async def _alert_listed(grafana: GrafanaClient, sets: tuple[MatcherSet, ...]) -> bool:
        try:
            for matcher_set in sets:
                if await grafana.alerts(matcher_set):
                    return True
        except GrafanaError as exc:
            log.warning("cannot read alert state from Grafana: %s", exc)
        return False

    # -- unsilence -----------------------------------------------------------------------------

    async def unsilence(self, incident_id: int, person: Person) -> Silence:
        """Expire the incident's silence in Grafana (one already gone counts as expired)."""
        incident = await self.incident(incident_id)
        grafana = self._require_grafana(incident)
        await self._allowed(person.id)
        if incident.silence is None:
            raise SilenceRefused(":bell: This incident is not silenced (any more).")
        owner = await self._claim(incident_id)
        try:
            incident = await self.incident(incident_id)
            silence = incident.silence
            if silence is None:
                raise SilenceRefused(":bell: The silence was lifted a moment ago.")
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
                    raise SilenceRefused(explain(exc, "unsilence", incident)) from None
            event = ThreadEvent(
                kind=ThreadEventKind.UNSILENCED,
                at=self._clock.now(),
                group=incident.group,
                silence=silence,
                actor=person,
            )
            if not await self._ledger.lift(incident_id, silence, event):
                raise SilenceRefused(":bell: The silence was lifted a moment ago.")
        finally:
            await self._ledger.release(incident_id, owner)
        self._metrics.inc("queuebot_silences_total", action="expired")
        log.info("unsilenced by %s (incident=%s)", person.id, incident_id)
        return silence
