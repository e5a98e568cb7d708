"""Two replicas, one message: an alert storm sent to two `queuebot serve` processes on one
PostgreSQL, as two Grafana instances in HA send it, with one replica killed mid-storm.

Both replicas take every notification (the same body to each, at the same moment): by default
1,000 notifications over one minute, 300 incidents (each firing, then changed, its longest wait
going up). Slack is the local workspace enforcing its per-channel posting limit (about one
message a second, short bursts: 429 beyond). --kill-after seconds into the storm, replica A is
killed with SIGKILL; B carries on alone.

Printed: messages in the channel; incidents shown (by their own message or their line in the
storm digest) and lost (an incident whose last value no message shows); duplicated (a parent
posted twice, a reply repeated in a thread, a second digest); Slack's 429s; webhook latency
p50/p99 per replica; the time from the first notification until the channel shows every
incident's last value and nothing is owed; and the takeover: from the kill until the first
outbox entry the killed replica held was taken by the survivor.

    python bench/ha.py [--incidents 300] [--notifications 1000] [--seconds 60] [--kill-after 20]

Needs PostgreSQL (127.0.0.1:5432, trust authentication, database `test`, or
QUEUEBOT_TEST_POSTGRES); a fresh database is made and dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import aiohttp
import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile
from queuebot_lab.sandbox.slack import PostedMessage, SlackSandbox
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    outbox_pending,
    serve_process,
    stop_process,
    webhook_headers,
)
from testkit.payloads import encoded, reference, with_values
from testkit.postgres import fresh_database
from testkit.servers import free_port


def storm(incidents: int, notifications: int) -> list[tuple[int, bytes]]:
    """(incident, body) in sending order: each incident fires, then changes; later changes of
    one incident always after its earlier ones, with a larger value (minutes 100 + k)."""
    changes = Counter({n: 0 for n in range(incidents)})
    for k in range(notifications - incidents):
        changes[k % incidents] += 1
    order: list[tuple[int, int]] = [(n, 0) for n in range(incidents)]
    for step in range(1, max(changes.values(), default=0) + 1):
        order += [(n, step) for n in range(incidents) if changes[n] >= step]
    bodies = []
    for n, step in order:
        body = reference()
        body["groupKey"] = f"ha-{n}"
        if step:
            body = with_values(body, max_queue_time_mins=1000 * (step + 1) + n)
        bodies.append((n, encoded(body)))
    return bodies


def last_values(incidents: int, notifications: int) -> dict[int, str]:
    """Each incident's last longest wait, as messages show it."""
    shown: dict[int, str] = {n: "114 min" for n in range(incidents)}
    for n, body in storm(incidents, notifications):
        value = json.loads(body)["alerts"][0]["values"].get("max_queue_time_mins")
        shown[n] = f"{value:g} min" if isinstance(value, (int, float)) else shown[n]
    return shown


def text(message: PostedMessage) -> str:
    return json.dumps(message.blocks) + message.text


async def held_leases(url: str) -> dict[int, str]:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT id, lease_owner FROM outbox WHERE state = 'pending'"
            " AND lease_owner IS NOT NULL AND lease_until > extract(epoch FROM now())"
        )
        return {row["id"]: row["lease_owner"] for row in rows}
    finally:
        await conn.close()


async def first_moved(url: str, held: dict[int, str], owner: str) -> bool:
    """Whether any entry `owner` held has been delivered or leased by another worker."""
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT id, state, lease_owner FROM outbox WHERE id = ANY($1::bigint[])",
            [i for i, held_by in held.items() if held_by == owner],
        )
        return any(r["state"] != "pending" or r["lease_owner"] != owner for r in rows)
    finally:
        await conn.close()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--incidents", type=int, default=300)
    parser.add_argument("--notifications", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--kill-after", type=float, default=20.0)
    parser.add_argument("--deadline", type=float, default=600.0)
    args = parser.parse_args()
    bodies = storm(args.incidents, args.notifications)
    expected = last_values(args.incidents, args.notifications)
    work = Path(tempfile.mkdtemp(prefix="queuebot-ha-"))
    latencies: list[list[float]] = [[], []]
    async with (
        fresh_database() as url,
        SlackSandbox(
            bot_token=BOT_TOKEN,
            signing_secret=SIGNING_SECRET,
            channel_name=CHANNEL_NAME,
            enforce_rate_limits=True,
        ) as sandbox,
    ):
        ports = [free_port(), free_port()]
        replicas = [
            await serve_process(sandbox, url, port, log_to=work / f"replica-{i}.log")
            for i, port in enumerate(ports)
        ]
        held: dict[int, str] = {}
        killed_at: float | None = None

        moved: dict[str, float] = {}

        async def check_takeover() -> None:
            """For each worker that held outbox entries at the kill: when the first of them was
            delivered or leased by another. The survivor moves its own at once; the killed
            one's wait until their leases lapse and the survivor takes them."""
            if killed_at is None:
                return
            for owner in set(held.values()) - set(moved):
                if await first_moved(url, held, owner):
                    moved[owner] = time.monotonic() - killed_at

        began = time.monotonic()
        try:
            async with aiohttp.ClientSession() as http:

                async def post(replica: int, body: bytes) -> int:
                    start = time.monotonic()
                    async with http.post(
                        f"http://127.0.0.1:{ports[replica]}/webhooks/grafana",
                        data=body,
                        headers=webhook_headers(),
                    ) as answer:
                        latencies[replica].append(time.monotonic() - start)
                        return answer.status

                gap = args.seconds / len(bodies)
                for k, (_, body) in enumerate(bodies):
                    due = began + k * gap
                    if killed_at is None and time.monotonic() - began >= args.kill_after:
                        held = await held_leases(url)
                        replicas[0].send_signal(signal.SIGKILL)
                        await replicas[0].wait()
                        killed_at = time.monotonic()
                    await asyncio.sleep(max(0.0, due - time.monotonic()))
                    alive = [1] if killed_at is not None else [0, 1]
                    statuses = await asyncio.gather(*(post(r, body) for r in alive))
                    if set(statuses) != {202}:
                        print(f"notification {k}: answered {statuses}")
                    await check_takeover()
            sent_at = time.monotonic()

            def shown_everything() -> bool:
                everything = " ".join(text(m) for m in sandbox.messages())
                everything += " ".join(
                    text(r) for m in sandbox.messages() for r in sandbox.replies(None, m.ts)
                )
                return all(value in everything for value in expected.values())

            while time.monotonic() - began < args.deadline:
                await check_takeover()
                if shown_everything() and await outbox_pending(ports[1]) == 0:
                    break
                await asyncio.sleep(0.5)
            final = time.monotonic() - began
        finally:
            for replica in replicas:
                await stop_process(replica)
        messages = sandbox.messages()
        kinds = Counter((m.metadata or {}).get("event_type") for m in messages)
        parents = [
            m for m in messages if (m.metadata or {}).get("event_type") == "queuebot_incident"
        ]
        incidents_posted = Counter(
            (m.metadata or {}).get("event_payload", {}).get("incident") for m in parents
        )
        doubled = sum(c - 1 for c in incidents_posted.values() if c > 1)
        doubled += max(0, kinds.get("queuebot_digest", 0) - 1)
        for parent in parents:
            replies = [text(r) for r in sandbox.replies(None, parent.ts)]
            doubled += len(replies) - len(set(replies))
        everything = " ".join(text(m) for m in messages) + " ".join(
            text(r) for m in messages for r in sandbox.replies(None, m.ts)
        )
        lost = sum(value not in everything for value in expected.values())
        posts = sandbox.calls("chat.postMessage")
        refused = sum(call.status == 429 for call in posts)
    print(
        f"{len(bodies)} notifications over {args.seconds:g}s to each of 2 replicas"
        f" ({args.incidents} incidents), replica A killed with SIGKILL at {args.kill_after:g}s"
    )
    print(
        f"channel: {len(messages)} messages ({kinds.get('queuebot_incident', 0)} parents,"
        f" {kinds.get('queuebot_digest', 0)} digest), replies and pages"
        f" {sum(len(sandbox.replies(None, m.ts)) for m in messages)}"
    )
    print(f"duplicates: {doubled}   lost: {lost} of {args.incidents} incidents")
    print(f"Slack chat.postMessage calls: {len(posts)}, answered 429: {refused}")
    for name, seconds in zip("AB", latencies, strict=True):
        ms = [s * 1000 for s in seconds]
        print(
            f"webhook latency replica {name}: n={len(ms)} p50={statistics.median(ms):.1f} ms"
            f" p99={percentile(ms, 0.99):.1f} ms max={max(ms):.1f} ms"
        )
    print(f"all sent after {sent_at - began:.1f}s; final state after {final:.1f}s")
    counts = Counter(held.values())
    if not held:
        print("takeover after kill -9: not observed (no worker held an outbox entry at the kill)")
    for owner, seconds in sorted(moved.items(), key=lambda kv: kv[1]):
        print(
            f"entries held at the kill by worker {owner[:8]}: {counts[owner]},"
            f" the first delivered or taken over {seconds:.1f}s after the kill"
        )
    print(
        "takeover after kill -9 (the killed worker's first entry taken): "
        + (f"{max(moved.values()):.1f}s" if moved else "not observed")
    )
    return 0 if doubled == 0 and lost == 0 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
