"""A storm digest's later pages, posted as replies in its thread, are posted once: a page whose
answer was lost is found by the digest and page number it carries, not posted again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.delivery.digest import DIGEST_PAGE_EVENT
from bot.incidents.service import STORM_THRESHOLD
from bot.render.digest import DIGEST_FIRST_PAGE
from testkit.harness import running_stack
from testkit.payloads import reference


def _incident(n: int) -> dict[str, Any]:
    body = reference()
    body["groupKey"] = f"paged-{n}"
    body["alerts"][0]["labels"] = {**body["alerts"][0]["labels"], "storm": str(n)}
    body["alerts"][0]["fingerprint"] = f"paged{n}"
    return body


async def test_a_lost_answer_to_a_digest_page_posts_no_second_page(tmp_path: Path) -> None:
    first_page_full = STORM_THRESHOLD + DIGEST_FIRST_PAGE
    async with running_stack(tmp_path) as stack:
        for n in range(first_page_full):
            assert (await stack.webhook(_incident(n))).status == 202
        await stack.settled(timeout=60)
        (digest,) = [
            m
            for m in stack.sandbox.messages()
            if (m.metadata or {}).get("event_type") == "queuebot_digest"
        ]
        assert stack.sandbox.replies(None, digest.ts) == []
        # The next member starts page 2: Slack posts it, and its answer is lost.
        stack.sandbox.faults.add("chat.postMessage", status=500, after=True)
        assert (await stack.webhook(_incident(first_page_full))).status == 202
        await stack.settled(timeout=30)
        pages = stack.sandbox.replies(None, digest.ts)
        assert len(pages) == 1, [p.text for p in pages]
        assert (pages[0].metadata or {}).get("event_type") == DIGEST_PAGE_EVENT
        assert f"storm={first_page_full}" in stack.text(pages[0])
        assert stack.sandbox.calls("conversations.replies")


async def test_a_lost_answer_to_the_digest_posts_no_second_digest(tmp_path: Path) -> None:
    """Every incident of a storm owes the digest: when Slack took it and its answer was lost,
    the next incident's attempt finds it by the digest's own id instead of posting it again."""
    async with running_stack(tmp_path) as stack:
        for n in range(STORM_THRESHOLD):
            assert (await stack.webhook(_incident(n))).status == 202
        await stack.settled(timeout=60)
        # The digest is posted, and its answer lost, for as many tries as there are incidents.
        stack.sandbox.faults.add("chat.postMessage", status=500, after=True, count=5)
        for n in range(STORM_THRESHOLD, STORM_THRESHOLD + 5):
            assert (await stack.webhook(_incident(n))).status == 202
        await stack.settled(timeout=60)
        digests = [
            m
            for m in stack.sandbox.messages()
            if (m.metadata or {}).get("event_type") == "queuebot_digest"
        ]
        assert len(digests) == 1
        for n in range(STORM_THRESHOLD, STORM_THRESHOLD + 5):
            assert f"storm={n}" in stack.text(digests[0])
