"""Pydantic models at the edge (webhook bodies) and the domain they become (AlertGroup, Alert).

Grafana's webhook contact point sends version "1", Prometheus Alertmanager's webhook version "4"
(https://grafana.com/docs/grafana/latest/alerting/configure-notifications/manage-contact-points/integrations/webhook-notifier/,
https://prometheus.io/docs/alerting/latest/configuration/#webhook_config). Both become one
`AlertGroup`; past `parse_webhook`, code never looks at a raw body again.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Literal, TypeVar
from urllib.parse import parse_qsl, urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator


class AlertStatus(StrEnum):
    FIRING = "firing"
    RESOLVED = "resolved"


class Source(StrEnum):
    GRAFANA = "grafana"
    ALERTMANAGER = "alertmanager"


Labels = dict[str, str]


class _WebhookAlert(BaseModel):
    model_config = ConfigDict(extra="ignore")

    status: AlertStatus
    labels: Labels = Field(default_factory=dict)
    annotations: Labels = Field(default_factory=dict)
    startsAt: datetime
    endsAt: datetime | None = None
    generatorURL: str = ""
    fingerprint: str = ""


class GrafanaAlert(_WebhookAlert):
    silenceURL: str = ""
    dashboardURL: str = ""
    panelURL: str = ""
    values: dict[str, Annotated[float, Field(allow_inf_nan=False)] | None] | None = None
    valueString: str = ""
    ruleUID: str = ""
    imageURL: str = ""


class _WebhookBody(BaseModel):
    model_config = ConfigDict(extra="ignore")

    receiver: str = ""
    status: AlertStatus
    groupKey: str = Field(min_length=1, max_length=10_000)
    groupLabels: Labels = Field(default_factory=dict)
    commonLabels: Labels = Field(default_factory=dict)
    commonAnnotations: Labels = Field(default_factory=dict)
    externalURL: str = ""
    truncatedAlerts: int = Field(0, ge=0)


_Body = TypeVar("_Body", bound="_WebhookBody")


def _status_matches_alerts(body: _Body) -> _Body:
    """A group is firing when one of its alerts is (Alertmanager's own rule for `status`)."""
    firing = any(a.status is AlertStatus.FIRING for a in body.alerts)  # type: ignore[attr-defined]
    if firing != (body.status is AlertStatus.FIRING):
        raise ValueError(
            f"status is {body.status.value!r} but "
            f"{'some alerts are' if firing else 'no alert is'} firing"
        )
    return body


class GrafanaWebhook(_WebhookBody):
    """Grafana-managed alerting's webhook body (`version: "1"`)."""

    version: Literal["1"]
    alerts: list[GrafanaAlert] = Field(min_length=1, max_length=10_000)
    orgId: int | None = None
    title: str = ""
    state: str = ""
    message: str = ""

    _consistent = model_validator(mode="after")(_status_matches_alerts)


class AlertmanagerWebhook(_WebhookBody):
    """Prometheus Alertmanager's webhook body (`version: "4"`)."""

    version: Literal["4"]
    alerts: list[_WebhookAlert] = Field(min_length=1, max_length=10_000)

    _consistent = model_validator(mode="after")(_status_matches_alerts)


WebhookBody = Annotated[GrafanaWebhook | AlertmanagerWebhook, Field(discriminator="version")]
WEBHOOK_ADAPTER: TypeAdapter[GrafanaWebhook | AlertmanagerWebhook] = TypeAdapter(WebhookBody)


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
        return (self.firing or self.alerts)[0]

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


_ZERO_TIME_YEAR = 1  # Grafana and Alertmanager send 0001-01-01T00:00:00Z for "not ended"
_RULE_IN_SILENCE_URL = "__alert_rule_uid__="
_RULE_IN_GENERATOR_URL = re.compile(r"/alerting/grafana/([^/?#]+)/view")


def rule_uid_of(
    rule_uid: str, silence_url: str, generator_url: str, labels: Labels | None = None
) -> str:
    """The Grafana rule UID: `ruleUID` (Grafana ≥ 12.4), the silenceURL matcher, generatorURL."""
    if rule_uid:
        return rule_uid
    if labels and labels.get("__alert_rule_uid__"):
        return labels["__alert_rule_uid__"]
    try:
        query, path = urlsplit(silence_url).query, urlsplit(generator_url).path
    except ValueError:  # a malformed URL names no rule
        return ""
    for key, value in parse_qsl(query):
        if key == "matcher" and value.startswith(_RULE_IN_SILENCE_URL):
            return value.removeprefix(_RULE_IN_SILENCE_URL)
    found = _RULE_IN_GENERATOR_URL.search(path)
    return found.group(1) if found else ""


def _fingerprint(labels: Labels) -> str:
    text = "\x00".join(f"{k}\x00{v}" for k, v in sorted(labels.items()))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _end(value: datetime | None) -> datetime | None:
    if value is None or value.year <= _ZERO_TIME_YEAR:
        return None
    return _utc(value)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def to_alert_group(body: GrafanaWebhook | AlertmanagerWebhook) -> AlertGroup:
    """The domain view of a parsed webhook body."""
    alerts = []
    for raw in body.alerts:
        extra = raw if isinstance(raw, GrafanaAlert) else None
        alerts.append(
            Alert(
                status=raw.status,
                fingerprint=raw.fingerprint or _fingerprint(raw.labels),
                labels=raw.labels,
                annotations=raw.annotations,
                starts_at=_utc(raw.startsAt),
                ends_at=_end(raw.endsAt),
                generator_url=raw.generatorURL,
                silence_url=extra.silenceURL if extra else "",
                dashboard_url=extra.dashboardURL if extra else "",
                panel_url=extra.panelURL if extra else "",
                image_url=extra.imageURL if extra else "",
                rule_uid=rule_uid_of(
                    extra.ruleUID if extra else "",
                    extra.silenceURL if extra else "",
                    raw.generatorURL,
                    raw.labels,
                ),
                values=(extra.values or {}) if extra else {},
            )
        )
    return AlertGroup(
        source=Source.GRAFANA if isinstance(body, GrafanaWebhook) else Source.ALERTMANAGER,
        group_key=body.groupKey,
        status=body.status,
        receiver=body.receiver,
        alerts=tuple(alerts),
        group_labels=body.groupLabels,
        common_labels=body.commonLabels,
        common_annotations=body.commonAnnotations,
        title=body.title if isinstance(body, GrafanaWebhook) else "",
        truncated_alerts=body.truncatedAlerts,
    )


def parse_webhook(raw: bytes) -> AlertGroup:
    """Parse a webhook body; raises pydantic.ValidationError (or ValueError) when malformed."""
    return to_alert_group(WEBHOOK_ADAPTER.validate_json(raw))


class ButtonValue(BaseModel):
    """What a button carries: a version and the incident id, nothing the handler must trust."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    v: Literal[1] = 1
    incident: int = Field(ge=1)

    def encode(self) -> str:
        return self.model_dump_json()

    @classmethod
    def decode(cls, raw: str) -> ButtonValue:
        """Raises pydantic.ValidationError for a value queuebot did not make."""
        return cls.model_validate_json(raw)
