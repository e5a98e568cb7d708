"""Two writers of one storm digest (two replicas' workers on one store): each edit shows the
storm as the store holds it, whoever wrote the pages last. Here the writers are driven one step
at a time, so the order that a storm leaves to chance is fixed."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.delivery.digest import DigestWriter
from bot.delivery.pacing import Pacer
from bot.delivery.recovery import Recovery
from bot.domain.clock import Clock
from bot.domain.notifications import parse_webhook
from bot.domain.timings import Timings
from bot.incidents.service import STORM_THRESHOLD, IncidentService
from bot.render.renderer import Renderer
from bot.slack.gateway import SlackGateway
from bot.store import OutboxItem, OutboxKind, Store
from bot.store.sqlite import SQLiteStore
from bot.telemetry.metrics import Metrics
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.harness import BOT_TOKEN, CHANNEL_NAME, SIGNING_SECRET
from testkit.payloads import reference, with_values

START = datetime(2026, 11, 21, 3, 0, tzinfo=UTC)


def _incident(n: int) -> dict[str, Any]:
    body = reference()
    body["groupKey"] = f"writers-{n}"
    body["alerts"][0]["labels"] = {**body["alerts"][0]["labels"], "storm": str(n)}
    body["alerts"][0]["fingerprint"] = f"writers{n}"
    return body


class _Storm:
    """Incidents accepted as the webhook accepts them, at a clock the test moves."""

    def __init__(self, store: Store) -> None:
        self.now = START
        self.service = IncidentService(
            store,
            default_channel=f"#{CHANNEL_NAME}",
            metrics=Metrics(),
            clock=Clock.at(lambda: self.now),
        )

    async def accept(self, body: dict[str, Any]) -> int:
        raw = json.dumps(body).encode()
        _, incident_id = await self.service.accept(parse_webhook(raw), raw.decode())
        assert incident_id is not None
        return incident_id


def _item(incident_id: int) -> OutboxItem:
    """What a worker hands the writer: an edit of a posted digest reads nothing from it."""
    return OutboxItem(
        id=0,
        incident_id=incident_id,
        kind=OutboxKind.UPDATE_DIGEST,
        payload="{}",
        attempts=0,
        not_before=0.0,
    )


async def test_a_writer_re_edits_a_page_another_writer_changed_since(tmp_path: Path) -> None:
    store = await SQLiteStore.open(str(tmp_path / "queuebot.db"))
    async with SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    ) as sandbox:
        slack = SlackGateway(AsyncWebClient(token=BOT_TOKEN, base_url=sandbox.api_url), Metrics())

        def writer() -> DigestWriter:
            return DigestWriter(
                store, slack, Renderer(), Pacer(store=store), Recovery(store, slack), Timings()
            )

        first, second = writer(), writer()
        storm = _Storm(store)
        bodies = [_incident(n) for n in range(STORM_THRESHOLD + 2)]
        ids = [await storm.accept(body) for body in bodies]
        member = await store.get_incident(ids[-1])
        assert member is not None and member.digest_id is not None
        digest_id = member.digest_id

        def digest_text() -> str:
            (message,) = [
                m
                for m in sandbox.messages()
                if (m.metadata or {}).get("event_type") == "queuebot_digest"
            ]
            return json.dumps(message.blocks)

        # The first writer posts the digest as the storm opened (114 min, the reference's).
        await first.update(_item(ids[-1]), member, digest_id)
        assert "114 min" in digest_text() and "301 min" not in digest_text()
        # The other replica's writer shows the member's change.
        await storm.accept(with_values(bodies[-1], max_queue_time_mins=301))
        await second.update(_item(ids[-1]), member, digest_id)
        assert "301 min" in digest_text()
        # The change is undone (past Grafana's group interval, so it is news): the page is
        # what the first writer last wrote, but not what Slack shows now.
        storm.now += timedelta(minutes=6)
        await storm.accept(bodies[-1])
        await first.update(_item(ids[-1]), member, digest_id)
        assert "301 min" not in digest_text() and "114 min" in digest_text()
        stored = await store.get_digest(digest_id)
        assert stored is not None and stored.shown_version == stored.version
    await store.close()
