"""Alerts as queuebot keeps and shows them: one group of alerts per notification (`AlertGroup`),
whichever system sent it. Built from webhook bodies by `bot.domain.notifications`.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Container, Iterator, Mapping
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

#: The values queuebot has names for (`bot.render.values.KNOWN_VALUES`), thresholds included:
#: an annotation with one of these keys whose text is a number is one of the alert's values.
NAMED_VALUE_KEYS = frozenset(
    {
        "max_queue_time_mins",
        "queue_time_threshold",
        "max_queue_size",
        "queue_size_threshold",
        "queued_jobs",
        "longest_wait_minutes",
    }
)
#: The annotations that may name an alert's dashboard (after Grafana's own dashboardURL).
DASHBOARD_KEYS = ("dashboard", "dashboard_url")
#: The fields queuebot shows as text or links (`AlertGroup.field`'s names, the runbook and the
#: dashboard), any case: never one of an alert's values.
TEXT_ANNOTATIONS = frozenset(
    {"summary", "description", "runbook_url", "priority", "team", *DASHBOARD_KEYS}
)
#: A number as a rule's template writes one ("14", "113.5", "-2", "1.2e+03"), in ASCII digits
#: and no longer than this: Python's own `float()` would also take "nan", "inf", "1_000" and
#: other scripts' digits.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_MAX_NUMBER_CHARS = 64


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
    def foreign_silence_rule(self) -> str:
        """A rule UID the silenceURL names that is not this alert's own ("" when none): the
        sender writes the silenceURL, and a silence aimed from it would hit another rule."""
        for uid in silence_url_rules(self.silence_url):
            if uid != self.rule_uid:
                return uid
        return ""

    @property
    def usable_silence_url(self) -> str:
        """The silenceURL, unless it names another rule than the alert's own."""
        return "" if self.foreign_silence_rule else self.silence_url

    @property
    def dashboard_links(self) -> tuple[str, ...]:
        """Where the alert's dashboard may be, best first: Grafana's dashboardURL and panelURL,
        then the `dashboard` or `dashboard_url` annotation (any case): an Alertmanager alert's
        only way to name one."""
        named = {key.lower(): value for key, value in self.annotations.items()}
        found = (self.dashboard_url, self.panel_url, *(named.get(k, "") for k in DASHBOARD_KEYS))
        return tuple(url for url in found if url.strip())

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


_RULE_IN_SILENCE_URL = "__alert_rule_uid__"
_RULE_IN_GENERATOR_URL = re.compile(r"/alerting/grafana/([^/?#]+)/view")
#: What Grafana accepts as a UID (pkg/util: letters, digits, '-' and '_', at most 40), plus '.'
#: for the Kubernetes-style names Grafana is moving to. Anything else (`~.+`, `.*`) is not a
#: rule UID, whichever field it came in.
_RULE_UID = re.compile(r"[A-Za-z0-9._-]{1,253}")


def rule_uid_of(rule_uid: str, generator_url: str, labels: Labels | None = None) -> str:
    """The Grafana rule UID: `ruleUID` (Grafana ≥ 12.4), the alert's own `__alert_rule_uid__`
    label, the rule's path in generatorURL (the View alert link); the first that is shaped like
    a UID. Never the silenceURL: it is only a suggestion of how to silence, and one naming
    another rule would aim the silence there (`Alert.foreign_silence_rule`)."""
    for candidate in _rule_uid_candidates(rule_uid, generator_url, labels or {}):
        if _RULE_UID.fullmatch(candidate):
            return candidate
    return ""


def _rule_uid_candidates(rule_uid: str, generator_url: str, labels: Labels) -> Iterator[str]:
    """In order of trust; lazily, since the first is usually the one (and URLs of thousands of
    alerts are slow to parse)."""
    yield rule_uid
    yield labels.get("__alert_rule_uid__", "")
    try:
        path = urlsplit(generator_url).path
    except ValueError:  # a malformed URL names no rule
        return
    in_path = _RULE_IN_GENERATOR_URL.search(path)
    if in_path:
        yield in_path.group(1)


def silence_url_rules(silence_url: str) -> list[str]:
    """The rule UIDs a silenceURL's `__alert_rule_uid__` matchers name, whatever their operator
    (`=~.+` names every rule)."""
    try:
        query = urlsplit(silence_url).query
    except ValueError:
        return []
    found = []
    for key, value in parse_qsl(query):
        name, operator, named = value.partition("=")
        if key == "matcher" and operator and name.rstrip("!") == _RULE_IN_SILENCE_URL:
            found.append(named.lstrip("~"))
    return found


def annotated_number(text: str) -> float | None:
    """The number an annotation's text is, when it is one finite number and nothing else."""
    text = text.strip()
    if len(text) > _MAX_NUMBER_CHARS or not _NUMBER.fullmatch(text):
        return None
    number = float(text)
    return number if math.isfinite(number) else None


def with_annotated_values(
    values: Mapping[str, float | None], annotations: Labels, keys: Container[str]
) -> dict[str, float | None]:
    """`values` and, for each annotation named by `keys` whose text is a number, that number;
    a key the values already have keeps its value."""
    found = dict(values)
    for key, text in annotations.items():
        if key in keys and key not in found and (number := annotated_number(text)) is not None:
            found[key] = number
    return found


def fingerprint_of(labels: Labels) -> str:
    text = "\x00".join(f"{k}\x00{v}" for k, v in sorted(labels.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
