"""Rendering (bot.render): readable values, safe text, Slack's limits."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from bot.domain.incidents import IncidentStatus
from bot.render.mrkdwn import clip, escape_mrkdwn, safe_url
from bot.render.renderer import Renderer
from bot.render.values import format_duration
from bot.slack import blockkit
from testkit.payloads import WEBHOOK_FIXTURES, incident_of, load, reference

MENTION_OR_LINK = re.compile(r"<[!@#]|<https?:|<mailto:")


def _texts(blocks: object) -> list[str]:
    """Every text string anywhere in a Block Kit structure."""
    found: list[str] = []
    if isinstance(blocks, dict):
        for key, value in blocks.items():
            if key == "text" and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_texts(value))
    elif isinstance(blocks, list):
        for item in blocks:
            found.extend(_texts(item))
    return found


def _hostile() -> dict[str, object]:
    body = reference()
    alert = body["alerts"][0]
    alert["labels"]["type"] = '<!channel> & "quoted"\nnewline'
    alert["annotations"]["summary"] = "<https://evil.example|click> <!here> <@U123> <!subteam^S1>"
    alert["annotations"]["description"] = "<!everyone> " + "x" * 20_000
    alert["annotations"]["Team"] = "<#C999> team"
    body["commonAnnotations"] = {}
    body["commonLabels"] = {}
    return body


class TestHelpers:
    def test_escape_makes_markup_inert(self) -> None:
        """&, < and > become entities, so Slack shows them instead of acting on them."""
        assert escape_mrkdwn("<!channel> & <b>") == "&lt;!channel&gt; &amp; &lt;b&gt;"

    def test_clip_marks_shortening_and_keeps_entities_whole(self) -> None:
        """A shortened text ends with … and never with half an entity."""
        clipped = clip("a" * 8 + "&amp;" + "b" * 10, 11)
        assert clipped.endswith("…") and "&am…" not in clipped and len(clipped) <= 11

    def test_duration_format(self) -> None:
        """Durations read the way the on-call writes them."""
        assert format_duration(timedelta(hours=1, minutes=42)) == "1h42m"
        assert format_duration(timedelta(minutes=12)) == "12m"
        assert format_duration(timedelta(days=2, hours=3)) == "2d3h"

    @pytest.mark.parametrize(
        "url",
        [
            "www.time.com",
            "javascript:alert(1)",
            "https://a.example/x|y",
            "ftp://x",
            "https://",
            "https://[x",
            "http://host:99999/",
        ],
    )
    def test_unsafe_urls_are_refused(self, url: str) -> None:
        """Only http(s) URLs with a host become buttons or links."""
        assert safe_url(url) is None


class TestIncidentMessage:
    def test_reference_alert_values(self) -> None:
        """The reference alert shows P2, the team and its key values with thresholds."""
        message = Renderer().incident(incident_of(reference()))
        text = "\n".join(_texts(message.blocks))
        assert "[P2] Jobs are queueing in autoscaled machines" in text
        assert "*Max queue time:* 114 min (threshold 1 min)" in text
        assert "*Max queue size:* 14 (threshold 0)" in text
        assert "pytorch-dev-infra" in text
        assert "<!date^1733019780^" in text

    def test_reference_alert_buttons(self) -> None:
        """Buttons: Run diagnostics, Silence…, Open runbook and View alert with their URLs."""
        message = Renderer().incident(incident_of(reference()))
        actions = next(b for b in message.blocks if b["type"] == "actions")
        buttons = {e["text"]["text"]: e for e in actions["elements"]}
        assert list(buttons) == ["Run diagnostics", "Silence…", "Open runbook", "View alert"]
        assert buttons["Open runbook"]["url"] == "https://hud.pytorch.org/metrics"
        assert buttons["View alert"]["url"].endswith(
            "/alerting/grafana/dez2aomgvru2oe/view?orgId=1"
        )
        assert json.loads(buttons["Silence…"]["value"]) == {"v": 1, "incident": 7}

    def test_resolved_keeps_values_and_says_how_long(self) -> None:
        """A resolved incident shows its duration and the values it fired with."""
        started = datetime(2024, 12, 1, 2, 23, tzinfo=UTC)
        incident = incident_of(
            reference(),
            status=IncidentStatus.RESOLVED,
            resolved_at=started + timedelta(hours=1, minutes=42),
        )
        text = "\n".join(_texts(Renderer().incident(incident).blocks))
        assert "Resolved after 1h42m" in text
        assert "114 min" in text

    def test_dashboard_button_when_linked(self) -> None:
        """An alert linked to a dashboard gets a Dashboard button."""
        message = Renderer().incident(
            incident_of(load("grafana_cloud_webhook_pytorch_datasource_nodata_firing.json"))
        )
        actions = next(b for b in message.blocks if b["type"] == "actions")
        labels = [e["text"]["text"] for e in actions["elements"]]
        assert "Dashboard" in labels

    def test_several_alerts_are_listed_compactly(self) -> None:
        """A group of two alerts lists each on one line with its distinguishing labels."""
        message = Renderer().incident(incident_of(load("grafana_docs_webhook_example.json")))
        text = "\n".join(_texts(message.blocks))
        assert "zone=us-1" in text and "zone=eu-1" in text
        assert "2 of 2 alerts firing" in text

    def test_hostile_text_is_inert_and_fits(self) -> None:
        """Mentions, links, quotes, newlines and 20,000 characters cannot break the message."""
        message = Renderer().incident(incident_of(_hostile()))
        for text in [message.text, *_texts(message.blocks)]:
            assert not MENTION_OR_LINK.search(text.replace("<!date^", "")), text
        assert blockkit.validate_message(message.text, message.blocks) == []
        assert blockkit.blocks_char_count(message.blocks) <= 12_000
        assert "…" in "\n".join(_texts(message.blocks))

    @pytest.mark.parametrize("name", WEBHOOK_FIXTURES)
    def test_every_fixture_renders_valid_block_kit(self, name: str) -> None:
        """Every real payload becomes a message Slack accepts."""
        message = Renderer().incident(incident_of(load(name)))
        assert blockkit.validate_message(message.text, message.blocks) == []
        assert message.text

    def test_long_urls_never_break_the_message(self) -> None:
        """Three 2,990-character URL buttons and a long text: the message still fits, the
        description left out before any of the links."""
        body = reference()
        body["alerts"][0]["annotations"]["description"] = "d" * 5_000
        body["commonAnnotations"]["description"] = "d" * 5_000
        long = "https://grafana.example/d/x?" + "q=" + "z" * 2_960
        body["alerts"][0]["annotations"]["runbook_url"] = long
        body["commonAnnotations"]["runbook_url"] = long
        body["alerts"][0]["generatorURL"] = long
        body["alerts"][0]["dashboardURL"] = long
        message = Renderer().incident(incident_of(body))
        assert blockkit.validate_message(message.text, message.blocks) == []
        actions = next(b for b in message.blocks if b["type"] == "actions")
        assert [e["text"]["text"] for e in actions["elements"]] == [
            "Run diagnostics", "Silence…", "Open runbook", "View alert", "Dashboard"
        ]  # fmt: skip
        assert "ddddd" not in json.dumps(message.blocks)

    def test_many_alerts_with_long_links_are_listed_whole(self) -> None:
        """Alert lines are never cut inside a link, and the count of the rest is kept."""
        body = reference()
        template = body["alerts"][0]
        body["alerts"] = []
        for index in range(40):
            alert = json.loads(json.dumps(template))
            alert["fingerprint"] = f"{index:016x}"
            alert["labels"]["machine_type"] = f"linux.{index}xlarge"
            alert["generatorURL"] = "https://prometheus.example/graph?g0.expr=" + "x" * 450
            body["alerts"].append(alert)
        message = Renderer().incident(incident_of(body))
        assert blockkit.validate_message(message.text, message.blocks) == []
        lines_block = next(
            b for b in message.blocks if b["type"] == "section" and "linux.0xlarge" in str(b)
        )
        text = lines_block["text"]["text"]
        assert text.count("<https://") == text.count("|view>")
        assert text.splitlines()[-1].startswith("…and ")
