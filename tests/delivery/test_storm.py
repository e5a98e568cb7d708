"""Alert storms: past ten incidents opening in a minute, new ones share one digest message,
kept up to date, each incident still tracked and resolvable."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from bot.domain.clock import Clock
from queuebot_lab.sandbox.slack import PostedMessage
from testkit.harness import Stack, running_stack
from testkit.payloads import reference, with_values


def _incident(n: int) -> dict[str, Any]:
    body = reference()
    body["groupKey"] = f"storm-{n}"
    body["alerts"][0]["labels"] = {**body["alerts"][0]["labels"], "storm": str(n)}
    body["alerts"][0]["fingerprint"] = f"fp{n}"
    return body


def _resolved(body: dict[str, Any]) -> dict[str, Any]:
    done = copy.deepcopy(body)
    done["status"] = "resolved"
    done["alerts"][0]["status"] = "resolved"
    done["alerts"][0]["endsAt"] = "2024-12-01T04:05:00Z"
    return done


def _digest(stack: Stack) -> PostedMessage | None:
    return next(
        (
            m
            for m in stack.sandbox.messages()
            if (m.metadata or {}).get("event_type") == "queuebot_digest"
        ),
        None,
    )


async def test_a_storm_goes_into_one_digest_kept_up_to_date(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        bodies = [_incident(n) for n in range(15)]
        for body in bodies:
            assert (await stack.webhook(body)).status == 202
        digest = await stack.sandbox.wait_for(lambda: _digest(stack), timeout=20)
        await stack.settled(timeout=20)
        own = [m for m in stack.sandbox.messages() if m is not digest]
        assert len(own) == 10  # the first ten before the threshold have their own
        text = stack.text(digest)
        assert "Alert storm: 5 incidents" in text
        for n in range(10, 15):
            assert re.search(rf"storm={n}\b", text)
        # Members change and resolve in the digest, with no thread of their own.
        await stack.webhook(with_values(bodies[12], max_queue_time_mins=321))
        await stack.webhook(_resolved(bodies[13]))
        await stack.sandbox.wait_for(
            lambda: "321 min" in stack.text(digest) and "Resolved after" in stack.text(digest),
            timeout=20,
        )
        assert "*4 firing* · 1 resolved" in stack.text(digest)
        assert stack.sandbox.replies(None, digest.ts) == []
        assert len(stack.sandbox.messages()) == 11


async def test_a_new_incident_after_the_storm_has_its_own_message(tmp_path: Path) -> None:
    """Quiet for a minute after the storm: the next incident is posted as usual."""
    from datetime import UTC, datetime, timedelta

    now = [datetime(2026, 11, 21, 3, 0, tzinfo=UTC)]
    async with running_stack(tmp_path, clock=Clock.at(lambda: now[0])) as stack:
        for n in range(12):
            await stack.webhook(_incident(n))
        await stack.sandbox.wait_for(lambda: _digest(stack), timeout=20)
        now[0] += timedelta(minutes=5)
        await stack.webhook(_incident(99))
        await stack.settled(timeout=20)
        assert any(
            "storm=99`" in stack.text(m)
            for m in stack.sandbox.messages()
            if m is not _digest(stack)
        )
        assert "storm=99`" not in stack.text(_digest(stack))  # type: ignore[arg-type]


async def test_a_big_storm_continues_its_list_in_the_thread(tmp_path: Path) -> None:
    """More incidents than one message holds: the list goes on in the digest's thread, and a
    change to an incident listed there edits that page."""
    async with running_stack(tmp_path) as stack:
        bodies = [_incident(n) for n in range(50)]
        for body in bodies:
            await stack.webhook(body)
        digest = await stack.sandbox.wait_for(lambda: _digest(stack), timeout=20)
        await stack.settled(timeout=40)
        pages = stack.sandbox.replies(None, digest.ts)
        listed = stack.text(digest) + "".join(stack.text(p) for p in pages)
        assert "Alert storm: 40 incidents" in stack.text(digest)
        assert all(re.search(rf"storm={n}\b", listed) for n in range(10, 50))
        assert len(pages) >= 1 and "continues in the thread" in stack.text(digest)
        await stack.webhook(_resolved(bodies[49]))
        await stack.sandbox.wait_for(
            lambda: any(
                re.search(r"storm=49\b[^\\]*Resolved after", stack.text(p))
                for p in stack.sandbox.replies(None, digest.ts)
            ),
            timeout=20,
        )
        assert len(stack.sandbox.replies(None, digest.ts)) == len(pages)


async def test_a_late_copy_from_another_grafana_replica_changes_nothing(tmp_path: Path) -> None:
    """Grafana in HA: a lagging replica's copy of an older notification, after a newer one,
    is absorbed instead of reported as a change back."""
    async with running_stack(tmp_path) as stack:
        first = reference()
        await stack.webhook(first)
        (parent,) = await stack.parents(1)
        await stack.webhook(with_values(first, max_queue_time_mins=150))
        await stack.replies(parent, 1)
        late = await stack.webhook(first)
        assert late.body["outcome"] == "duplicate of a notification already seen"
        await stack.settled()
        assert len(stack.sandbox.replies(None, parent.ts)) == 1
        assert "150 min" in stack.text(stack.sandbox.messages()[0])
