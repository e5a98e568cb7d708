"""Whether composing capacity reports holds webhooks up: GitHub's and Grafana's webhooks timed
while `/queue-status report 14` is composed over a million jobs, on SQLite and on PostgreSQL.

The store is filled with `--jobs` finished jobs over the last `--days` days on `--types` runner
types (through the store's own merge of deliveries), then `queuebot serve` runs as its own
process against the local Slack-compatible API. A probe, in a process of its own, posts a
signed GitHub delivery (a new job) and a Grafana notification in turn, one every 20 ms over
kept-alive connections, and times each answer: first at rest, then while `--reports` people ask
for `/queue-status report 14` at once (the bot composes one at a time and answers the others
with it). Printed: webhook p50/p99/max at rest and during the reports, by webhook, and how long
the reports took to arrive. Goal: p99 under 50 ms during the reports.

Usage: .venv/bin/python bench/report_stall.py [--backend sqlite|postgresql] [--jobs 1000000]
PostgreSQL: the server at QUEUEBOT_TEST_POSTGRES (default postgresql://postgres@127.0.0.1:5432/
test) makes a database of its own for the run and drops it afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import asyncpg

from bench.stats import percentile
from bot.domain.jobs import JobAction, JobEvent
from bot.store import open_store
from bot.store.shared_sql import merged_job
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.github import HOOK_SECRET
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    WEBHOOK_TOKEN,
    drained,
    serve_process,
    stop_process,
)
from testkit.payloads import reference
from testkit.postgres import with_database
from testkit.servers import free_port

LOT = 5000
JOB_COLUMNS = [
    "id", "run_id", "run_attempt", "repository", "workflow", "job", "labels", "runner_type",
    "html_url", "head_branch", "status", "created_at", "started_at", "completed_at",
    "left_queue_at", "conclusion", "runner_name", "updated_at",
]  # fmt: skip

PROBE = """
import hashlib, hmac, http.client, json, sys, time
port, seconds, token, secret, template = (
    int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4].encode(), sys.argv[5]
)
alert = json.load(open(template))
connection = http.client.HTTPConnection("127.0.0.1", port)
out, end, n = [], time.time() + seconds, 0
while time.time() < end:
    n += 1
    if n % 2:
        job = {
            "action": "queued",
            "workflow_job": {
                "id": 90_000_000_000 + n, "run_id": 80_000_000_000 + n, "run_attempt": 1,
                "name": "probe", "workflow_name": "probe", "status": "queued",
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "labels": ["self-hosted", "linux.probe"], "head_branch": "main",
            },
            "repository": {"full_name": "pytorch/pytorch"},
        }
        body = json.dumps(job).encode()
        signature = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        headers = {
            "Content-Type": "application/json", "X-GitHub-Event": "workflow_job",
            "X-GitHub-Delivery": f"probe-{n}", "X-Hub-Signature-256": signature,
        }
        path, kind = "/webhooks/github", "github"
    else:
        body = json.dumps(alert).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
        path, kind = "/webhooks/grafana", "grafana"
    began = time.time()
    connection.request("POST", path, body=body, headers=headers)
    answer = connection.getresponse()
    answer.read()
    out.append((began, time.time() - began, kind, answer.status))
    time.sleep(0.02)
json.dump(out, sys.stdout)
"""


def _job(n: int, until: float, days: int, types: int) -> JobEvent:
    created = until - (n * 7919 % (days * 86400))
    started = created + 30 + n % 900
    return JobEvent(
        job_id=10_000_000_000 + n,
        run_id=20_000_000_000 + n // 3,
        run_attempt=1,
        repository="pytorch/pytorch",
        workflow=("pull", "trunk", "periodic")[n % 3],
        job=f"test ({n % 7})",
        labels=("self-hosted", f"linux.bench-{n % types}"),
        runner_type=f"linux.bench-{n % types}",
        html_url=None,
        head_branch="main",
        action=JobAction.COMPLETED,
        created_at=datetime.fromtimestamp(created, UTC),
        started_at=datetime.fromtimestamp(started, UTC),
        completed_at=datetime.fromtimestamp(started + 600 + n % 2400, UTC),
        conclusion="success",
        runner_name=f"runner-{n % 5000}",
    )


async def fill(database: str, jobs: int, days: int, types: int) -> float:
    """Store `jobs` finished jobs; the seconds it took."""
    if database.startswith("postgresql://"):
        return await _copy(database, jobs, days, types)
    store = await open_store(database)
    began, until = time.monotonic(), time.time()
    try:
        for start in range(0, jobs, LOT):
            lot = [
                (_job(n, until, days, types), f"fill-{n}")
                for n in range(start, min(start + LOT, jobs))
            ]
            await store.record_jobs(lot, until + 86400)
            if start // LOT % 40 == 0:
                print(f"  {start + len(lot):,} jobs stored", flush=True)
    finally:
        await store.close()
    return time.monotonic() - began


async def _copy(database: str, jobs: int, days: int, types: int) -> float:
    """PostgreSQL: the rows the store's merge makes of each delivery (`merged_job`), copied in
    at once (a million deliveries merged one by one take ten minutes), then a checkpoint and
    fresh statistics, as a database that has been running a while has them."""
    began, until = time.monotonic(), time.time()
    store = await open_store(database)  # made and migrated as the bot would
    await store.close()
    conn = await asyncpg.connect(database)
    try:
        for start in range(0, jobs, LOT * 10):
            rows = [
                merged_job(_job(n, until, days, types), None, until)
                for n in range(start, min(start + LOT * 10, jobs))
            ]
            await conn.copy_records_to_table("jobs", records=rows, columns=JOB_COLUMNS)
        await conn.execute("CHECKPOINT")
        await conn.execute("ANALYZE jobs")
    finally:
        await conn.close()
    return time.monotonic() - began


def probe(port: int, seconds: float, template: Path) -> list[tuple[float, float, str, int]]:
    done = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", PROBE, str(port), str(seconds), WEBHOOK_TOKEN, HOOK_SECRET,
         str(template)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [tuple(row) for row in json.loads(done.stdout)]  # type: ignore[misc]


def summary(label: str, samples: list[tuple[float, float, str, int]]) -> None:
    for kind in ("github", "grafana"):
        ms = [latency * 1000 for _, latency, k, _ in samples if k == kind]
        refused = sum(1 for _, _, k, status in samples if k == kind and status >= 400)
        if ms:
            print(
                f"  {label:<16} {kind:<8} n={len(ms):>4}  p50 {percentile(ms, 0.5):6.1f} ms"
                f"  p99 {percentile(ms, 0.99):7.1f} ms  max {max(ms):7.1f} ms  refused {refused}"
            )


async def run(args: argparse.Namespace, database: str, scratch: Path) -> None:
    print(f"{args.backend}: storing {args.jobs:,} jobs over {args.days} days…", flush=True)
    took = await fill(database, args.jobs, args.days, args.types)
    print(f"  stored in {took:.0f} s")
    template = scratch / "alert.json"
    template.write_text(json.dumps(reference()))
    async with SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    ) as sandbox:
        port = free_port()
        sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"
        bot = await serve_process(
            sandbox,
            database,
            port,
            log_to=scratch / "queuebot.log",
            GITHUB_WEBHOOK_SECRET=HOOK_SECRET,
            **({"PYTHONASYNCIODEBUG": "1"} if os.environ.get("BENCH_DEBUG") else {}),
        )
        try:
            # The probe's alert opens its incident (posted, diagnosed) before anything is timed.
            await asyncio.to_thread(probe, port, 3.0, template)
            await drained(port)
            rest = await asyncio.to_thread(probe, port, args.seconds, template)
            people = [
                sandbox.workspace.add_user(f"U0REPORT{n:03d}", f"lead{n}").id
                for n in range(args.reports)
            ]
            probing = asyncio.create_task(
                asyncio.to_thread(probe, port, args.seconds * 6, template)
            )
            await asyncio.sleep(1.0)
            asked = time.time()
            before = len(sandbox.response_posts)
            for person in people:
                result = await sandbox.slash_command("/queue-status", "report 14", user_id=person)
                if result.status != 200:
                    raise SystemExit(f"/queue-status report 14 was not acked: {result.status}")
            await sandbox.wait_for(
                lambda: len(sandbox.response_posts) >= before + len(people), timeout=600
            )
            answered = time.time() - asked
            during = await probing
            window = [s for s in during if asked - 0.5 <= s[0] <= asked + answered]
        finally:
            await stop_process(bot)
    print(f"  {args.reports} reports of 14 days answered in {answered:.1f} s")
    summary("at rest", rest)
    summary("during reports", window)
    if os.environ.get("BENCH_DEBUG"):
        log = (scratch / "queuebot.log").read_text().splitlines()
        print("\n".join(line for line in log if "notification accepted" not in line)[-8000:])


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--types", type=int, default=20)
    parser.add_argument("--reports", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=5.0, help="probe time at rest")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="queuebot-report-stall-") as scratch:
        if args.backend == "sqlite":
            await run(args, str(Path(scratch) / "queuebot.db"), Path(scratch))
            return 0
        base = os.environ.get("QUEUEBOT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
        name = f"queuebot_bench_{secrets.token_hex(4)}"
        admin = await asyncpg.connect(base)
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
            try:
                await run(args, with_database(base, name), Path(scratch))
            finally:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
