"""Alerts as queuebot keeps and shows them: one group of alerts per notification (`AlertGroup`),
whichever system sent it. Built from webhook bodies by `bot.domain.notifications`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from datetime import datetime
from enum import StrEnum
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field


class AlertStatus(StrEnum):
    FIRING = "firing"
    RESOLVED = "resolved"


class Source(StrEnum):
    GRAFANA = "grafana"
    ALERTMANAGER = "alertmanager"


Labels = dict[str, str]


class Alert(BaseModel):
    """One alert instance of a group, as queuebot keeps and shows it."""

    model_config = ConfigDict(frozen=True)

    status: AlertStatus
    fingerprint: str
    labels: Labels
    annotations: Labels
    starts_at: datetime
    ends_at: datetime | None = None
    generator_url: str = ""
    silence_url: str = ""
    dashboard_url: str = ""
    panel_url: str = ""
    image_url: str = ""
    rule_uid: str = ""
    values: dict[str, float | None] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.labels.get("rulename") or self.labels.get("alertname") or "Alert"

    @property
    def shown_labels(self) -> Labels:
        """Labels worth showing: not private (`__x__`), not the name or the folder."""
        hidden = {"alertname", "grafana_folder", "rulename"}
        return {
            key: value
            for key, value in sorted(self.labels.items())
            if key not in hidden and not (key.startswith("__") and key.endswith("__"))
        }


class AlertGroup(BaseModel):
    """A notification's content: one Grafana/Alertmanager group of alerts."""

    model_config = ConfigDict(frozen=True)

    source: Source
    group_key: str
    status: AlertStatus
    receiver: str = ""
    alerts: tuple[Alert, ...]
    group_labels: Labels = Field(default_factory=dict)
    common_labels: Labels = Field(default_factory=dict)
    common_annotations: Labels = Field(default_factory=dict)
    title: str = ""
    truncated_alerts: int = 0

    @property
    def firing(self) -> tuple[Alert, ...]:
        return tuple(a for a in self.alerts if a.status is AlertStatus.FIRING)

    @property
    def lead(self) -> Alert:
        """The alert that speaks for the group: the first firing one, else the first."""
        # Asked for often, of groups of thousands of alerts: stop at the first firing one.
        return next((a for a in self.alerts if a.status is AlertStatus.FIRING), self.alerts[0])

    def field(self, name: str) -> str:
        """An annotation or label of the group, any case: annotations first, then labels."""
        lead = self.lead
        for mapping in (
            self.common_annotations,
            lead.annotations,
            self.common_labels,
            lead.labels,
        ):
            for key, value in mapping.items():
                if key.lower() == name.lower() and value.strip():
                    return value
        return ""

    @property
    def name(self) -> str:
        """The rule's name; a group of several rules names them all."""
        names = list(dict.fromkeys(a.name for a in self.alerts if a.labels))
        if not names:
            return self.group_labels.get("alertname") or self.title or "Alert"
        return ", ".join(names)

    @property
    def priority(self) -> str:
        return self.field("priority")

    @property
    def team(self) -> str:
        return self.field("team")

    @property
    def summary(self) -> str:
        return self.field("summary")

    @property
    def description(self) -> str:
        return self.field("description")

    @property
    def runbook_url(self) -> str:
        return self.field("runbook_url")

    @property
    def started_at(self) -> datetime:
        return min(a.starts_at for a in (self.firing or self.alerts))

    @property
    def ended_at(self) -> datetime | None:
        ends = [a.ends_at for a in self.alerts if a.ends_at is not None]
        return max(ends) if ends else None

    def routing_fields(self) -> dict[str, str]:
        """Labels and annotations with lower-cased keys, for channel routing."""
        fields: dict[str, str] = {}
        lead = self.lead
        for mapping in (lead.labels, self.common_labels, lead.annotations, self.common_annotations):
            fields.update({key.lower(): value for key, value in mapping.items()})
        return fields


_RULE_IN_SILENCE_URL = "__alert_rule_uid__="
_RULE_IN_GENERATOR_URL = re.compile(r"/alerting/grafana/([^/?#]+)/view")
#: What Grafana accepts as a UID (pkg/util: letters, digits, '-' and '_', at most 40), plus '.'
#: for the Kubernetes-style names Grafana is moving to. Anything else (`~.+`, `.*`) is not a
#: rule UID, whichever field it came in.
_RULE_UID = re.compile(r"[A-Za-z0-9._-]{1,253}")


def rule_uid_of(
    rule_uid: str, silence_url: str, generator_url: str, labels: Labels | None = None
) -> str:
    """The Grafana rule UID: `ruleUID` (Grafana ≥ 12.4), the silenceURL's equality matcher on
    `__alert_rule_uid__`, generatorURL; the first that is shaped like a UID."""
    for candidate in _rule_uid_candidates(rule_uid, silence_url, generator_url, labels or {}):
        if _RULE_UID.fullmatch(candidate):
            return candidate
    return ""


def _rule_uid_candidates(
    rule_uid: str, silence_url: str, generator_url: str, labels: Labels
) -> Iterator[str]:
    """In order of trust; lazily, since the first is usually the one (and URLs of thousands of
    alerts are slow to parse)."""
    yield rule_uid
    yield labels.get("__alert_rule_uid__", "")
    try:
        query, path = urlsplit(silence_url).query, urlsplit(generator_url).path
    except ValueError:  # a malformed URL names no rule
        return
    # `__alert_rule_uid__=~.+` starts with the prefix too: its "~.+" is refused by the shape.
    for key, value in parse_qsl(query):
        if key == "matcher" and value.startswith(_RULE_IN_SILENCE_URL):
            yield value.removeprefix(_RULE_IN_SILENCE_URL)
    in_path = _RULE_IN_GENERATOR_URL.search(path)
    if in_path:
        yield in_path.group(1)


def fingerprint_of(labels: Labels) -> str:
    text = "\x00".join(f"{k}\x00{v}" for k, v in sorted(labels.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
