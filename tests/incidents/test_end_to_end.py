"""The incident lifecycle over HTTP: webhooks in, messages and threads in the local Slack."""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from queuebot_lab.sandbox.slack import PostedMessage
from testkit.harness import running_stack
from testkit.payloads import WEBHOOK_FIXTURES, load, reference, refired, with_values

RESOLVED_AT = datetime(2024, 12, 1, 4, 5, tzinfo=UTC)
MENTION_OR_LINK = re.compile(r"<[!@#]|<https?:|<mailto:")
OWN_VIEW_LINK = re.compile(r"<https://pytorchci\.grafana\.net/[^|>]*\|view>")


def _mrkdwn_objects(node: object) -> Iterator[dict[str, object]]:
    if isinstance(node, dict):
        if node.get("type") == "mrkdwn":
            yield node
        for value in node.values():
            yield from _mrkdwn_objects(value)
    elif isinstance(node, list):
        for item in node:
            yield from _mrkdwn_objects(item)


def _buttons(message: PostedMessage) -> dict[str, dict[str, object]]:
    actions = next(b for b in message.blocks if b["type"] == "actions")
    return {e["text"]["text"]: e for e in actions["elements"]}


class TestFirstFiring:
    async def test_reference_alert_message(self, tmp_path: Path) -> None:
        """The reference alert becomes one message with its values, team, priority and links."""
        async with running_stack(tmp_path) as stack:
            answer = await stack.webhook(reference())
            assert answer.status == 202
            (parent,) = await stack.parents(1)
            text = stack.text(parent)
            assert "114 min" in text and "Max queue size:* 14" in text
            assert "[P2]" in text and "pytorch-dev-infra" in text
            buttons = _buttons(parent)
            assert buttons["Open runbook"]["url"] == "https://hud.pytorch.org/metrics"
            assert buttons["View alert"]["url"] == (
                "https://pytorchci.grafana.net/alerting/grafana/dez2aomgvru2oe/view?orgId=1"
            )
            assert {"Run diagnostics", "Silence…"} <= set(buttons)
            assert parent.channel == stack.sandbox.channel_id

    @pytest.mark.parametrize("name", WEBHOOK_FIXTURES)
    async def test_every_fixture_yields_a_message(self, tmp_path: Path, name: str) -> None:
        """Every real webhook body is accepted and posted as a valid message."""
        async with running_stack(tmp_path) as stack:
            answer = await stack.webhook(load(name))
            assert answer.status == 202, answer.body
            (parent,) = await stack.parents(1)
            assert parent.blocks and parent.text
            post = stack.sandbox.calls("chat.postMessage")[0]
            assert post.ok, post.error

    async def test_two_identical_webhooks_at_once_make_one_parent(self, tmp_path: Path) -> None:
        """Concurrent duplicates are applied one after the other: one message, no reply."""
        async with running_stack(tmp_path) as stack:
            answers = await asyncio.gather(*(stack.webhook(reference()) for _ in range(5)))
            assert [a.status for a in answers] == [202] * 5
            await stack.parents(1)
            await stack.settled()
            assert len(stack.sandbox.messages()) == 1
            assert len(stack.sandbox.calls("chat.postMessage")) == 1


class TestThread:
    async def test_repeat_without_change_posts_nothing(self, tmp_path: Path) -> None:
        """Grafana's repeat notification with the same content makes no new message."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            await stack.parents(1)
            answer = await stack.webhook(reference())
            assert answer.body["outcome"] == "repeat notification, nothing changed"
            await stack.settled()
            assert len(stack.sandbox.calls("chat.postMessage")) == 1
            assert stack.sandbox.calls("chat.update") == []

    async def test_a_value_named_in_the_yaml_file_changes_in_a_reply(self, tmp_path: Path) -> None:
        """An Alertmanager rule's value annotation named only in `alert_values:` is a value
        from the first notification on: shown, and its move said in a reply."""
        config = tmp_path / "queuebot.yml"
        config.write_text("alert_values:\n  depth: {name: Jobs waiting}\n")

        def body(depth: str) -> dict[str, object]:
            sent = load("alertmanager_0.25_webhook_v4_firing.json")
            sent["alerts"][0]["annotations"]["depth"] = depth
            return sent

        async with running_stack(tmp_path / "bot", QUEUEBOT_CONFIG=str(config)) as stack:
            await stack.webhook(body("3"))
            (parent,) = await stack.parents(1)
            assert "*Jobs waiting:* 3" in stack.text(parent)
            await stack.webhook(body("9"))
            (reply,) = await stack.replies(parent, 1)
            assert "Jobs waiting: 3 → 9" in reply.text + str(reply.blocks)

    async def test_changed_values_reply_and_edit(self, tmp_path: Path) -> None:
        """Moved values: one reply saying what changed, and the parent shows the new values."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            (parent,) = await stack.parents(1)
            await stack.webhook(with_values(reference(), max_queue_time_mins=130))
            (reply,) = await stack.replies(parent, 1)
            assert "Max queue time: 114 → 130 min" in reply.text + str(reply.blocks)
            await stack.settled()
            (parent,) = stack.sandbox.messages()
            assert "130 min" in stack.text(parent)

    async def test_alert_joining_the_group(self, tmp_path: Path) -> None:
        """A second alert in the group is announced in the thread and listed in the parent."""
        async with running_stack(tmp_path) as stack:
            body = reference()
            await stack.webhook(body)
            (parent,) = await stack.parents(1)
            grown = copy.deepcopy(body)
            second = copy.deepcopy(body["alerts"][0])
            second["labels"]["machine_type"] = "linux.g5.4xlarge.nvidia.gpu"
            second["fingerprint"] = "0000000000000002"
            grown["alerts"].append(second)
            await stack.webhook(grown)
            (reply,) = await stack.replies(parent, 1)
            assert "Started firing" in str(reply.blocks)
            assert "linux.g5.4xlarge.nvidia.gpu" in str(reply.blocks)
            await stack.settled()
            assert "2 of 2 alerts firing" in stack.text(stack.sandbox.messages()[0])

    async def test_resolution(self, tmp_path: Path) -> None:
        """Resolved: the parent says how long it lasted and keeps the firing values."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            (parent,) = await stack.parents(1)
            await stack.webhook(reference("resolved"))
            (reply,) = await stack.replies(parent, 1)
            assert "Resolved* after 1h42m" in reply.blocks[0]["text"]["text"]
            await stack.settled()
            (parent,) = stack.sandbox.messages()
            text = stack.text(parent)
            assert "Resolved after 1h42m" in text and "114 min" in text
            assert "Silence…" not in _buttons(parent)

    async def test_fast_refire_reopens_the_thread(self, tmp_path: Path) -> None:
        """Firing again 10 minutes after resolving: same thread, "Fired again", no new parent."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            (parent,) = await stack.parents(1)
            await stack.webhook(reference("resolved"))
            await stack.replies(parent, 1)
            await stack.webhook(refired(reference(), RESOLVED_AT + timedelta(minutes=10)))
            replies = await stack.replies(parent, 2)
            assert "Fired again" in replies[1].blocks[0]["text"]["text"]
            await stack.settled()
            assert len(stack.sandbox.messages()) == 1
            assert "Firing again" in stack.text(stack.sandbox.messages()[0])

    async def test_new_incident_waits_for_the_previous_thread(self, tmp_path: Path) -> None:
        """With the resolution reply held back, the next incident's parent still comes after it."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            (first,) = await stack.parents(1)
            stack.sandbox.faults.add("chat.postMessage", status=429, retry_after=1)
            await stack.webhook(reference("resolved"))
            await stack.webhook(refired(reference(), RESOLVED_AT + timedelta(hours=3)))
            _, second = await stack.parents(2, timeout=15)
            (resolution,) = stack.sandbox.replies(None, first.ts)
            assert resolution.ts < second.ts
            assert "Follows <http" in stack.text(second)

    async def test_late_refire_opens_a_new_linked_incident(self, tmp_path: Path) -> None:
        """Firing again 3 hours later: a new parent that links the previous incident."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            (first,) = await stack.parents(1)
            await stack.webhook(reference("resolved"))
            await stack.replies(first, 1)
            await stack.settled()
            await stack.webhook(refired(reference(), RESOLVED_AT + timedelta(hours=3)))
            _, second = await stack.parents(2)
            permalink = stack.sandbox.calls("chat.getPermalink")[0]
            assert permalink.params["message_ts"] == first.ts
            assert "Follows <http" in stack.text(second)
            assert stack.sandbox.replies(None, first.ts)[-1].ts < second.ts

    async def test_replies_mention_nobody(self, tmp_path: Path) -> None:
        """Replies quoting hostile summaries and labels carry no mention and no link."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            (parent,) = await stack.parents(1)
            hostile = with_values(reference(), max_queue_size=20)
            hostile["alerts"][0]["annotations"]["summary"] = "<!channel> see <https://x.example|y>"
            joined = copy.deepcopy(hostile["alerts"][0])
            joined["fingerprint"] = "0000000000000002"
            joined["labels"]["owner"] = "<@U0ONCALL> <!subteam^S1>"
            hostile["alerts"].append(joined)
            hostile["commonAnnotations"] = {}
            await stack.webhook(hostile)
            await stack.webhook(reference("resolved"))
            replies = await stack.replies(parent, 2)
            assert "Started firing" in str(replies[0].blocks)
            for reply in replies:
                # The one link allowed is queuebot's own "view" link to the alert in Grafana.
                visible = OWN_VIEW_LINK.sub("", reply.text + str(reply.blocks))
                assert not MENTION_OR_LINK.search(visible.replace("<!date^", ""))
            assert "&lt;!channel&gt;" in str(replies[0].blocks)

    async def test_delayed_replies_tell_what_happened_then(self, tmp_path: Path) -> None:
        """Replies held back by Slack still show the values of their moment, not later ones."""
        async with running_stack(tmp_path) as stack:
            await stack.webhook(reference())
            (parent,) = await stack.parents(1)
            stack.sandbox.faults.add("chat.postMessage", status=429, retry_after=1)
            await stack.webhook(with_values(reference(), max_queue_time_mins=130))
            await stack.webhook(reference("resolved"))
            later = with_values(
                refired(reference(), RESOLVED_AT + timedelta(minutes=5)), max_queue_time_mins=50
            )
            await stack.webhook(later)
            replies = await stack.replies(parent, 3, timeout=15)
            resolved = str(replies[1].blocks)
            assert "Resolved" in resolved and "130 min" in resolved and "50 min" not in resolved
            assert "50 min" in str(replies[2].blocks)


class TestHostileAlert:
    async def test_alert_text_cannot_mention_or_link(self, tmp_path: Path) -> None:
        """<!channel>, a disguised link, &, quotes, newlines and 20,000 characters stay inert."""
        body = reference()
        alert = body["alerts"][0]
        alert["labels"]["type"] = '<!channel> & "quoted"\nsecond line'
        alert["annotations"]["summary"] = "<https://evil.example|click> <!here>"
        alert["annotations"]["description"] = (
            "<!everyone> log in at https://evil.example/login #general " + "d" * 20_000
        )
        body["commonAnnotations"] = {}
        body["commonLabels"] = {}
        async with running_stack(tmp_path) as stack:
            assert (await stack.webhook(body)).status == 202
            (parent,) = await stack.parents(1)
            post = stack.sandbox.calls("chat.postMessage")[0]
            assert post.ok
            visible = parent.text + str(parent.blocks)
            assert not MENTION_OR_LINK.search(visible.replace("<!date^", ""))
            assert '&lt;!channel&gt; &amp; "quoted"' in visible
            assert "&lt;https://evil.example|click&gt;" in visible
            assert "…" in visible
            # Bare URLs and #names are left alone only where Slack is told not to link them.
            texts = list(_mrkdwn_objects(parent.blocks))
            assert any("https://evil.example/login" in t["text"] for t in texts)
            assert all(t.get("verbatim") is True for t in texts)


class TestSlackTrouble:
    @pytest.mark.parametrize("status", [429, 500, 503])
    async def test_webhook_during_slack_outage_is_delivered_later(
        self, tmp_path: Path, status: int
    ) -> None:
        """Slack answering 429 or 5xx delays the message; it arrives once Slack recovers."""
        async with running_stack(tmp_path) as stack:
            stack.sandbox.faults.add("chat.postMessage", status=status, retry_after=1, count=2)
            answer = await stack.webhook(reference())
            assert answer.status == 202
            (parent,) = await stack.parents(1, timeout=15)
            failures = [c for c in stack.sandbox.calls("chat.postMessage") if not c.ok]
            assert len(failures) == 2
            assert "114 min" in stack.text(parent)

    async def test_message_waits_for_its_channel(self, tmp_path: Path) -> None:
        """A channel Slack does not know (yet) holds the message until the channel exists."""
        async with running_stack(tmp_path, QUEUEBOT_CHANNEL="#created-later") as stack:
            assert (await stack.webhook(reference())).status == 202
            await stack.sandbox.wait_for(lambda: stack.sandbox.calls("chat.postMessage"))
            assert stack.sandbox.calls("chat.postMessage")[0].error == "channel_not_found"
            channel = stack.sandbox.add_channel("created-later")
            (parent,) = await stack.sandbox.wait_for(
                lambda: stack.sandbox.messages(channel.id) or None, timeout=15
            )
            assert "114 min" in stack.text(parent)

    async def test_refused_parent_is_posted_with_the_next_update(self, tmp_path: Path) -> None:
        """A parent Slack refused is posted before the next reply, which lands in its thread."""
        async with running_stack(tmp_path) as stack:
            stack.sandbox.faults.add("chat.postMessage", status=200, error="invalid_blocks")
            await stack.webhook(reference())
            await stack.sandbox.wait_for(lambda: stack.sandbox.calls("chat.postMessage"))
            await stack.settled()
            assert stack.sandbox.messages() == []
            await stack.webhook(with_values(reference(), max_queue_time_mins=130))
            (parent,) = await stack.parents(1)
            (reply,) = await stack.replies(parent, 1)
            assert "130 min" in stack.text(parent)
            assert "114 → 130" in str(reply.blocks)


class TestRouting:
    async def test_team_annotation_routes_to_its_channel(self, tmp_path: Path) -> None:
        """A route in the YAML file sends the team's alert to its channel, others to the default."""
        config = tmp_path / "queuebot.yml"
        config.write_text(
            "routes:\n  - match: {Team: pytorch-dev-infra}\n    channel: '#ci-infra-alerts'\n"
        )
        async with running_stack(tmp_path, QUEUEBOT_CONFIG=str(config)) as stack:
            routed = stack.sandbox.add_channel("ci-infra-alerts")
            await stack.webhook(reference())
            await stack.webhook(load("grafana_docs_webhook_example.json"))
            (mine,) = await stack.sandbox.wait_for(
                lambda: stack.sandbox.messages(routed.id) or None
            )
            assert "114 min" in stack.text(mine)
            (other,) = await stack.parents(1)
            assert "High memory usage" in stack.text(other)


class TestOddAlerts:
    async def test_malformed_urls_only_lose_their_buttons(self, tmp_path: Path) -> None:
        """Unparseable runbook and dashboard URLs drop those buttons; the alert is still posted."""
        body = reference()
        body["alerts"][0]["annotations"]["runbook_url"] = "https://[broken"
        body["commonAnnotations"]["runbook_url"] = "https://[broken"
        body["alerts"][0]["dashboardURL"] = "http://host:99999/d/x"
        async with running_stack(tmp_path) as stack:
            assert (await stack.webhook(body)).status == 202
            (parent,) = await stack.parents(1)
            assert set(_buttons(parent)) == {"Run diagnostics", "Silence…", "View alert"}
            assert "Runbook: https://[broken" in stack.text(parent)

    async def test_alertmanager_body_with_malformed_generator_url(self, tmp_path: Path) -> None:
        """An Alertmanager alert whose generatorURL cannot be parsed is still accepted."""
        body = load("alertmanager_0.25_webhook_v4_firing.json")
        del body["alerts"][0]["labels"]["__alert_rule_uid__"]
        body["alerts"][0]["generatorURL"] = "http://[x"
        async with running_stack(tmp_path) as stack:
            assert (await stack.webhook(body)).status == 202
            await stack.parents(1)
