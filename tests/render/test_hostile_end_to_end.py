"""Hostile alerts through the running app over HTTP: each is posted in the local Slack
workspace, kept up to date, its thread filled, and no delivery is abandoned."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from queuebot_lab.sandbox.slack import PostedMessage
from testkit.harness import Stack, running_stack
from tests.render.hostile import grown, hostile_body


def _resolved(body: dict[str, Any]) -> dict[str, Any]:
    done = copy.deepcopy(body)
    done["status"] = "resolved"
    for alert in done["alerts"]:
        alert["status"] = "resolved"
        alert["endsAt"] = "2024-12-01T04:05:00Z"
    return done


async def _deliveries(stack: Stack) -> dict[tuple[str, str], float]:
    """queuebot_slack_deliveries_total by (kind, result), from the bot's /metrics."""
    async with aiohttp.ClientSession() as http, http.get(f"{stack.url}/metrics") as answer:
        text = await answer.text()
    return {
        (sample.labels["kind"], sample.labels["result"]): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "queuebot_slack_deliveries_total"
    }


def _all_taken(stack: Stack) -> None:
    """Slack took every message the bot sent or edited."""
    calls = stack.sandbox.calls("chat.postMessage") + stack.sandbox.calls("chat.update")
    assert calls and [(c.method, c.error) for c in calls if not c.ok] == []


async def test_a_hostile_alert_is_posted_updated_and_threaded(tmp_path: Path) -> None:
    """Long labels and values, 200 values, long and unsafe links, emoji and text that grows
    when escaped: the parent is posted, edited on each change, and the change and the
    resolution are replied in its thread; no delivery fails."""
    body = hostile_body()
    async with running_stack(tmp_path) as stack:
        assert (await stack.webhook(body)).status == 202
        (parent,) = await stack.parents(1)
        assert (await stack.webhook(grown(body))).status == 202
        (changed,) = await stack.replies(parent, 1)
        assert (await stack.webhook(_resolved(grown(body)))).status == 202
        _, resolution = await stack.replies(parent, 2)
        await stack.settled()
        deliveries = await _deliveries(stack)
        (parent,) = stack.sandbox.messages()
        _all_taken(stack)

    assert "Started firing" in stack.text(changed) and "Resolved" in stack.text(resolution)
    assert "Resolved after" in stack.text(parent) and "[P2]" in stack.text(parent)
    assert not any(result == "failed" for _, result in deliveries), deliveries
    assert deliveries[("post_parent", "done")] == 1
    assert deliveries[("post_reply", "done")] == 2
    assert deliveries.get(("update_parent", "done"), 0) >= 1


def _storm_member(n: int) -> dict[str, Any]:
    body = hostile_body()
    body["groupKey"] = f"hostile-storm-{n}"
    alert = body["alerts"][0]
    alert["labels"] = {**alert["labels"], "storm": f"{n} " + "&" * 500}
    alert["fingerprint"] = f"{n:016x}"
    return body


def _digest(stack: Stack) -> PostedMessage | None:
    return next(
        (
            m
            for m in stack.sandbox.messages()
            if (m.metadata or {}).get("event_type") == "queuebot_digest"
        ),
        None,
    )


async def test_a_storm_of_hostile_alerts_goes_into_its_digest(tmp_path: Path) -> None:
    """Twelve hostile alerts at once: ten parents, then a storm digest listing the other two;
    every message is taken and no delivery fails."""
    async with running_stack(tmp_path) as stack:
        for n in range(12):
            assert (await stack.webhook(_storm_member(n))).status == 202
        digest = await stack.sandbox.wait_for(lambda: _digest(stack), timeout=30)
        await stack.settled(timeout=30)
        deliveries = await _deliveries(stack)
        _all_taken(stack)

    assert "Alert storm: 2 incidents" in stack.text(digest)
    assert len(stack.sandbox.messages()) == 11
    assert not any(result == "failed" for _, result in deliveries), deliveries
