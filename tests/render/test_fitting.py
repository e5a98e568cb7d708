"""A message too big for Slack is rendered again without what the on-call needs least, down to
title, state and buttons; a thread reply or /queue-status answer loses no more than it must."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import HealthCheck, given, settings

from bot.domain.diagnosis import RunnerTypeState
from bot.domain.incidents import Incident, IncidentStatus, ThreadEvent, ThreadEventKind, ValueChange
from bot.domain.notifications import parse_webhook
from bot.domain.queue_status import Compared, FleetView, QueueStatus, TypeDetail
from bot.render.incident import CUTS, SHORTENED, parent_forms
from bot.render.renderer import Renderer
from bot.render.templates import Templates
from bot.slack import blockkit
from bot.slack.message import Message
from queuebot_lab.sandbox.slack import blockkit as sandbox
from testkit.payloads import encoded, reference
from tests.render.hostile import alert_bodies, hostile_body

AT = datetime(2026, 11, 24, 3, 0, tzinfo=UTC)


def _incident(body: dict[str, Any]) -> Incident:
    group = parse_webhook(encoded(body))
    return Incident(
        id=7,
        group_key=group.group_key,
        channel="C1",
        status=IncidentStatus.FIRING,
        group=group,
        started_at=group.started_at,
    )


def _texts(message: Message) -> str:
    return json.dumps(message.blocks, ensure_ascii=False)


def _buttons(message: Message) -> list[str]:
    actions = next(b for b in message.blocks if b["type"] == "actions")
    return [e["text"]["text"] for e in actions["elements"]]


def _accepted(message: Message) -> bool:
    return (
        blockkit.validate_message(message.text, message.blocks) == []
        and sandbox.message_problems(message.blocks) == []
    )


def _long_links(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with three links of about 2,990 characters and a 5,000-character description."""
    alert = body["alerts"][0]
    long = "https://grafana.example/d/x?q=" + "z" * 2960
    alert["annotations"] |= {"description": "d" * 5000, "runbook_url": long + "r"}
    body["commonAnnotations"] = {}
    alert["generatorURL"], alert["dashboardURL"] = long + "g", long + "d"
    return body


class TestParentDegrades:
    def test_a_huge_values_map_still_gives_the_full_message(self) -> None:
        """500 values with long names: ten fields of bounded length, nothing else left out."""
        body = reference()
        body["alerts"][0]["values"] |= {f"v{n}" + "&<" * 300: float(n) for n in range(500)}
        message = Renderer().incident(_incident(body))
        assert _accepted(message)
        fields = next(b["fields"] for b in message.blocks if "fields" in b)
        assert len(fields) == 10
        text = _texts(message)
        assert "*Max queue time:* 114 min (threshold 1 min)" in text
        assert "Alert fires when regular runner types" in text  # the description
        assert "Rule `dez2aomgvru2oe`" in text and SHORTENED not in text
        assert _buttons(message) == ["Run diagnostics", "Silence…", "Open runbook", "View alert"]

    def test_the_description_goes_before_any_link(self) -> None:
        """Three 2,990-character links and a long description do not fit together: the rule
        and the description go; the three links, the summary and the labels stay, and the
        message says it was shortened."""
        message = Renderer().incident(_incident(_long_links(reference())))
        assert _accepted(message)
        assert _buttons(message) == [
            "Run diagnostics", "Silence…", "Open runbook", "View alert", "Dashboard"
        ]  # fmt: skip
        text = _texts(message)
        assert "ddddd" not in text and "Rule `" not in text and "Folder:" not in text
        assert "Jobs are queueing in the autoscaled machines" in text  # the summary
        assert "`type=alerting-infra`" in text and SHORTENED in text

    def test_the_dashboard_goes_before_the_alert_list(self) -> None:
        """The same with forty alerts listed: the Dashboard's long link goes too, the list of
        alerts, View alert and the runbook stay."""
        body = _long_links(reference())
        first = body["alerts"][0]
        body["alerts"] = [
            {**first, "labels": {**first["labels"], "runner": f"linux.{n}.{'x' * 200}"},
             "fingerprint": f"{n:016x}"}
            for n in range(40)
        ]  # fmt: skip
        message = Renderer().incident(_incident(body))
        assert _accepted(message)
        assert _buttons(message) == ["Run diagnostics", "Silence…", "Open runbook", "View alert"]
        assert "runner=linux.0.xxx" in _texts(message)

    def test_the_order_of_what_goes(self) -> None:
        """What the on-call needs least goes first; the last form keeps title, state, buttons."""
        assert CUTS == (
            "rule", "description", "other_values", "dashboard", "alert_link", "alerts",
            "labels", "runbook", "summary", "minimal",
        )  # fmt: skip

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(alert_bodies())
    def test_each_form_is_smaller_and_the_last_always_fits(self, body: dict[str, Any]) -> None:
        """Whatever the alert, each form of the parent that leaves something out is no bigger
        than the one before, and the last (title, state, the buttons with short links) is one
        Slack takes."""
        templates = Templates()
        sizes = []
        last: dict[str, Any] = {}
        for last in parent_forms(_incident(body)):
            raw = templates._env.get_template("incident.json.j2").render(**last)
            sizes.append(blockkit.blocks_char_count(json.loads(raw)["blocks"]))
        # The first cut adds the line saying the message was shortened; each after it shrinks.
        assert sizes[1:] == sorted(sizes[1:], reverse=True)
        message = templates.message("incident.json.j2", last)
        assert _accepted(message)
        kinds = [b["type"] for b in message.blocks]
        assert kinds == ["header", "section", "context", "actions"]
        assert {"Run diagnostics", "Silence…"} <= set(_buttons(message))


class TestOtherKinds:
    def test_a_reply_keeps_every_line_past_a_long_value_name(self) -> None:
        """A 10,000-character value name is shortened on its line; the alerts that started
        firing are still listed after it."""
        incident = _incident(hostile_body())
        group = incident.group
        change = ValueChange(alert="a", key="k" * 10_000, old=1.0, new=2.0)
        event = ThreadEvent(
            kind=ThreadEventKind.CHANGED, at=AT, group=group, changes=(change,), joined=group.alerts
        )
        message = Renderer().thread_event(event)
        assert _accepted(message)
        assert "Started firing" in _texts(message) and "more lines" not in _texts(message)

    def test_a_query_too_long_to_share_gets_no_share_button(self) -> None:
        """/queue-status with a 3,000-character query: answered, without Share in channel."""
        state = RunnerTypeState(name="q" * 3000, queued=3, max_wait_seconds=600, busy=4,
                                registered=4, max=4)  # fmt: skip
        detail = TypeDetail(state, 4, *(Compared(1, 1),) * 4)
        fleet = FleetView(types=(state,), window="10m")
        status = QueueStatus(AT, fleet, (), 0, (), query="q" * 3000, details=(detail,), matched=1)
        message = Renderer().queue_status(status)
        assert _accepted(message)
        assert not any(b["type"] == "actions" for b in message.blocks)
