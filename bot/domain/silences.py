"""What a silence of an incident is: its matchers, its duration, who made it. Pure, no I/O.

The matchers are the ones Grafana itself puts in an alert's silenceURL (research: Grafana builds
it from `__alert_rule_uid__` plus every non-private label except `alertname` and
`grafana_folder`). Such a silence is "rule-specific", so a service account with
`alert.silences:create` on the rule's folder may create it. An alert without a rule UID (an
Alertmanager v4 notification) is silenced on all its labels.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from bot.domain.alerts import Alert, AlertGroup
from bot.slack.contract import SilenceInput

RULE_UID_LABEL = "__alert_rule_uid__"
#: Labels Grafana leaves out of a silence (pkg/services/ngalert: silenceURL).
_NOT_MATCHED = {"alertname", "grafana_folder"}
#: More distinct rules than this in one incident is a job for Grafana's own silence page.
MAX_SILENCES_PER_INCIDENT = 10
#: Silences longer than this are more likely a typo than a plan.
MAX_SILENCE = timedelta(days=31)


class Matcher(BaseModel):
    """One Alertmanager matcher, in the API's field names (PostableSilence.matchers[])."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    name: str
    value: str
    is_regex: bool = Field(False, alias="isRegex")
    is_equal: bool = Field(True, alias="isEqual")

    @property
    def operator(self) -> str:
        return {(False, True): "=", (False, False): "!=", (True, True): "=~"}.get(
            (self.is_regex, self.is_equal), "!~"
        )

    def __str__(self) -> str:
        return f"{self.name}{self.operator}{self.value}"

    def filter(self) -> str:
        """The matcher in Alertmanager's `filter=` syntax: name="value", quotes escaped."""
        quoted = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{self.name}{self.operator}"{quoted}"'


MatcherSet = tuple[Matcher, ...]


class Person(BaseModel):
    """A Slack user as queuebot names them: id, and the name people know them by."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str

    @property
    def created_by(self) -> str:
        """Grafana's `createdBy`: the display name and the Slack id."""
        return f"{self.name} (Slack {self.id})"


class Silence(BaseModel):
    """The silence (one per matcher set) queuebot made for an incident, as it was made."""

    model_config = ConfigDict(frozen=True)

    ids: tuple[str, ...]
    matchers: tuple[MatcherSet, ...]
    starts_at: datetime
    ends_at: datetime
    by: Person
    comment: str = ""
    #: Whether Grafana listed the silenced alert at least once; only then does its absence
    #: mean it resolved (a silenced alert sends no resolved notification).
    alert_seen: bool = False
    #: Since when Grafana has not listed the alert (after having listed it).
    alert_absent_since: datetime | None = None


class Duration(StrEnum):
    """The modal's choices; `UNTIL` takes the date and time picked in the modal."""

    MIN_30 = "30m"
    HOUR_1 = "1h"
    HOUR_2 = "2h"
    HOUR_4 = "4h"
    HOUR_8 = "8h"
    HOUR_24 = "24h"
    UNTIL = "until"

    @property
    def span(self) -> timedelta | None:
        if self is Duration.UNTIL:
            return None
        if self.value.endswith("m"):
            return timedelta(minutes=int(self.value[:-1]))
        return timedelta(hours=int(self.value[:-1]))

    @property
    def label(self) -> str:
        return _DURATION_LABELS[self]


_DURATION_LABELS = {
    Duration.MIN_30: "30 minutes",
    Duration.HOUR_1: "1 hour",
    Duration.HOUR_2: "2 hours",
    Duration.HOUR_4: "4 hours",
    Duration.HOUR_8: "8 hours",
    Duration.HOUR_24: "24 hours",
    Duration.UNTIL: "Until a date and time…",
}


def _from_silence_url(url: str) -> MatcherSet:
    """The `matcher=` parameters of Grafana's silenceURL, exactly as Grafana wrote them."""
    try:
        query = urlsplit(url).query
    except ValueError:
        return ()
    found: list[Matcher] = []
    for key, raw in parse_qsl(query):
        if key != "matcher":
            continue
        for operator, regex, equal in (
            ("=~", True, True),
            ("!~", True, False),
            ("!=", False, False),
        ):
            name, sep, value = raw.partition(operator)
            if sep and name and "=" not in name:
                found.append(Matcher(name=name, value=value, is_regex=regex, is_equal=equal))
                break
        else:
            name, sep, value = raw.partition("=")
            if sep and name:
                found.append(Matcher(name=name, value=value))
    return tuple(found)


def alert_matchers(alert: Alert) -> MatcherSet:
    """The matchers that silence exactly this alert, Grafana's way."""
    from_url = _from_silence_url(alert.silence_url)
    if any(m.name == RULE_UID_LABEL for m in from_url):
        return from_url
    if alert.rule_uid:
        labels = {
            k: v
            for k, v in sorted(alert.labels.items())
            if k not in _NOT_MATCHED and not (k.startswith("__") and k.endswith("__"))
        }
        return (
            Matcher(name=RULE_UID_LABEL, value=alert.rule_uid),
            *(Matcher(name=k, value=v) for k, v in labels.items()),
        )
    return tuple(Matcher(name=k, value=v) for k, v in sorted(alert.labels.items()) if v)


def silence_matchers(group: AlertGroup) -> tuple[MatcherSet, ...]:
    """One matcher set per rule of the incident (alerts of one rule share what they have in
    common), so a silence covers the incident's alerts and nothing beyond their rules."""
    by_rule: dict[str, list[MatcherSet]] = {}
    for alert in group.firing or group.alerts:
        own = alert_matchers(alert)
        key = alert.rule_uid or alert.labels.get("alertname", "") or str(own)
        by_rule.setdefault(key, []).append(own)
    sets: list[MatcherSet] = []
    for matcher_sets in by_rule.values():
        common = _common(matcher_sets)
        if common:
            sets.append(common)
        else:
            sets.extend(matcher_sets)
    return tuple(dict.fromkeys(s for s in sets if s))


def _common(sets: Iterable[MatcherSet]) -> MatcherSet:
    sets = list(sets)
    first = sets[0]
    return tuple(m for m in first if all(m in other for other in sets[1:]))


def preview(sets: tuple[MatcherSet, ...]) -> str:
    """The matchers as plain text, one silence per line."""
    return "\n".join(", ".join(str(m) for m in matcher_set) for matcher_set in sets)


class BadSilenceInput(ValueError):
    """What is wrong with one input of the Silence… modal, said to the person filling it in."""

    def __init__(self, block: SilenceInput, message: str) -> None:
        super().__init__(message)
        self.block = block


def silence_end(choice: Duration, until: datetime | None, now: datetime) -> datetime:
    """When a silence chosen in the modal ends; BadSilenceInput names the input at fault."""
    span = choice.span
    if span is not None:
        if until is not None:
            raise BadSilenceInput(
                SilenceInput.DURATION,
                "You picked an end time: choose “Until a date and time…” here, or clear it.",
            )
        return now + span
    if until is None:
        raise BadSilenceInput(SilenceInput.UNTIL, "Pick the date and time the silence ends.")
    if until <= now:
        raise BadSilenceInput(SilenceInput.UNTIL, "That time has passed; pick one in the future.")
    if until - now > MAX_SILENCE:
        raise BadSilenceInput(SilenceInput.UNTIL, "A silence from Slack lasts at most 31 days.")
    return until
