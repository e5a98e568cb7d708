"""A silence of an incident as queuebot made it: its matchers, its span, who made it. Pure data.

`Matcher` speaks the field names of Alertmanager's API (PostableSilence.matchers[]), which
Grafana's silence API shares; `Duration` is the choice the Silence… modal offers.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

RULE_UID_LABEL = "__alert_rule_uid__"

#: A label name every Alertmanager can read in a `filter=` query: the classic Prometheus rule.
#: Alertmanager 0.25's parser (pkg/labels/parse.go) reads the name as `[a-zA-Z_:][a-zA-Z0-9_:]*`
#: with blanks around it and cannot quote one, so any other name would be misread: `type!`
#: makes `type!="x"` a negative matcher, `type ` is read as `type`, a quote breaks the query.
#: 0.27 and later also read a quoted UTF-8 name (matchers/compat, unless in classic mode), which
#: 0.25 answers with 400; only names every version reads the same are written.
PLAIN_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


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

    @property
    def plain_name(self) -> bool:
        return PLAIN_LABEL_NAME.fullmatch(self.name) is not None

    def filter(self) -> str | None:
        """The matcher in Alertmanager's `filter=` syntax, name="value" with the value's quotes
        and backslashes escaped; None when the name cannot be written there (PLAIN_LABEL_NAME),
        so the caller leaves it out of the query and checks it with `matches` instead."""
        if not self.plain_name:
            return None
        quoted = self.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{self.name}{self.operator}"{quoted}"'

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an alert with `labels` is selected, as Alertmanager decides: a missing label
        is the empty string, a regex is anchored at both ends."""
        value = str(labels.get(self.name, ""))
        if self.is_regex:
            try:
                hit = re.fullmatch(self.value, value) is not None
            except re.error:
                return False
        else:
            hit = value == self.value
        return hit == self.is_equal


MatcherSet = tuple[Matcher, ...]


def matchers_digest(sets: tuple[MatcherSet, ...]) -> str:
    """A short fingerprint of matcher sets: the Silence… modal carries the one it showed, so
    what is sent can be checked to be what was shown."""
    canonical = json.dumps([[m.model_dump(by_alias=True) for m in s] for s in sets])
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


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
