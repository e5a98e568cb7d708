"""The matchers a silence of an incident uses, derived from its alerts. Pure, no I/O.

They are the ones Grafana itself puts in an alert's silenceURL (research: Grafana builds it from
`__alert_rule_uid__` plus every non-private label except `alertname` and `grafana_folder`). Such
a silence is "rule-specific", so a service account with `alert.silences:create` on the rule's
folder may create it. An alert without a rule UID (an Alertmanager v4 notification) is silenced
on all its labels.

Whoever sends the webhook writes the silenceURL, so its matchers are not taken on trust: the
silence is built from the alert's own rule UID and labels, and a silenceURL matcher is added
only when it is an equality the alert itself satisfies (a label the alert has, with the alert's
value, or `__alert_rule_uid__` with the alert's own rule UID). Such a matcher can only narrow
the silence; a regex, a negative matcher or a label the alert lacks never gets in. Every
matcher is an equality on a non-empty literal value, so no set matches the empty string.
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


def _private(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _from_silence_url(url: str) -> MatcherSet:
    """The `matcher=` parameters of Grafana's silenceURL, read as Grafana's silence page reads
    them (operators included, so that what is not an equality can be recognised and left out)."""
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


def _vouched(matcher: Matcher, alert: Alert) -> bool:
    """Whether the alert itself satisfies `matcher` as a literal equality on what it carries."""
    if matcher.is_regex or not matcher.is_equal or not matcher.value:
        return False
    if matcher.name == RULE_UID_LABEL:
        return bool(alert.rule_uid) and matcher.value == alert.rule_uid
    return alert.labels.get(matcher.name) == matcher.value


def _own(alert: Alert) -> list[Matcher]:
    """Grafana's way: the rule UID and the labels that are not private, the name or the folder;
    without a rule UID, every label (the name too), so that nothing else is caught. Empty values
    are left out: Alertmanager reads a missing label as "", so they would narrow nothing."""
    if alert.rule_uid:
        labels = {
            k: v for k, v in alert.labels.items() if k not in _NOT_MATCHED and not _private(k)
        }
        uid = [Matcher(name=RULE_UID_LABEL, value=alert.rule_uid)]
    else:
        labels, uid = dict(alert.labels), []
    return uid + [Matcher(name=k, value=v) for k, v in labels.items() if v]


def _ordered(matchers: Iterable[Matcher]) -> MatcherSet:
    """The rule UID first, then by name, each once."""
    unique = dict.fromkeys(matchers)
    return tuple(sorted(unique, key=lambda m: (m.name != RULE_UID_LABEL, m.name, m.value)))


def alert_matchers(alert: Alert) -> MatcherSet:
    """The matchers that silence exactly this alert, Grafana's way; silenceURL's matchers only
    where the alert vouches for them (see the module docstring)."""
    vouched = (m for m in _from_silence_url(alert.usable_silence_url) if _vouched(m, alert))
    return _ordered([*_own(alert), *vouched])


def _pins_rule(matchers: MatcherSet, rule_uid: str, alertname: str) -> bool:
    """Whether a set still names its rule: the rule UID, or (no UID) the alert name."""
    if rule_uid:
        return Matcher(name=RULE_UID_LABEL, value=rule_uid) in matchers
    return bool(alertname) and Matcher(name="alertname", value=alertname) in matchers


def silence_matchers(group: AlertGroup) -> tuple[MatcherSet, ...]:
    """One matcher set per rule of the incident (alerts of one rule share what they have in
    common), so a silence covers the incident's alerts and nothing beyond their rules.

    Empty when some alert has nothing a silence could match: a silence must cover every alert
    of the incident, and an empty set would match every alert in Grafana. A common part that
    no longer names the rule is never used; the alerts then get a silence each.
    """
    by_rule: dict[tuple[str, str], list[MatcherSet]] = {}
    for alert in group.firing or group.alerts:
        own = alert_matchers(alert)
        if not own:
            return ()
        by_rule.setdefault((alert.rule_uid, alert.labels.get("alertname", "")), []).append(own)
    sets: list[MatcherSet] = []
    for (rule_uid, alertname), matcher_sets in by_rule.items():
        common = _common(matcher_sets)
        if len(matcher_sets) > 1 and _pins_rule(common, rule_uid, alertname):
            sets.append(common)
        else:
            sets.extend(matcher_sets)
    return tuple(dict.fromkeys(sets))


def _common(sets: Iterable[MatcherSet]) -> MatcherSet:
    sets = list(sets)
    first = sets[0]
    return tuple(m for m in first if all(m in other for other in sets[1:]))
