"""Numbers and durations as the on-call reads them, and the alert's key values in words."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from itertools import islice

from bot.domain.alerts import Alert, AlertGroup
from bot.render.mrkdwn import clip, inert, oneline
from bot.slack.limits import slack_len


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
#: A value's name from the alert is shortened to this; the values on one line to the other.
MAX_VALUE_NAME = 80
MAX_VALUE_SUMMARY = 600


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
    if abs(value) >= 1e15:
        return f"{value:.3g}"  # 1e+300, not three hundred digits
    if value == int(value):
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def with_unit(value: float | None, unit: str) -> str:
    shown = format_number(value)
    return f"{shown} {unit}" if unit and value is not None else shown


def key_values(alert: Alert, *, known_only: bool = False, most: int | None = None) -> list[str]:
    """The alert's values as "*Name:* value (threshold t)", well-known ones first (only
    those with `known_only`), at most `most` of them: an alert may carry hundreds, and only
    the first few are ever shown."""
    return list(islice(_key_values(alert, known_only), most))


def _key_values(alert: Alert, known_only: bool) -> Iterator[str]:
    for key, known in KNOWN_VALUES.items():
        if key not in alert.values:
            continue
        text = f"*{known.label}:* {with_unit(alert.values[key], known.unit)}"
        if known.threshold_key and known.threshold_key in alert.values:
            threshold = with_unit(alert.values[known.threshold_key], known.unit)
            text += f" (threshold {threshold})"
        yield text
    for key in [] if known_only else sorted(alert.values):
        if key in KNOWN_VALUES or key in _THRESHOLD_KEYS:
            continue
        yield f"*{value_name(key)}:* {format_number(alert.values[key])}"


def value_name(key: str) -> str:
    """A value's name from the alert, as mrkdwn: escaped and shortened."""
    return inert(key, MAX_VALUE_NAME)


def value_summary(alert: Alert) -> str:
    """Key values on one line, for replies and compact lists: as many as fit, then "…"."""
    shown: list[str] = []
    length = 0
    for item in _key_values(alert, known_only=False):
        shown.append(item.replace("*", ""))
        length += slack_len(shown[-1]) + 2
        if length > MAX_VALUE_SUMMARY:
            break  # what follows would be cut off anyway
    return clip(", ".join(shown), MAX_VALUE_SUMMARY)


def headline(group: AlertGroup) -> str:
    priority = oneline(group.priority)
    if priority.isdigit():
        priority = f"P{priority}"
    name = oneline(group.name)
    return f"[{priority}] {name}" if priority else name
