"""The incident's parent message: headline, state, key values, alerts, context and buttons."""

from __future__ import annotations

from datetime import timedelta

from bot.domain.alerts import AlertGroup, AlertStatus
from bot.domain.incidents import Incident, IncidentStatus
from bot.render.alert_lines import alert_lines, common_shown, status_icon
from bot.render.mrkdwn import clip, date_token, escape_mrkdwn, link, oneline, safe_url, who
from bot.render.templates import RenderError, Templates
from bot.render.values import format_duration, headline, key_values, value_summary
from bot.slack import limits
from bot.slack.contract import ActionId, ButtonValue
from bot.slack.message import Message

#: Budgets that keep a message far below Slack's ~12,000-character total.
MAX_ABOUT_CHARS = 1500
#: URL buttons longer than this are left out when a message would otherwise be too long.
MAX_COMPACT_URL = 500


def incident_message(templates: Templates, incident: Incident) -> Message:
    """The incident's parent message in its current state.

    Each part has its own length budget; should long URLs still push the message past
    Slack's total, it is rendered again without them rather than refused by Slack.
    """
    try:
        return _incident(templates, incident, compact=False)
    except RenderError:
        return _incident(templates, incident, compact=True)


def _incident(templates: Templates, incident: Incident, *, compact: bool) -> Message:
    group = incident.group
    single = len(group.alerts) == 1
    resolved = incident.status is IncidentStatus.RESOLVED
    context = {
        "headline": status_icon(incident) + " " + headline(group),
        "fallback": _fallback(incident),
        "status_line": _status_line(incident),
        "key_values": key_values(group.lead)[: limits.MAX_SECTION_FIELDS] if single else [],
        "about": _about(group),
        "alert_lines": [] if single else alert_lines(group, resolved=resolved),
        "context_parts": _context_parts(incident),
        "buttons": _buttons(incident, compact=compact),
    }
    return templates.message("incident.json.j2", context)


def _fallback(incident: Incident) -> str:
    group = incident.group
    state = "firing" if incident.status is IncidentStatus.FIRING else "resolved"
    values = value_summary(group.lead) if len(group.alerts) == 1 else ""
    text = f"{headline(group)}: {state}"
    if values:
        text += f". {values}"
    return escape_mrkdwn(clip(text, 500))


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
        parts.append(f"*Team:* {escape_mrkdwn(oneline(group.team))}")
    if len(group.alerts) > 1 and not resolved:
        parts.append(f"{len(group.firing)} of {len(group.alerts)} alerts firing")
    elif len(group.alerts) > 1:
        parts.append(f"{len(group.alerts)} alerts")
    return " · ".join(parts)


def _about(group: AlertGroup) -> str:
    summary = escape_mrkdwn(oneline(group.summary))
    description = escape_mrkdwn(group.description.strip())
    if summary and description and group.summary.strip() != group.description.strip():
        text = f"*{clip(summary, 300)}*\n{description}"
    else:
        text = summary or description
    return clip(text, MAX_ABOUT_CHARS)


def _context_parts(incident: Incident) -> list[str]:
    group = incident.group
    parts: list[str] = []
    lead = group.lead
    labels = lead.shown_labels if len(group.alerts) == 1 else common_shown(group)
    if labels:
        text = " ".join(f"`{k}={v}`" for k, v in labels.items())
        parts.append(clip(escape_mrkdwn(oneline(text)), 600))
    folder = lead.labels.get("grafana_folder")
    if folder:
        parts.append(f"Folder: {escape_mrkdwn(oneline(folder))}")
    if lead.rule_uid:
        parts.append(f"Rule `{escape_mrkdwn(oneline(lead.rule_uid))}`")
    runbook = group.runbook_url
    if runbook and safe_url(runbook) is None:
        parts.append(f"Runbook: {clip(escape_mrkdwn(oneline(runbook)), 300)}")
    if group.truncated_alerts:
        parts.append(f"{group.truncated_alerts} more alerts were left out by the sender")
    if incident.previous_link:
        parts.append(f"Follows {link(incident.previous_link, 'an earlier incident')}")
    return parts


def _buttons(incident: Incident, *, compact: bool) -> list[dict[str, str | None]]:
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
    for label, action, url in (
        ("Open runbook", ActionId.OPEN_RUNBOOK, group.runbook_url),
        ("View alert", ActionId.VIEW_ALERT, lead.generator_url),
        ("Dashboard", ActionId.OPEN_DASHBOARD, lead.dashboard_url or lead.panel_url),
    ):
        target = safe_url(url)
        if target is not None and not (compact and len(target) > MAX_COMPACT_URL):
            buttons.append(_button(label, action, url=target))
    return buttons


def _button(
    label: str,
    action: ActionId,
    *,
    value: str | None = None,
    url: str | None = None,
    style: str | None = None,
) -> dict[str, str | None]:
    return {"label": label, "action_id": str(action), "value": value, "url": url, "style": style}
