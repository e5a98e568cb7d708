"""Alerts in a line each: the icon, the name, what sets it apart, its values and a link."""

from __future__ import annotations

from bot.domain.alerts import Alert, AlertGroup, AlertStatus
from bot.domain.incidents import Incident, IncidentStatus
from bot.render.layout import fit_lines
from bot.render.mrkdwn import clip, escape_mrkdwn, link, oneline, safe_url
from bot.render.values import value_summary
from bot.slack import limits

#: Alerts listed one per line in a message; the rest are counted.
MAX_LISTED_ALERTS = 10
MAX_LINE_CHARS = 280
#: Longer links are left out of alert lines (the View alert button still has the lead's).
MAX_LINE_LINK = 500


def status_icon(incident: Incident) -> str:
    return ":large_green_circle:" if incident.status is IncidentStatus.RESOLVED else ":red_circle:"


def common_shown(group: AlertGroup) -> dict[str, str]:
    shown = group.lead.shown_labels
    return {k: v for k, v in shown.items() if group.common_labels.get(k) == v}


def alert_line(alert: Alert, common: dict[str, str], icon: str | None = None) -> str:
    """One alert on one line; its link only if short enough never to be cut in half."""
    if icon is None:
        icon = ":red_circle:" if alert.status is AlertStatus.FIRING else ":large_green_circle:"
    own = {k: v for k, v in alert.shown_labels.items() if common.get(k) != v}
    parts = [f"*{escape_mrkdwn(oneline(alert.name))}*"]
    if own:
        parts.append(escape_mrkdwn(oneline(" ".join(f"{k}={v}" for k, v in own.items()))))
    values = value_summary(alert)
    if values:
        parts.append(values)
    line = clip(" · ".join(parts), MAX_LINE_CHARS)
    target = safe_url(alert.generator_url)
    if target is not None and len(target) <= MAX_LINE_LINK:
        line += " · " + link(target, "view")
    return f"{icon} {line}"


def alert_lines(group: AlertGroup, *, resolved: bool) -> list[str]:
    common = common_shown(group)
    ordered = sorted(group.alerts, key=lambda a: (a.status is not AlertStatus.FIRING, a.starts_at))
    icon = ":large_green_circle:" if resolved else None
    lines = [alert_line(alert, common, icon) for alert in ordered[:MAX_LISTED_ALERTS]]
    if len(ordered) > MAX_LISTED_ALERTS:
        lines.append(f"…and {len(ordered) - MAX_LISTED_ALERTS} more")
    return fit_lines(lines, limits.MAX_SECTION_TEXT)
