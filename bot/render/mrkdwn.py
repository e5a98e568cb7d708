"""Pieces of message text made safe and readable: escaping, shortening, links, dates, numbers.

Pure functions shared by the renderer and its templates. Alert-supplied text goes through
`escape_mrkdwn` before it reaches mrkdwn (https://docs.slack.dev/messaging/formatting-message-text/#escaping):
only `&`, `<` and `>` are markup, and escaping them makes `<!channel>` and `<url|label>` inert.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

from bot.domain.alerts import Alert, AlertGroup
from bot.slack import contract as ids

ELLIPSIS = "…"

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]")
_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")


@dataclass(frozen=True)
class KnownValue:
    label: str
    unit: str = ""
    threshold_key: str | None = None


#: Readable names for the values the queueing rule computes (its `values` map).
KNOWN_VALUES: dict[str, KnownValue] = {
    "max_queue_time_mins": KnownValue("Max queue time", "min", "queue_time_threshold"),
    "max_queue_size": KnownValue("Max queue size", "", "queue_size_threshold"),
}
_THRESHOLD_KEYS = {v.threshold_key for v in KNOWN_VALUES.values() if v.threshold_key}


def escape_mrkdwn(text: str) -> str:
    """Make alert text inert in mrkdwn: no mentions, no links, no control characters."""
    text = _CONTROL.sub(" ", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int) -> str:
    """`text` shortened to `limit` characters with a visible "…", never splitting an entity."""
    if len(text) <= limit:
        return text
    cut = _PARTIAL_ENTITY.sub("", text[: limit - 1])
    return cut.rstrip() + ELLIPSIS


def oneline(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def host_of(url: str) -> str:
    """`host:port` of a URL, for messages people read: never its credentials or path."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port}" if parts.port else host


def safe_url(url: str) -> str | None:
    """`url` if Slack will take it as a button or link target (http or https), else None."""
    url = url.strip()
    if not url or len(url) > ids.MAX_BUTTON_URL or any(c.isspace() for c in url):
        return None
    if _CONTROL.search(url) or any(c in url for c in "<>|"):
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return None
    return url if parts.scheme in ("http", "https") and parts.hostname else None


def link(url: str, label: str) -> str:
    """An mrkdwn link, or the escaped label alone when the URL is not safe."""
    target = safe_url(url)
    if target is None:
        return escape_mrkdwn(label)
    return f"<{target.replace('&', '&amp;')}|{escape_mrkdwn(oneline(label))}>"


def date_token(when: datetime) -> str:
    """Slack's date token: each reader sees their own time zone; the fallback is UTC."""
    when = when.astimezone(UTC)
    fallback = when.strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(when.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"


def format_duration(span: timedelta) -> str:
    """1h42m, 12m, 45s, 2d3h: the on-call's shorthand."""
    seconds = int(span.total_seconds())
    if seconds < 60:
        return f"{max(seconds, 0)}s"
    minutes, hours, days = seconds // 60 % 60, seconds // 3600 % 24, seconds // 86400
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes:02d}m" if minutes else f"{hours}h"
    return f"{minutes}m"


def format_number(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "no value"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def with_unit(value: float | None, unit: str) -> str:
    shown = format_number(value)
    return f"{shown} {unit}" if unit and value is not None else shown


def key_values(alert: Alert) -> list[str]:
    """The alert's values as "*Name:* value (threshold t)", well-known ones first."""
    items: list[str] = []
    for key, known in KNOWN_VALUES.items():
        if key not in alert.values:
            continue
        text = f"*{known.label}:* {with_unit(alert.values[key], known.unit)}"
        if known.threshold_key and known.threshold_key in alert.values:
            threshold = with_unit(alert.values[known.threshold_key], known.unit)
            text += f" (threshold {threshold})"
        items.append(text)
    for key in sorted(alert.values):
        if key in KNOWN_VALUES or key in _THRESHOLD_KEYS:
            continue
        items.append(f"*{escape_mrkdwn(oneline(key))}:* {format_number(alert.values[key])}")
    return items


def value_summary(alert: Alert) -> str:
    """Key values on one line, for replies and compact lists."""
    return ", ".join(item.replace("*", "") for item in key_values(alert))


def headline(group: AlertGroup) -> str:
    priority = oneline(group.priority)
    if priority.isdigit():
        priority = f"P{priority}"
    name = oneline(group.name)
    return f"[{priority}] {name}" if priority else name
