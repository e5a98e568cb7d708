"""Webhook bodies as they arrive, parsed at the edge into the domain's `AlertGroup`.

Grafana's webhook contact point sends version "1", Prometheus Alertmanager's webhook version "4"
(https://grafana.com/docs/grafana/latest/alerting/configure-notifications/manage-contact-points/integrations/webhook-notifier/,
https://prometheus.io/docs/alerting/latest/configuration/#webhook_config). Both become one
`AlertGroup`; past `parse_webhook`, code never looks at a raw body again.
"""

from __future__ import annotations

from collections.abc import Container
from datetime import UTC, datetime
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

from bot.domain.alerts import (
    NAMED_VALUE_KEYS,
    Alert,
    AlertGroup,
    AlertStatus,
    Labels,
    Source,
    fingerprint_of,
    rule_uid_of,
    with_annotated_values,
)

#: Alerts in one notification at most (Grafana and Alertmanager send a whole group at once).
MAX_ALERTS = 10_000
_ZERO_TIME_YEAR = 1  # Grafana and Alertmanager send 0001-01-01T00:00:00Z for "not ended"


class WebhookAlert(BaseModel):
    model_config = ConfigDict(extra="ignore")

    status: AlertStatus
    labels: Labels = Field(default_factory=dict)
    annotations: Labels = Field(default_factory=dict)
    startsAt: datetime
    endsAt: datetime | None = None
    generatorURL: str = ""
    fingerprint: str = ""


class GrafanaWebhookAlert(WebhookAlert):
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
    alerts: list[GrafanaWebhookAlert] = Field(min_length=1, max_length=MAX_ALERTS)
    orgId: int | None = None
    title: str = ""
    state: str = ""
    message: str = ""

    _consistent = model_validator(mode="after")(_status_matches_alerts)


class AlertmanagerWebhook(_WebhookBody):
    """Prometheus Alertmanager's webhook body (`version: "4"`)."""

    version: Literal["4"]
    alerts: list[WebhookAlert] = Field(min_length=1, max_length=MAX_ALERTS)

    _consistent = model_validator(mode="after")(_status_matches_alerts)


WebhookBody = Annotated[GrafanaWebhook | AlertmanagerWebhook, Field(discriminator="version")]
WEBHOOK_ADAPTER: TypeAdapter[GrafanaWebhook | AlertmanagerWebhook] = TypeAdapter(WebhookBody)


class TimeOutOfRange(ValueError):
    """A time pydantic accepts but that cannot be moved to UTC (year 1 at +01:00)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem


def _end(value: datetime | None) -> datetime | None:
    if value is None or value.year <= _ZERO_TIME_YEAR:
        return None
    return _utc(value)


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _in_range(value: datetime | None) -> bool:
    try:
        _end(value)
    except (OverflowError, ValueError):
        return False
    return True


def to_alert_group(
    body: GrafanaWebhook | AlertmanagerWebhook, value_keys: Container[str] = NAMED_VALUE_KEYS
) -> AlertGroup:
    """The domain view of a parsed webhook body; an annotation under one of `value_keys` whose
    text is a number is one of its alert's values."""
    alerts = []
    for index, raw in enumerate(body.alerts):
        extra = raw if isinstance(raw, GrafanaWebhookAlert) else None
        try:
            starts_at, ends_at = _utc(raw.startsAt), _end(raw.endsAt)
        except (OverflowError, ValueError) as exc:
            field = "startsAt" if _in_range(raw.endsAt) else "endsAt"
            raise TimeOutOfRange(f"alerts.{index}.{field}", str(exc)) from None
        alerts.append(
            Alert(
                status=raw.status,
                fingerprint=raw.fingerprint or fingerprint_of(raw.labels),
                labels=raw.labels,
                annotations=raw.annotations,
                starts_at=starts_at,
                ends_at=ends_at,
                generator_url=raw.generatorURL,
                silence_url=extra.silenceURL if extra else "",
                dashboard_url=extra.dashboardURL if extra else "",
                panel_url=extra.panelURL if extra else "",
                image_url=extra.imageURL if extra else "",
                rule_uid=rule_uid_of(extra.ruleUID if extra else "", raw.generatorURL, raw.labels),
                # Alertmanager has no values map: a rule gives them as annotations.
                values=with_annotated_values(
                    (extra.values or {}) if extra else {}, raw.annotations, value_keys
                ),
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


def parse_webhook(raw: bytes, value_keys: Container[str] = NAMED_VALUE_KEYS) -> AlertGroup:
    """Parse a webhook body (`value_keys`: the values' names its annotations may give, the
    YAML file's among them); raises pydantic.ValidationError, or TimeOutOfRange, when
    malformed. A group of thousands of alerts takes a while: callers on the event loop run it
    in a thread."""
    return to_alert_group(WEBHOOK_ADAPTER.validate_json(raw), value_keys)
