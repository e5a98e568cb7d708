"""A silence of an incident as queuebot made it: its matchers, its span, who made it. Pure data.

`Matcher` speaks the field names of Alertmanager's API (PostableSilence.matchers[]), which
Grafana's silence API shares; `Duration` is the choice the Silence… modal offers.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

RULE_UID_LABEL = "__alert_rule_uid__"


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
