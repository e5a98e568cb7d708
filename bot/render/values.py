"""Numbers and durations as the on-call reads them, and the alert's key values in words.

A value is named by, first to last: the YAML file's `alert_values` (`ValueNaming.of`), the
names queuebot knows (`KNOWN_VALUES`), or its own key made into words (`derived_value`:
`longest_wait_minutes` is "Longest wait", in min); a key with no word in it (`B`, `A1`) is
shown as written. An annotation under a name the naming knows whose text is a number is one of
the alert's values too (`ValueNaming.values_of`). Every name is escaped like any alert text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from itertools import islice
from types import MappingProxyType
from typing import Protocol

from bot.domain.alerts import Alert, AlertGroup, with_annotated_values
from bot.render.mrkdwn import clip, inert, oneline
from bot.slack.limits import slack_len


@dataclass(frozen=True)
class KnownValue:
    label: str
    unit: str = ""
    threshold_key: str | None = None
    hidden: bool = False


#: Readable names for the values queuebot's own rules compute: the reference alert's (its
#: `values` map) and the shipped Prometheus and Grafana rules' (refIds, or annotations).
#: `bot.domain.alerts.NAMED_VALUE_KEYS` holds these keys and their thresholds'.
KNOWN_VALUES: Mapping[str, KnownValue] = MappingProxyType(
    {
        "max_queue_time_mins": KnownValue("Max queue time", "min", "queue_time_threshold"),
        "max_queue_size": KnownValue("Max queue size", "", "queue_size_threshold"),
        "queued_jobs": KnownValue("Jobs queued"),
        "longest_wait_minutes": KnownValue("Longest wait", "min"),
    }
)
#: A key's ending that gives its unit, after "_" or "-" (`wait_minutes`, `cpu-pct`).
UNIT_SUFFIXES: Mapping[str, str] = MappingProxyType(
    {
        "mins": "min",
        "minutes": "min",
        "secs": "s",
        "seconds": "s",
        "hours": "h",
        "percent": "%",
        "pct": "%",
    }
)
#: A key is words when two lower-case letters follow each other somewhere in it; refIds
#: Grafana makes up (`A`, `B`, `AA`) and ones like `A1` are not.
_WORD = re.compile(r"[a-z]{2}")
_SEPARATORS = re.compile(r"[\s_-]+")
#: A value's name from the alert is shortened to this; the values on one line to the other.
MAX_VALUE_NAME = 80
MAX_VALUE_SUMMARY = 600
MAX_UNIT = 20


class ValueRule(Protocol):
    """How the YAML file says one value is shown (`bot.config.file.AlertValue`)."""

    @property
    def name(self) -> str | None: ...

    @property
    def unit(self) -> str | None: ...

    @property
    def threshold(self) -> str | None: ...

    @property
    def hide(self) -> bool: ...


def derived_value(key: str) -> KnownValue:
    """A value's name from its key alone: its words, their first letter capitalised, the unit
    its ending gives; a key with no word in it as written."""
    if not _WORD.search(key):
        return KnownValue(key)
    stem, unit = key, ""
    lowered = key.lower()
    for suffix, suffix_unit in UNIT_SUFFIXES.items():
        if lowered.endswith(("_" + suffix, "-" + suffix)):
            if cut := key[: -len(suffix) - 1].rstrip("_- "):
                stem, unit = cut, suffix_unit
            break
    words = " ".join(part for part in _SEPARATORS.split(stem) if part)
    if not words:
        return KnownValue(key)
    return KnownValue(words[:1].upper() + words[1:], unit)


class ValueNaming:
    """What each of an alert's values is called, in which unit, with which threshold, and
    which are left out: queuebot's own names overlaid with the YAML file's. Built once and
    never changed; the renderer passes it to what shows values."""

    __slots__ = ("_annotated", "_known", "_thresholds")

    def __init__(self, known: Mapping[str, KnownValue] = KNOWN_VALUES) -> None:
        self._known: Mapping[str, KnownValue] = MappingProxyType(dict(known))
        owners: dict[str, str] = {}
        for key, value in self._known.items():
            if value.threshold_key and not value.hidden:
                owners.setdefault(value.threshold_key, key)
        self._thresholds: Mapping[str, str] = MappingProxyType(owners)
        self._annotated = frozenset(self._known) | frozenset(owners)

    @classmethod
    def of(cls, rules: Mapping[str, ValueRule]) -> ValueNaming:
        """queuebot's names with the YAML file's `alert_values` over them: what a rule says
        wins, and what it leaves unsaid (a unit, a threshold) stays the built-in or derived."""
        known = dict(KNOWN_VALUES)
        for key, rule in rules.items():
            base = known.get(key) or derived_value(key)
            if rule.hide:
                known[key] = KnownValue(base.label, hidden=True)
                continue
            known[key] = KnownValue(
                rule.name or base.label,
                base.unit if rule.unit is None else rule.unit,
                rule.threshold or base.threshold_key,
            )
        return cls(known)

    @property
    def annotated(self) -> frozenset[str]:
        """The names under which an annotation's number is one of the alert's values."""
        return self._annotated

    @property
    def known(self) -> Mapping[str, KnownValue]:
        """The values named by queuebot or the YAML file, in the order they are shown."""
        return self._known

    def is_threshold(self, key: str) -> bool:
        """Whether `key` is shown beside a known value as its threshold."""
        return key in self._thresholds

    def named(self, key: str) -> KnownValue:
        """What the value `key` is called and in which unit; a threshold in its value's."""
        known = self._known.get(key)
        if known is not None:
            return known
        derived = derived_value(key)
        owner = self._thresholds.get(key)
        return replace(derived, unit=self._known[owner].unit) if owner else derived

    def values_of(self, alert: Alert) -> dict[str, float | None]:
        """The alert's values, and the numbers its annotations give under a name known here
        (one its values map has already is the map's)."""
        return with_annotated_values(alert.values, alert.annotations, self._annotated)

    def __repr__(self) -> str:
        return f"ValueNaming({dict(self._known)!r})"


#: queuebot's own names, and every other value named by its key.
DEFAULT_NAMING = ValueNaming()


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


def key_values(
    alert: Alert,
    *,
    known_only: bool = False,
    most: int | None = None,
    naming: ValueNaming = DEFAULT_NAMING,
) -> list[str]:
    """The alert's values as "*Name:* value (threshold t)", the known ones first (only those
    with `known_only`), hidden ones left out, at most `most` of them: an alert may carry
    hundreds, and only the first few are ever shown."""
    return list(islice(_key_values(alert, known_only, naming), most))


def _key_values(alert: Alert, known_only: bool, naming: ValueNaming) -> Iterator[str]:
    values = naming.values_of(alert)
    for key, known in naming.known.items():
        if known.hidden or key not in values:
            continue
        unit = unit_text(known.unit)
        text = f"*{value_name(known.label)}:* {with_unit(values[key], unit)}"
        if known.threshold_key and known.threshold_key in values:
            text += f" (threshold {with_unit(values[known.threshold_key], unit)})"
        yield text
    for key in [] if known_only else sorted(values):
        if key in naming.known or naming.is_threshold(key):
            continue
        named = naming.named(key)
        yield f"*{value_name(named.label)}:* {with_unit(values[key], unit_text(named.unit))}"


def value_name(name: str) -> str:
    """A value's name (from the alert or the YAML file), as mrkdwn: escaped and shortened."""
    return inert(name, MAX_VALUE_NAME)


def unit_text(unit: str) -> str:
    """A value's unit (perhaps the YAML file's), as mrkdwn: escaped and shortened."""
    return inert(unit, MAX_UNIT)


def value_summary(alert: Alert, naming: ValueNaming = DEFAULT_NAMING) -> str:
    """Key values on one line, for replies and compact lists: as many as fit, then "…"."""
    shown: list[str] = []
    length = 0
    for item in _key_values(alert, False, naming):
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
