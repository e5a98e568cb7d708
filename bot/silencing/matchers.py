"""The matchers a silence of an incident uses, derived from its alerts. Pure, no I/O.

They are the ones Grafana itself puts in an alert's silenceURL (research: Grafana builds it from
`__alert_rule_uid__` plus every non-private label except `alertname` and `grafana_folder`). Such
a silence is "rule-specific", so a service account with `alert.silences:create` on the rule's
folder may create it. An alert without a rule UID (an Alertmanager v4 notification) is silenced
on all its labels.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit

from bot.domain.alerts import Alert, AlertGroup
from bot.domain.silences import RULE_UID_LABEL, Matcher, MatcherSet

#: Labels Grafana leaves out of a silence (pkg/services/ngalert: silenceURL).
_NOT_MATCHED = {"alertname", "grafana_folder"}
#: More distinct rules than this in one incident is a job for Grafana's own silence page.
MAX_SILENCES_PER_INCIDENT = 10


def _from_silence_url(url: str) -> MatcherSet:
    """The `matcher=` parameters of Grafana's silenceURL, exactly as Grafana wrote them."""
    try:
        query = urlsplit(url).query
    except ValueError:
        return ()
    found: list[Matcher] = []
    for key, raw in parse_qsl(query):
        if key != "matcher":
            continue
        for operator, regex, equal in (
            ("=~", True, True),
            ("!~", True, False),
            ("!=", False, False),
        ):
            name, sep, value = raw.partition(operator)
            if sep and name and "=" not in name:
                found.append(Matcher(name=name, value=value, is_regex=regex, is_equal=equal))
                break
        else:
            name, sep, value = raw.partition("=")
            if sep and name:
                found.append(Matcher(name=name, value=value))
    return tuple(found)


def alert_matchers(alert: Alert) -> MatcherSet:
    """The matchers that silence exactly this alert, Grafana's way."""
    from_url = _from_silence_url(alert.silence_url)
    if any(m.name == RULE_UID_LABEL for m in from_url):
        return from_url
    if alert.rule_uid:
        labels = {
            k: v
            for k, v in sorted(alert.labels.items())
            if k not in _NOT_MATCHED and not (k.startswith("__") and k.endswith("__"))
        }
        return (
            Matcher(name=RULE_UID_LABEL, value=alert.rule_uid),
            *(Matcher(name=k, value=v) for k, v in labels.items()),
        )
    return tuple(Matcher(name=k, value=v) for k, v in sorted(alert.labels.items()) if v)


def silence_matchers(group: AlertGroup) -> tuple[MatcherSet, ...]:
    """One matcher set per rule of the incident (alerts of one rule share what they have in
    common), so a silence covers the incident's alerts and nothing beyond their rules."""
    by_rule: dict[str, list[MatcherSet]] = {}
    for alert in group.firing or group.alerts:
        own = alert_matchers(alert)
        key = alert.rule_uid or alert.labels.get("alertname", "") or str(own)
        by_rule.setdefault(key, []).append(own)
    sets: list[MatcherSet] = []
    for matcher_sets in by_rule.values():
        common = _common(matcher_sets)
        if common:
            sets.append(common)
        else:
            sets.extend(matcher_sets)
    return tuple(dict.fromkeys(s for s in sets if s))


def _common(sets: Iterable[MatcherSet]) -> MatcherSet:
    sets = list(sets)
    first = sets[0]
    return tuple(m for m in first if all(m in other for other in sets[1:]))
