"""Hostile and merely big alerts: webhook bodies (hypothesis strategies and one fixed body) with
long label names and values, many labels, many alerts, long annotations, huge `values` maps,
long and unsafe URLs, emoji and other multi-byte text, and text that grows when escaped; and
the check that every piece of it stays inert in mrkdwn."""

from __future__ import annotations

import copy
import re
from typing import Any

from hypothesis import strategies as st

from testkit.payloads import reference

#: Pieces hostile text is made of: markup, what escaping makes five times longer, what JSON
#: makes longer (quotes, backslashes, control characters), emoji (two UTF-16 units, and joined
#: sequences), combining marks, CJK, and mentions and links as Slack would read them.
PIECES = [
    "a", "Z", "9", " ", "&", "<", ">", '"', "\\", "`", "*", "_", "~", "|", ":", "!", "@", "#",
    "é", "中", "🚨", "👨\u200d👩\u200d👧", "\u200d", "e\u0301", "\ufe0f", "\n", "\t", "\x00",
    "\u2028", "<!channel>", "<!here>", "<@U0ONCALL>", "<https://evil.example|click>", "&amp;",
]  # fmt: skip

_piece = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join)


def texts(*times: int) -> st.SearchStrategy[str]:
    """A hostile piece repeated: some of the `times` given (default: empty to ~20,000)."""
    return st.builds(
        lambda piece, n: piece * n, _piece, st.sampled_from(times or (0, 1, 8, 120, 900, 4000))
    )


#: Links: fine, long (around a button's 3,000), growing when escaped, and not links at all.
urls = st.one_of(
    st.just(""),
    st.builds(
        lambda tail, n: "https://grafana.example/d/x?" + tail * n,
        st.sampled_from(["a", "&", "é", "🚨", "%22", '"', "q=1&x=2", "|", "<b>", "a b"]),
        st.sampled_from([1, 60, 240, 480, 1000, 2960, 2972, 2990, 6000]),
    ),
    st.sampled_from(["javascript:alert(1)", "www.example.com", "https://", "http://h:99999/"]),
)

_numbers = st.one_of(
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, 114.0, 1e15, -1e300, 1.7976931348623157e308, 5e-324]),
)


#: The values, and the characters of each annotation, that a big group's later alerts carry.
FEW_VALUES = 8
FEW_CHARACTERS = 40


@st.composite
def alert_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A Grafana webhook body (the reference alert made hostile) with one or many alerts."""
    body = reference()
    alert = body["alerts"][0]
    labels = draw(st.dictionaries(texts(1, 3, 40, 600), texts(), max_size=8))
    many = draw(st.sampled_from([0, 0, 300]))
    labels |= {f"label_{n}_{'&' * 20}": f"<value {n}>" for n in range(many)}
    name = draw(st.one_of(st.just("Jobs are queueing"), texts()))
    alert["labels"] = {"alertname": name, "grafana_folder": draw(texts()), **labels}
    annotations = {
        "summary": draw(texts()),
        "description": draw(texts()),
        "runbook_url": draw(urls),
        "Team": draw(texts(0, 1, 30, 900)),
        "Priority": draw(st.one_of(st.just("2"), texts(1, 40, 900))),
    }
    alert["annotations"] = annotations
    values = draw(st.dictionaries(texts(1, 2, 30, 500), _numbers, max_size=10))
    big = draw(st.sampled_from([0, 0, 500]))
    values |= {f"value_{n}_{'&<' * 300}": float(n) for n in range(big)}
    alert["values"] = {**alert["values"], **values}
    alert["generatorURL"] = draw(urls)
    alert["dashboardURL"] = draw(urls)
    alert["panelURL"] = draw(urls)
    alert["ruleUID"] = draw(texts(0, 1, 600))
    body["commonAnnotations"] = dict(annotations) if draw(st.booleans()) else {}
    body["commonLabels"] = {}
    body["truncatedAlerts"] = draw(st.sampled_from([0, 7]))
    count = draw(st.sampled_from([1, 1, 2, 12, 1500]))
    body["alerts"] = [alert] + [_sibling(alert, n) for n in range(1, count)]
    return body


def _sibling(alert: dict[str, Any], n: int) -> dict[str, Any]:
    """Another alert of the group: the same rule on another runner. The first few share all the
    hostile text of the first; the rest are plain siblings (the alertname, the first values
    and the annotations cut short, a link of their own), near what a group of 1,500 must be to
    fit in the webhook's 1 MB: 1,500 copies of the hostile text would make a body of hundreds
    of megabytes, one the webhook refuses before anything renders it."""
    runner = f"linux.{n}xlarge <&>"
    if n < 4:
        return {
            **alert,
            "labels": {**alert["labels"], "runner": runner},
            "fingerprint": f"{n:016x}",
        }
    return {
        **alert,
        "labels": {"alertname": alert["labels"]["alertname"][:FEW_CHARACTERS], "runner": runner},
        "annotations": {key: text[:FEW_CHARACTERS] for key, text in alert["annotations"].items()},
        "values": {
            key[:FEW_CHARACTERS]: value for key, value in list(alert["values"].items())[:FEW_VALUES]
        },
        "generatorURL": f"https://grafana.example/alerting/grafana/{n}/view",
        "dashboardURL": "https://grafana.example/d/queue",
        "panelURL": "https://grafana.example/d/queue?viewPanel=2",
        "ruleUID": alert["ruleUID"][:FEW_CHARACTERS],
        "fingerprint": f"{n:016x}",
    }


def hostile_body() -> dict[str, Any]:
    """One alert with all of it at once, under the webhook's 1 MB: too big for one message."""
    body = reference()
    alert = body["alerts"][0]
    alert["labels"] |= {f"label_{n}_" + "&" * 40: "🚨<!channel>&" * 50 for n in range(40)}
    alert["labels"]["type"] = '<!channel> & "quoted"\nnewline ' + "&" * 3000
    alert["annotations"] |= {
        "summary": "<https://evil.example|click> <!here> " + "&<>" * 2000,
        "description": '"quoted" \\ ' * 3000 + "👨\u200d👩\u200d👧" * 2000,
        "Team": "<#C999> team " + "中" * 500,
        "runbook_url": "https://runbook.example/" + "r&" * 1485,
    }
    body["commonAnnotations"] = {}
    body["commonLabels"] = {}
    alert["values"] |= {f"value_{n}_" + "&<" * 300: float(n) for n in range(200)}
    alert["generatorURL"] = "https://grafana.example/alerting/grafana/uid/view?" + "%22" * 990
    alert["dashboardURL"] = "https://grafana.example/d/x?" + "a" * 6000  # too long for a button
    alert["ruleUID"] = "uid-" + "&" * 600
    return body


def grown(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with its values changed and a second hostile alert joining the group."""
    changed = copy.deepcopy(body)
    first = changed["alerts"][0]
    first["values"] = {**first["values"], "max_queue_time_mins": 130.0}
    second = copy.deepcopy(first)
    second["labels"] = {**first["labels"], "runner": "🚨" * 2000}
    second["fingerprint"] = "0000000000000002"
    changed["alerts"].append(second)
    return changed


# -- what may be left of markup in what the renderer writes -------------------------------------

_DATE = r"<!date\^\d+\^\{date_short_pretty\} at \{time\}\|[^<>]*>"
_LINK = r"<(https?://[^<>|\s]+)\|[^<>]*>"
_ENTITIES = re.compile(r"&(?!(?:amp|lt|gt);)")


def markup_left(text: str, links: set[str], labels: set[str] | None = None) -> list[str]:
    """What in mrkdwn `text` is not inert: any `<…>` but our date tokens and our links to
    `links` (with `labels`, when given), or an `&` that does not start an entity."""
    wrong: list[str] = []

    def ours(found: re.Match[str]) -> str:
        url, label = found.group(1), found.group(0).split("|", 1)[1][:-1]
        if url.replace("&amp;", "&") not in links or (labels is not None and label not in labels):
            wrong.append(found.group(0)[:80])
        return ""

    rest = re.sub(_LINK, ours, re.sub(_DATE, "", text))
    if "<" in rest or ">" in rest:
        wrong.append(rest[max(rest.find("<"), rest.find(">"), 0) :][:80])
    if _ENTITIES.search(rest):
        wrong.append("bare &")
    return wrong
