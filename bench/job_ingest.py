"""GitHub job events in: how fast `POST /webhooks/github` answers at a sustained 10,000
deliveries a minute, one `queuebot serve` process, synced SQLite commits.

Deliveries are GitHub's own example bodies varied per job (queued, then in_progress, then
completed, each signed as GitHub signs them), sent at a steady rate from this process over a
pool of kept-alive connections, as GitHub's hookshot does from many workers. Prints the rate
reached and the latency of each answer (p50, p90, p99, max), and checks every delivery was
recorded (202) and the store holds every job.

Usage: .venv/bin/python bench/job_ingest.py [--per-minute 10000] [--minutes 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench.stats import percentile
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.github import HOOK_SECRET, hook_headers, job_delivery
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    serve_process,
    stop_process,
)
from testkit.servers import free_port

TYPES = [("self-hosted", f"linux.{size}xlarge") for size in (2, 4, 8, 12, 16, 24)]


def deliveries(count: int) -> list[bytes]:
    """`count` deliveries: jobs queued, then taken, then completed, interleaved."""
    bodies = []
    now = datetime.now(UTC)
    jobs = count // 3 + 1
    for n in range(jobs):
        created = now - timedelta(minutes=30) + timedelta(seconds=n % 1800)
        labels = TYPES[n % len(TYPES)]
        started = created + timedelta(seconds=30)
        done = started + timedelta(minutes=5)
        for action in ("queued", "in_progress", "completed"):
            body = job_delivery(
                action, 10_000_000 + n, created, started=started, completed=done, labels=labels
            )
            bodies.append(json.dumps(body).encode())
    return bodies[:count]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-minute", type=int, default=10_000)
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    total = int(args.per_minute * args.minutes)
    bodies = deliveries(total)
    gap = 60.0 / args.per_minute
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    with tempfile.TemporaryDirectory(prefix="queuebot-jobs-") as scratch:
        database = Path(scratch) / "queuebot.db"
        async with SlackSandbox(
            bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
        ) as sandbox:
            port = free_port()
            bot = await serve_process(sandbox, database, port, GITHUB_WEBHOOK_SECRET=HOOK_SECRET)
            url = f"http://127.0.0.1:{port}/webhooks/github"
            connector = aiohttp.TCPConnector(limit=args.connections)
            try:
                async with aiohttp.ClientSession(connector=connector) as http:

                    async def send(body: bytes, at: float) -> None:
                        await asyncio.sleep(max(0.0, at - time.monotonic()))
                        sent = time.monotonic()
                        async with http.post(url, data=body, headers=hook_headers(body)) as r:
                            await r.read()
                            statuses[r.status] = statuses.get(r.status, 0) + 1
                        latencies.append(time.monotonic() - sent)

                    began = time.monotonic() + 0.5
                    await asyncio.gather(
                        *(send(body, began + n * gap) for n, body in enumerate(bodies))
                    )
                    took = time.monotonic() - began
            finally:
                await stop_process(bot)
        with sqlite3.connect(database) as db:
            jobs = int(db.execute("SELECT count(*) FROM jobs").fetchone()[0])
    ms = [v * 1000 for v in latencies]
    print(
        f"job events: {total} deliveries at {args.per_minute}/min for {args.minutes:g} min"
        f" ({len(bodies) // 3 + 1} jobs, {len(TYPES)} runner types), one process, synced commits"
    )
    print(f"reached {total / took * 60:.0f} deliveries/min; answers {statuses}")
    print(
        f"webhook latency ms: p50 {statistics.median(ms):.1f}, p90 {percentile(ms, 0.9):.1f},"
        f" p99 {percentile(ms, 0.99):.1f}, max {max(ms):.1f}"
    )
    print(
        f"jobs in the store: {jobs}; target p99 < 20 ms:"
        f" {'met' if percentile(ms, 0.99) < 20 else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
