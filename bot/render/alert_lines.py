"""Alerts in a line each: the icon, the name, what sets it apart, its values and a link."""

from __future__ import annotations

from bot.domain.alerts import Alert, AlertGroup, AlertStatus
from bot.domain.incidents import Incident, IncidentStatus
from bot.render.layout import fit_lines
from bot.render.mrkdwn import clip, inert, link, safe_url
from bot.render.values import DEFAULT_NAMING, ValueNaming, value_summary
from bot.slack import limits
from bot.slack.limits import slack_len

#: Alerts listed one per line in a message; the rest are counted.
MAX_LISTED_ALERTS = 10
MAX_LINE_CHARS = 280
MAX_NAME_CHARS = 120
#: Longer links (as written in mrkdwn, `&` escaped) are left out of alert lines (the View
#: alert button still has the lead's).
MAX_LINE_LINK = 500


def status_icon(incident: Incident) -> str:
    return ":large_green_circle:" if incident.status is IncidentStatus.RESOLVED else ":red_circle:"


def common_shown(group: AlertGroup) -> dict[str, str]:
    shown = group.lead.shown_labels
    return {k: v for k, v in shown.items() if group.common_labels.get(k) == v}


def alert_line(
    alert: Alert,
    common: dict[str, str],
    icon: str | None = None,
    *,
    naming: ValueNaming = DEFAULT_NAMING,
) -> str:
    """One alert on one line; its link only if short enough never to be cut in half."""
    if icon is None:
        icon = ":red_circle:" if alert.status is AlertStatus.FIRING else ":large_green_circle:"
    own = {k: v for k, v in alert.shown_labels.items() if common.get(k) != v}
    parts = [f"*{inert(alert.name, MAX_NAME_CHARS)}*"]
    if own:
        parts.append(inert(" ".join(f"{k}={v}" for k, v in own.items()), MAX_LINE_CHARS))
    values = value_summary(alert, naming)
    if values:
        parts.append(values)
    line = clip(" · ".join(parts), MAX_LINE_CHARS)
    target = safe_url(alert.generator_url)
    if target is not None and slack_len(view := link(target, "view")) <= MAX_LINE_LINK:
        line += " · " + view
    return f"{icon} {line}"


def alert_lines(
    group: AlertGroup, *, resolved: bool, naming: ValueNaming = DEFAULT_NAMING
) -> list[str]:
    common = common_shown(group)
    ordered = sorted(group.alerts, key=lambda a: (a.status is not AlertStatus.FIRING, a.starts_at))
    icon = ":large_green_circle:" if resolved else None
    lines = [
        alert_line(alert, common, icon, naming=naming) for alert in ordered[:MAX_LISTED_ALERTS]
    ]
    if len(ordered) > MAX_LISTED_ALERTS:
        lines.append(f"…and {len(ordered) - MAX_LISTED_ALERTS} more")
    return fit_lines(lines, limits.MAX_SECTION_TEXT)
