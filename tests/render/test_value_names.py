"""Values named by the rule: refIds and keys in words, value annotations, the YAML file's
`alert_values`; and the Dashboard button an Alertmanager alert names in an annotation."""

from __future__ import annotations

import copy
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.config.file import AlertValue
from bot.domain.alerts import NAMED_VALUE_KEYS, AlertGroup, annotated_number
from bot.domain.incidents import ThreadEvent, ThreadEventKind, ValueChange
from bot.domain.notifications import parse_webhook
from bot.incidents.lifecycle import decide
from bot.render.renderer import Renderer
from bot.render.values import (
    KNOWN_VALUES,
    KnownValue,
    ValueNaming,
    derived_value,
    key_values,
    value_summary,
)
from bot.slack import blockkit
from testkit.payloads import encoded, incident_of, load, reference
from tests.render.hostile import alert_bodies, texts, urls
from tests.render.test_hostile_alerts import SETTINGS, assert_slack_takes

MENTION_OR_LINK = re.compile(r"<[!@#]|<https?:|<mailto:")
AT = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)
DASHBOARD = "https://grafana.example/d/fleet/ci-fleet?var-runner_type=linux.2xlarge"
#: What the YAML file's `alert_values` says for a Grafana rule whose refIds are letters.
MAPPED = {
    "B": AlertValue(name="Jobs queued"),
    "C": AlertValue(hide=True),
    "wait_s": AlertValue(name="Longest wait", unit="s", threshold="wait_threshold_s"),
}


def jobs_queueing(queued: str = "14", wait: str = "114", **more: str) -> dict[str, Any]:
    """Alertmanager's webhook (version 4) for queuebot's own Prometheus rule, `JobsQueueing`."""
    body = load("alertmanager_0.25_webhook_v4_firing.json")
    labels = {
        "alertname": "JobsQueueing",
        "priority": "P2",
        "team": "dev-infra",
        "runner_type": "linux.2xlarge",
    }
    annotations = {
        "summary": "linux.2xlarge: 14 jobs queued, the longest for 114 minutes",
        "description": "More than 5 jobs are queued and the longest has waited 60 min or more.",
        "runbook_url": "https://example.invalid/runbooks/queue",
        "dashboard": DASHBOARD,
        "queued_jobs": queued,
        "longest_wait_minutes": wait,
        **more,
    }
    (alert,) = body["alerts"]
    alert.update(
        labels=labels,
        annotations=annotations,
        generatorURL="http://prometheus.example:9090/graph?g0.expr=jobs_queued+%3E+5",
    )
    body.update(
        groupLabels={"alertname": "JobsQueueing"},
        commonLabels=dict(labels),
        commonAnnotations=dict(annotations),
        groupKey='{}:{alertname="JobsQueueing"}',
    )
    return body


def grafana(values: dict[str, float], **annotations: str) -> dict[str, Any]:
    """The reference Grafana body with these values (and annotations) instead of its own."""
    body = reference()
    alert = body["alerts"][0]
    alert["values"] = values
    alert["annotations"] |= annotations
    return body


def fields(message: Any) -> list[str]:
    """The key values' fields of a parent message."""
    found = [b for b in message.blocks if b["type"] == "section" and "fields" in b]
    return [f["text"] for b in found for f in b["fields"]]


def buttons(message: Any) -> dict[str, str | None]:
    actions = next(b for b in message.blocks if b["type"] == "actions")
    return {e["text"]["text"]: e.get("url") for e in actions["elements"]}


def everything(message: Any) -> str:
    return message.text + "\n" + json.dumps(message.blocks, ensure_ascii=False)


class TestAlertmanagerRule:
    def test_its_value_annotations_are_its_values(self) -> None:
        """queuebot's own Prometheus rule: the numbers its annotations give are shown as the
        reference's are, with the runner type, the priority and the team."""
        message = Renderer().incident(incident_of(jobs_queueing()))
        assert fields(message) == ["*Jobs queued:* 14", "*Longest wait:* 114 min"]
        assert message.text == "[P2] JobsQueueing: firing. Jobs queued: 14, Longest wait: 114 min"
        text = everything(message)
        assert "`runner_type=linux.2xlarge`" in text and "*Team:* dev-infra" in text
        assert blockkit.validate_message(message.text, message.blocks) == []

    def test_they_are_values_of_the_alert_and_round_trip_through_the_store(self) -> None:
        """Parsed, the annotations are values (a change between notifications is seen); the
        group read back as the store keeps it is the same, and a row written before value
        annotations were read still shows them."""
        group = parse_webhook(encoded(jobs_queueing()))
        assert group.lead.values == {"queued_jobs": 14.0, "longest_wait_minutes": 114.0}
        assert AlertGroup.model_validate_json(group.model_dump_json()) == group
        older = group.model_dump(mode="json")
        older["alerts"][0]["values"] = {}
        old_row = AlertGroup.model_validate_json(json.dumps(older))
        assert fields(Renderer().incident(incident_of(old_row))) == fields(
            Renderer().incident(incident_of(group))
        )

    def test_a_change_of_an_annotated_value_is_a_reply(self) -> None:
        """14 jobs queued, then 20: the thread hears of it in the value's name."""
        opened = incident_of(jobs_queueing())
        later = parse_webhook(encoded(jobs_queueing(queued="20", wait="121")))
        event = decide(opened, later, AT).event
        assert event is not None and event.kind is ThreadEventKind.CHANGED
        text = everything(Renderer().thread_event(event))
        assert "Jobs queued: 14 → 20" in text and "Longest wait: 114 → 121 min" in text

    @pytest.mark.parametrize(
        "text",
        ["14 jobs", "", " ", "NaN", "nan", "inf", "-Infinity", "1e999", "0x10", "1_000", "1,5",
         "<!channel>", "14\n<!here>", "1" * 65, "１４"],
    )  # fmt: skip
    def test_an_annotation_that_is_not_a_number_is_no_value(self, text: str) -> None:
        """Never a value, never shown as one, never a crash."""
        message = Renderer().incident(incident_of(jobs_queueing(queued=text)))
        assert fields(message) == ["*Longest wait:* 114 min"]
        assert "Jobs queued" not in everything(message)

    @pytest.mark.parametrize(
        ("text", "number"),
        [("14", 14.0), (" 114 ", 114.0), ("113.5", 113.5), ("-2", -2.0), ("1.2e+03", 1200.0),
         (".5", 0.5), ("7.", 7.0)],
    )  # fmt: skip
    def test_a_number_is_read_as_a_rule_writes_it(self, text: str, number: float) -> None:
        assert annotated_number(text) == number

    def test_the_values_map_wins_over_an_annotation(self) -> None:
        """A Grafana rule that has the value in its values map and an annotation of it."""
        body = grafana({"queued_jobs": 20.0}, queued_jobs="14", longest_wait_minutes="50")
        assert fields(Renderer().incident(incident_of(body))) == [
            "*Jobs queued:* 20",
            "*Longest wait:* 50 min",
        ]

    def test_an_annotation_of_no_known_name_is_not_a_value(self) -> None:
        """Only names queuebot or the YAML file knows: other numeric annotations stay text."""
        body = jobs_queueing(queue_depth="7")
        assert "Queue depth" not in everything(Renderer().incident(incident_of(body)))
        named = Renderer(naming=ValueNaming.of({"queue_depth": AlertValue(name="Queue depth")}))
        assert "*Queue depth:* 7" in fields(named.incident(incident_of(body)))

    def test_the_dashboard_annotation_is_the_dashboard_button(self) -> None:
        assert buttons(Renderer().incident(incident_of(jobs_queueing()))) == {
            "Run diagnostics": None,
            "Silence…": None,
            "Open runbook": "https://example.invalid/runbooks/queue",
            "View alert": "http://prometheus.example:9090/graph?g0.expr=jobs_queued+%3E+5",
            "Dashboard": DASHBOARD,
        }

    def test_dashboard_url_does_too_and_grafanas_own_comes_first(self) -> None:
        body = jobs_queueing()
        for alert in [body["alerts"][0]]:
            del alert["annotations"]["dashboard"]
            alert["annotations"]["Dashboard_URL"] = "https://grafana.example/d/other"
        assert buttons(Renderer().incident(incident_of(body)))["Dashboard"] == (
            "https://grafana.example/d/other"
        )
        linked = grafana({}, dashboard=DASHBOARD)
        linked["alerts"][0]["dashboardURL"] = "https://grafana.example/d/own"
        assert buttons(Renderer().incident(incident_of(linked)))["Dashboard"] == (
            "https://grafana.example/d/own"
        )

    @pytest.mark.parametrize(
        "url",
        ["javascript:alert(1)", "<http://x|y>", "https://a.example/x|y", "www.example.com",
         "<!channel>", "https://evil.example/ <!here>"],
    )  # fmt: skip
    def test_an_unsafe_dashboard_annotation_is_no_button_and_no_link(self, url: str) -> None:
        message = Renderer().incident(incident_of(jobs_queueing(dashboard=url)))
        assert "Dashboard" not in buttons(message)
        assert not MENTION_OR_LINK.search(everything(message).replace("<!date^", ""))


class TestReference:
    def test_the_reference_alert_reads_as_before(self) -> None:
        """Its names and thresholds as ever; its condition's refId in words."""
        message = Renderer().incident(incident_of(reference()))
        assert fields(message) == [
            "*Max queue time:* 114 min (threshold 1 min)",
            "*Max queue size:* 14 (threshold 0)",
            "*Threshold breached:* 1",
        ]
        assert message.text == (
            "[P2] Jobs are queueing in autoscaled machines: firing. Max queue time: 114 min"
            " (threshold 1 min), Max queue size: 14 (threshold 0), Threshold breached: 1"
        )
        assert "Dashboard" not in buttons(message)

    def test_the_built_in_keys_are_the_ones_the_domain_reads_from_annotations(self) -> None:
        thresholds = {k.threshold_key for k in KNOWN_VALUES.values() if k.threshold_key}
        assert set(KNOWN_VALUES) | thresholds == NAMED_VALUE_KEYS


class TestDerivedNames:
    @pytest.mark.parametrize(
        ("key", "label", "unit"),
        [
            ("longest_wait_minutes", "Longest wait", "min"),
            ("queue_time_mins", "Queue time", "min"),
            ("job_time_seconds", "Job time", "s"),
            ("p95-wait-secs", "P95 wait", "s"),
            ("uptime_hours", "Uptime", "h"),
            ("cpu_percent", "Cpu", "%"),
            ("disk_pct", "Disk", "%"),
            ("wait_MINUTES", "Wait", "min"),
            ("threshold_breached", "Threshold breached", ""),
            ("reducer", "Reducer", ""),
            ("HTTP_errors", "HTTP errors", ""),
            ("minutes", "Minutes", ""),
            ("_minutes", "Minutes", ""),
            ("wait_s", "Wait s", ""),
            ("B", "B", ""),
            ("C", "C", ""),
            ("A1", "A1", ""),
            ("AA", "AA", ""),
            ("Q_1", "Q_1", ""),
        ],
    )
    def test_a_key_in_words(self, key: str, label: str, unit: str) -> None:
        assert derived_value(key) == KnownValue(label, unit)

    def test_derived_names_and_units_in_the_message(self) -> None:
        """Words and units from the keys; a letter refId as written, its number unitless."""
        body = grafana({"longest_wait_minutes": 61.0, "job_time_seconds": 42.5, "B": 1.0})
        assert fields(Renderer().incident(incident_of(body))) == [
            "*Longest wait:* 61 min",
            "*B:* 1",
            "*Job time:* 42.5 s",
        ]

    def test_derived_names_go_before_the_key_figures_when_the_message_is_cut(self) -> None:
        alert = parse_webhook(encoded(grafana({"job_time_seconds": 4.0, "queued_jobs": 9.0}))).lead
        assert key_values(alert, known_only=True) == ["*Jobs queued:* 9"]


class TestMapping:
    NAMING = ValueNaming.of(MAPPED)

    def test_mapped_names_are_shown_and_hidden_values_are_not(self) -> None:
        body = grafana({"B": 44.24, "C": 1.0})
        message = Renderer(naming=self.NAMING).incident(incident_of(body))
        assert fields(message) == ["*Jobs queued:* 44.24"]
        assert "C: 1" not in message.text and "*C:*" not in everything(message)
        assert fields(Renderer().incident(incident_of(body))) == ["*B:* 44.24", "*C:* 1"]

    def test_a_mapped_threshold_is_shown_beside_its_value_in_its_unit(self) -> None:
        alert = parse_webhook(encoded(grafana({"wait_s": 3600.0, "wait_threshold_s": 1800.0}))).lead
        assert key_values(alert, naming=self.NAMING) == [
            "*Longest wait:* 3600 s (threshold 1800 s)"
        ]

    def test_mapped_names_win_over_built_in_ones_and_keep_what_they_leave_unsaid(self) -> None:
        naming = ValueNaming.of(
            {
                "max_queue_size": AlertValue(name="Jobs waiting"),
                "max_queue_time_mins": AlertValue(unit=""),
                "longest_wait_minutes": AlertValue(name="Oldest job"),
            }
        )
        values = {"max_queue_size": 14.0, "queue_size_threshold": 0.0, "max_queue_time_mins": 9.0}
        alert = parse_webhook(encoded(grafana(values, longest_wait_minutes="3"))).lead
        assert key_values(alert, naming=naming) == [
            "*Max queue time:* 9",
            "*Jobs waiting:* 14 (threshold 0)",
            "*Oldest job:* 3 min",
        ]

    def test_mapped_values_are_the_key_figures_kept_when_the_message_is_cut(self) -> None:
        alert = parse_webhook(encoded(grafana({"B": 3.0, "A": 2.0, "C": 1.0}))).lead
        assert key_values(alert, known_only=True, naming=self.NAMING) == ["*Jobs queued:* 3"]
        assert value_summary(alert, self.NAMING) == "Jobs queued: 3, A: 2"

    def test_replies_use_the_mapping_and_leave_hidden_values_out(self) -> None:
        group = parse_webhook(encoded(grafana({"B": 3.0, "C": 1.0})))
        changes = (
            ValueChange(alert="a", key="B", old=1.0, new=3.0),
            ValueChange(alert="a", key="C", old=0.0, new=1.0),
        )
        renderer = Renderer(naming=self.NAMING)
        event = ThreadEvent(kind=ThreadEventKind.CHANGED, at=AT, group=group, changes=changes)
        text = everything(renderer.thread_event(event))
        assert "Jobs queued: 1 → 3" in text and "C:" not in text
        hidden = event.model_copy(update={"changes": changes[1:]})
        assert "Only values these messages leave out changed" in everything(
            renderer.thread_event(hidden)
        )
        resolved = ThreadEvent(kind=ThreadEventKind.RESOLVED, at=AT, group=group)
        assert "Last firing values: Jobs queued: 3" in everything(renderer.thread_event(resolved))

    def test_the_storm_digest_uses_the_mapping(self) -> None:
        shown = incident_of(grafana({"B": 3.0, "C": 1.0}))
        (page,) = Renderer(naming=self.NAMING).digest(AT, [shown])
        assert "Jobs queued: 3" in everything(page) and "C: 1" not in everything(page)

    HOSTILE = "<!channel> <http://x|y> <@U1> & *bold*"

    def test_a_hostile_name_or_unit_in_the_mapping_cannot_ping_or_link(self) -> None:
        naming = ValueNaming.of(
            {
                "B": AlertValue(name=self.HOSTILE[:80], unit="<!here>", threshold="<!channel>"),
                "<!channel>": AlertValue(name="<https://evil.example|click>"),
            }
        )
        body = grafana({"B": 3.0, "<!channel>": 1.0}, **{"<!channel>": "2"})
        shown = incident_of(body)
        renderer = Renderer(naming=naming)
        change = ValueChange(alert="<!here>", key="B", old=1.0, new=3.0)
        messages = [
            renderer.incident(shown),
            renderer.thread_event(
                ThreadEvent(
                    kind=ThreadEventKind.CHANGED, at=AT, group=shown.group, changes=(change,)
                )
            ),
            *renderer.digest(AT, [shown]),
        ]
        text = "\n".join(everything(m) for m in messages)
        assert "&lt;!channel&gt; &lt;http://x|y&gt;" in text and "&lt;!here&gt;" in text
        for message in messages:
            assert not MENTION_OR_LINK.search(everything(message).replace("<!date^", ""))
            assert blockkit.validate_message(message.text, message.blocks) == []

    def test_a_hostile_value_key_from_the_alert_cannot_ping_or_link(self) -> None:
        body = grafana({"<!channel>_minutes": 3.0, "<http://x|y>": 1.0})
        message = Renderer().incident(incident_of(body))
        assert "*&lt;!channel&gt;:* 3 min" in fields(message)
        assert not MENTION_OR_LINK.search(everything(message).replace("<!date^", ""))


@st.composite
def _namings(draw: st.DrawFn, keys: list[str]) -> ValueNaming:
    """Names, units and thresholds of any text, for keys of the alert's and others."""
    chosen = draw(st.lists(st.sampled_from([*keys, "queued_jobs", "x"]), max_size=6))
    known = {
        key: KnownValue(
            draw(texts()),
            draw(texts(0, 1, 30, 900)),
            draw(st.one_of(st.none(), st.sampled_from(keys or ["x"]))),
            draw(st.booleans()),
        )
        for key in chosen
    }
    return ValueNaming({**KNOWN_VALUES, **known})


@SETTINGS
@given(st.data(), alert_bodies(), texts(0, 1, 40, 900), urls)
def test_every_message_of_a_hostile_naming_is_one_slack_takes(
    data: st.DataObject, body: dict[str, Any], text: str, dashboard: str
) -> None:
    """Whatever the YAML file names values and whatever an alert's annotations say, every
    message is one Slack takes and nothing in it mentions or links but queuebot's own links."""
    body = copy.deepcopy(body)
    lead = body["alerts"][0]
    lead["annotations"] |= {"queued_jobs": data.draw(st.sampled_from(["14", text])), "x": "3"}
    lead["annotations"]["dashboard"] = dashboard
    naming = data.draw(_namings(list(lead["values"])[:20]))
    renderer = Renderer(naming=naming)
    shown = incident_of(body)
    links = {a.generator_url for a in shown.group.alerts}
    changes = tuple(
        ValueChange(alert=text or "a", key=key, old=1.0, new=value)
        for key, value in naming.values_of(shown.group.lead).items()
    )
    event = ThreadEvent(kind=ThreadEventKind.CHANGED, at=AT, group=shown.group, changes=changes)
    assert_slack_takes(renderer.incident(shown), links, {"view"})
    assert_slack_takes(renderer.thread_event(event), links, {"view"})
    for page in renderer.digest(AT, [shown] * 3):
        assert_slack_takes(page, links, {"view"})
