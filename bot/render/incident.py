"""The incident's parent message: headline, state, key values, alerts, context and buttons.

Every part has its own length budget, but an alert can still bring more than one message
holds (Slack refuses blocks of more than about 13,200 characters in all, and three links of
3,000 characters each are allowed). Then the parent is rendered again leaving out, one after
the other, what the on-call needs least (`CUTS`), down to a title, the state and the buttons,
which always fit. Anything left out is still in Grafana, and the message says it was shortened.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from bot.domain.alerts import Alert, AlertGroup, AlertStatus
from bot.domain.incidents import Incident, IncidentStatus
from bot.render.alert_lines import alert_lines, common_shown, status_icon
from bot.render.mrkdwn import clip, date_token, escape_mrkdwn, inert, link, oneline, safe_url, who
from bot.render.templates import Templates
from bot.render.values import (
    DEFAULT_NAMING,
    ValueNaming,
    format_duration,
    headline,
    key_values,
    value_summary,
)
from bot.slack import limits
from bot.slack.contract import ActionId, ButtonValue
from bot.slack.limits import slack_len
from bot.slack.message import Message

#: Budgets that keep a message far below Slack's ~12,000-character total.
MAX_ABOUT_CHARS = 1500
MAX_SUMMARY_CHARS = 300
MAX_LABELS_CHARS = 600
MAX_TEAM_CHARS = 100
#: Links longer than this are the first buttons to go when a message would be too long.
MAX_COMPACT_URL = 500

#: What the parent leaves out, in this order, until Slack takes it; each comes back as soon as
#: the alert fits again. First what the on-call needs least:
CUTS = (
    "rule",  # the rule's UID and folder: for whoever edits the rule, not the on-call
    "description",  # the long prose (the summary says it in a line)
    "other_values",  # values besides the named key figures (queue time and size, thresholds)
    "dashboard",  # a Dashboard button with a long link
    "alert_link",  # a View alert button with a long link
    "alerts",  # the list of alerts (the state line still counts them)
    "labels",  # the labels (View alert shows them)
    "runbook",  # an Open runbook button with a long link
    "summary",  # the summary
    "minimal",  # all but the title, the state and the buttons with short links
)
SHORTENED = "Shortened to fit in a Slack message: the alert in Grafana has everything."


def incident_message(
    templates: Templates, incident: Incident, naming: ValueNaming = DEFAULT_NAMING
) -> Message:
    """The incident's parent message in its current state: the fullest form Slack takes."""
    return templates.fitted("incident.json.j2", parent_forms(incident, naming))


def parent_forms(
    incident: Incident, naming: ValueNaming = DEFAULT_NAMING
) -> Iterator[dict[str, Any]]:
    """The parent's template contexts, fullest first, each with one more of `CUTS` made."""
    for count in range(len(CUTS) + 1):
        yield _context(incident, frozenset(CUTS[:count]), naming)


def _context(incident: Incident, cut: frozenset[str], naming: ValueNaming) -> dict[str, Any]:
    group = incident.group
    single = len(group.alerts) == 1
    resolved = incident.status is IncidentStatus.RESOLVED
    minimal = "minimal" in cut
    values = (
        key_values(
            group.lead,
            known_only="other_values" in cut,
            most=limits.MAX_SECTION_FIELDS,
            naming=naming,
        )
        if single
        else []
    )
    context_parts = [] if minimal else _context_parts(incident, cut)
    if cut:
        context_parts.append(SHORTENED)
    return {
        "headline": status_icon(incident) + " " + headline(group),
        "fallback": _fallback(incident, naming),
        "status_line": _status_line(incident),
        "key_values": [] if minimal else values,
        "about": "" if minimal else _about(group, cut),
        "alert_lines": (
            []
            if single or "alerts" in cut
            else alert_lines(group, resolved=resolved, naming=naming)
        ),
        "context_parts": context_parts,
        "buttons": _buttons(incident, cut),
    }


def _fallback(incident: Incident, naming: ValueNaming) -> str:
    group = incident.group
    state = "firing" if incident.status is IncidentStatus.FIRING else "resolved"
    values = value_summary(group.lead, naming) if len(group.alerts) == 1 else ""
    text = f"{escape_mrkdwn(oneline(headline(group)))}: {state}"
    if values:
        text += f". {values}"
    return clip(text, 500)


def _status_line(incident: Incident) -> str:
    group = incident.group
    parts: list[str] = []
    resolved = incident.status is IncidentStatus.RESOLVED
    if resolved and group.status is AlertStatus.RESOLVED:
        # Only the resolution reached queuebot: its values are those at recovery.
        parts.append(
            f"*Resolved* {date_token(incident.resolved_at or group.started_at)}"
            " · queuebot did not see it fire; values shown are at resolution"
        )
    elif resolved:
        span = format_duration(incident.duration or timedelta(0))
        since = f"since {date_token(group.started_at)}"
        if incident.fired_count > 1:
            since += f", fired {incident.fired_count} times from {date_token(incident.started_at)}"
        parts.append(f"*Resolved after {span}* ({since})")
    elif incident.fired_count > 1:
        parts.append(
            f"*Firing again* since {date_token(group.started_at)}"
            f" (fired {incident.fired_count} times, first {date_token(incident.started_at)})"
        )
    else:
        parts.append(f"*Firing* since {date_token(incident.started_at)}")
    if incident.silence is not None and not resolved:
        silence = incident.silence
        parts.insert(
            0, f":mute: *Silenced until {date_token(silence.ends_at)}* by {who(silence.by)}"
        )
    if group.team:
        parts.append(f"*Team:* {inert(group.team, MAX_TEAM_CHARS)}")
    if len(group.alerts) > 1 and not resolved:
        parts.append(f"{len(group.firing)} of {len(group.alerts)} alerts firing")
    elif len(group.alerts) > 1:
        parts.append(f"{len(group.alerts)} alerts")
    return " · ".join(parts)


def _about(group: AlertGroup, cut: frozenset[str]) -> str:
    summary = "" if "summary" in cut else inert(group.summary, MAX_SUMMARY_CHARS)
    description = "" if "description" in cut else escape_mrkdwn(group.description).strip()
    if summary and description and group.summary.strip() != group.description.strip():
        text = f"*{summary}*\n{description}"
    else:
        text = summary or description
    return clip(text, MAX_ABOUT_CHARS)


def _context_parts(incident: Incident, cut: frozenset[str]) -> list[str]:
    group = incident.group
    parts: list[str] = []
    lead = group.lead
    labels = lead.shown_labels if len(group.alerts) == 1 else common_shown(group)
    if labels and "labels" not in cut:
        text = " ".join(f"`{k}={v}`" for k, v in labels.items())
        parts.append(inert(text, MAX_LABELS_CHARS))
    folder = lead.labels.get("grafana_folder")
    if folder and "rule" not in cut:
        parts.append(f"Folder: {inert(folder, 200)}")
    if lead.rule_uid and "rule" not in cut:
        parts.append(f"Rule `{inert(lead.rule_uid, 100)}`")
    runbook = group.runbook_url
    if runbook and safe_url(runbook) is None:
        # Not a link Slack would take (or longer than a button's 3,000 characters): the
        # on-call can still read it.
        parts.append(f"Runbook: {inert(runbook, 300)}")
    if group.truncated_alerts:
        parts.append(f"{group.truncated_alerts} more alerts were left out by the sender")
    if incident.previous_link:
        parts.append(f"Follows {link(incident.previous_link, 'an earlier incident')}")
    return parts


def _buttons(incident: Incident, cut: frozenset[str]) -> list[dict[str, str | None]]:
    group = incident.group
    value = ButtonValue(incident=incident.id).encode()
    buttons: list[dict[str, str | None]] = [
        _button("Run diagnostics", ActionId.RUN_DIAGNOSTICS, value=value, style="primary")
    ]
    if incident.status is IncidentStatus.FIRING and incident.silence is not None:
        buttons.append(_button("Unsilence", ActionId.UNSILENCE, value=value))
    elif incident.status is IncidentStatus.FIRING:
        buttons.append(_button("Silence…", ActionId.SILENCE, value=value))
    lead = group.lead
    for label, action, url, name in (
        ("Open runbook", ActionId.OPEN_RUNBOOK, group.runbook_url, "runbook"),
        ("View alert", ActionId.VIEW_ALERT, lead.generator_url, "alert_link"),
        ("Dashboard", ActionId.OPEN_DASHBOARD, _dashboard(lead), "dashboard"),
    ):
        # A link over Slack's 3,000 characters is never a button (safe_url says None).
        target = safe_url(url)
        long = target is not None and slack_len(target) > MAX_COMPACT_URL
        if target is not None and not (long and (name in cut or "minimal" in cut)):
            buttons.append(_button(label, action, url=target))
    return buttons


def _dashboard(alert: Alert) -> str:
    """The first of the alert's dashboard links that is safe to link ("" when none is)."""
    return next((url for url in alert.dashboard_links if safe_url(url) is not None), "")


def _button(
    label: str,
    action: ActionId,
    *,
    value: str | None = None,
    url: str | None = None,
    style: str | None = None,
) -> dict[str, str | None]:
    return {"label": label, "action_id": str(action), "value": value, "url": url, "style": style}
