"""`GET /metrics` on a big fleet: how fast a scrape answers when it reads the fleet's numbers
from the store (200 runner types, 1,000,000 jobs), on SQLite and PostgreSQL, and how the
GitHub webhook answers while /metrics is scraped every 5 s.

Fills a fresh store with a week of GitHub's jobs through the store's own merge
(`Store.record_jobs`, lots of 5,000, which also adds up the fleet's totals as deliveries do):
runner types of uneven sizes, most jobs completed, some running, some cancelled while queued,
and a few thousand waiting now at different ages, a few types long enough and deep enough to
cross the queueing alert (more than 5 jobs, the longest an hour or more). Then runs
`queuebot serve` on it, as its own process with the GitHub webhook on, and:

  - scrapes /metrics back to back (after a few warm-ups), with the default
    `jobs.metrics_runner_types` (100: 100 types and `other` exported) and with 200 (every
    type exported, the headline): p50, p90, p99 and max, and the body's size and series;
  - sends signed `workflow_job` deliveries at a steady rate, once alone and once while another
    task scrapes /metrics every 5 s: the webhook's answer p50, p99 and max, and the scrapes'.

The load comes from this process, which shares the machine with the bot (and PostgreSQL).
After the fill its writes are flushed to disk, and a PostgreSQL store is vacuumed and analysed,
as autovacuum leaves a database that has run a while; a SQLite file is used as the bot leaves
it (it never runs ANALYZE).

Usage: .venv/bin/python bench/metrics_scrape.py [--jobs 1000000] [--types 200] [--scrapes 200]
    [--backend sqlite|postgresql|both] [--queued 3000] [--per-minute 2000]
    [--webhook-seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import asyncpg
from prometheus_client.parser import text_string_to_metric_families

from bench.stats import percentile
from bot.domain.jobs import JobAction, JobEvent
from bot.store import open_store
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.github import HOOK_SECRET, hook_headers, job_delivery
from testkit.harness import BOT_TOKEN, CHANNEL_NAME, SIGNING_SECRET, serve_process, stop_process
from testkit.postgres import fresh_database
from testkit.servers import free_port

DAY = 86400.0
WEEK = 7 * DAY
#: Deliveries per `record_jobs` call while filling, one lot at a time (on PostgreSQL a lot
#: holds an advisory lock per job until it commits: two lots of 5,000 at once overflow the
#: server's default lock table, 64 x 100 connections).
LOT = 5000
SIZES = ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")
REPOSITORIES = (("pytorch/pytorch", 80), ("pytorch/vision", 8), ("pytorch/audio", 5),
                ("pytorch/executorch", 7))  # fmt: skip
WORKFLOWS = ("pull", "trunk", "periodic", "inductor", "nightly")
#: A type's queue in the alert's terms: more than 5 jobs, the longest for an hour or more.
ALERT_JOBS, ALERT_WAIT = 5, 3600.0
#: One runner type in this many has a backlog now (its jobs waiting up to 3 hours).
BACKLOG_EVERY = 20
WARM_UPS = 5
SCRAPE_EVERY = 5.0
GOAL_MS = 100.0
QUEUED = "queuebot_queued_jobs"
LONGEST = "queuebot_queue_longest_wait_seconds"


def runner_types(count: int) -> list[str]:
    return [f"linux.t{n:03d}.{SIZES[n % len(SIZES)]}" for n in range(count)]


@dataclass
class Fleet:
    """The runner types, how busy each is (a long tail: a few types take most jobs), and which
    have a backlog now."""

    types: list[str]
    weights: list[float] = field(init=False)
    backlogged: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.weights = [1.0 / (n + 1) ** 0.9 for n in range(len(self.types))]
        self.backlogged = self.types[BACKLOG_EVERY // 2 :: BACKLOG_EVERY]

    def pick(self, rng: random.Random) -> str:
        return rng.choices(self.types, self.weights)[0]


def _at(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def job_event(
    n: int,
    runner_type: str,
    repository: str,
    created: float,
    wait: float | None,
    run: float,
    conclusion: str,
    now: float,
) -> JobEvent:
    """Job `n` as its latest delivery leaves it at `now`: created at `created`, leaving the queue
    `wait` seconds later (None: not yet) for a runner, or cancelled then (`conclusion`
    cancelled), and running `run` seconds."""
    left = None if wait is None else created + wait
    started = completed = None
    if left is None or left > now:
        action = JobAction.QUEUED
    elif conclusion == "cancelled":
        action, completed = JobAction.COMPLETED, left
    else:
        started = left
        action = JobAction.IN_PROGRESS if started + run > now else JobAction.COMPLETED
        completed = started + run if action is JobAction.COMPLETED else None
    return JobEvent(
        job_id=70_000_000_000 + n,
        run_id=20_000_000_000 + n // 4,
        run_attempt=1,
        repository=repository,
        workflow=WORKFLOWS[n % len(WORKFLOWS)],
        job=f"test ({n % 9}, {n % 5}, {runner_type})",
        labels=("self-hosted", runner_type),
        runner_type=runner_type,
        html_url=f"https://github.com/{repository}/actions/runs/{20_000_000_000 + n // 4}/job/{n}",
        head_branch="main" if n % 3 else f"gh/someone/{n % 1000}/head",
        action=action,
        created_at=_at(created),  # type: ignore[arg-type]
        started_at=_at(started),
        completed_at=_at(completed),
        conclusion=conclusion if action is JobAction.COMPLETED else None,
        runner_name=f"i-{n % 50_000:05x}" if started is not None else None,
        counted=True,
    )


def history(jobs: int, fleet: Fleet, queued: int, now: float) -> Iterator[JobEvent]:
    """`jobs` jobs created over the week before `now`, in the order they were created, then
    `queued` more waiting now: the backlogged types' for up to 3 hours, the rest's for up to
    45 minutes (some not yet the alert's 5 minutes)."""
    rng = random.Random(20240611)
    names = [name for name, _ in REPOSITORIES]
    shares = [share for _, share in REPOSITORIES]
    past = max(jobs - queued, 0)
    for n in range(past):
        # Every type has jobs from the first hours on; after that, by how busy each is.
        runner_type = fleet.types[n] if n < len(fleet.types) else fleet.pick(rng)
        created = now - WEEK + (n + rng.random()) * (WEEK / past)
        draw = rng.random()
        wait = (
            rng.uniform(2, 60)
            if draw < 0.80
            else rng.uniform(60, 600)
            if draw < 0.95
            else rng.uniform(600, 3600)
            if draw < 0.995
            else rng.uniform(3600, 3 * 3600)
        )
        draw = rng.random()
        conclusion = "success" if draw < 0.90 else "failure" if draw < 0.98 else "cancelled"
        repository = rng.choices(names, shares)[0]
        yield job_event(n, runner_type, repository, created, wait, rng.uniform(120, 5400),
                        conclusion, now)  # fmt: skip
    for k in range(queued):
        n = past + k
        if k % 5 < 2:  # two in five: the backlogs
            runner_type = fleet.backlogged[(k // 5 * 2 + k % 5) % len(fleet.backlogged)]
            age = rng.uniform(0, 3 * 3600)
        else:
            runner_type = fleet.pick(rng)
            age = rng.uniform(0, 45 * 60)
        yield job_event(n, runner_type, "pytorch/pytorch", now - age, None, 0.0, "success", now)


async def fill(database: str, args: argparse.Namespace, fleet: Fleet) -> tuple[float, int]:
    """Store the fleet's history through the store's merge; seconds taken, and jobs stored."""
    store = await open_store(database)
    began, now = time.monotonic(), time.time()
    stored = 0
    try:
        events = history(args.jobs, fleet, min(args.queued, args.jobs // 10), now)
        lot: list[tuple[JobEvent, str]] = []
        for event in events:
            lot.append((event, f"fill-{event.job_id}-{event.action.value}"))
            if len(lot) == LOT:
                stored += await store.record_jobs(lot, now + DAY)
                lot = []
                if stored // LOT % 40 == 0:
                    took = time.monotonic() - began
                    print(f"  {stored:,} jobs stored ({took:.0f} s)", flush=True)
        if lot:
            stored += await store.record_jobs(lot, now + DAY)
    finally:
        await store.close()
    took = time.monotonic() - began
    # The fill's writes reach the disk before anything is timed, and PostgreSQL's tables have
    # the statistics and visibility maps autovacuum gives a database that has run a while.
    if database.startswith("postgresql://"):
        conn = await asyncpg.connect(database)
        try:
            await conn.execute("VACUUM (ANALYZE)")
            await conn.execute("CHECKPOINT")
        finally:
            await conn.close()
    else:
        await asyncio.to_thread(os.sync)
    return took, stored


@dataclass
class Scrape:
    latencies: list[float]
    body: str


async def scrape_once(http: aiohttp.ClientSession, url: str) -> tuple[float, str]:
    sent = time.monotonic()
    async with http.get(f"{url}/metrics") as answer:
        body = await answer.text()
        if answer.status != 200:
            raise SystemExit(f"/metrics answered {answer.status}")
    return time.monotonic() - sent, body


async def scrapes(url: str, count: int) -> Scrape:
    """`count` scrapes back to back, after a few warm-ups."""
    latencies: list[float] = []
    body = ""
    async with aiohttp.ClientSession() as http:
        for _ in range(WARM_UPS):
            await scrape_once(http, url)
        for _ in range(count):
            took, body = await scrape_once(http, url)
            latencies.append(took)
    return Scrape(latencies, body)


def exported(body: str) -> tuple[dict[str, float], dict[str, float], int]:
    """The body's queued jobs and longest wait per runner type, and its number of samples."""
    queued: dict[str, float] = {}
    longest: dict[str, float] = {}
    samples = 0
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            samples += 1
            if sample.name == QUEUED:
                queued[sample.labels["runner_type"]] = sample.value
            elif sample.name == LONGEST:
                longest[sample.labels["runner_type"]] = sample.value
    return queued, longest, samples


def ms_line(name: str, seconds: list[float]) -> str:
    ms = [v * 1000 for v in seconds]
    return (
        f"  {name:<34} n={len(ms):<5} p50 {statistics.median(ms):7.1f}"
        f"  p90 {percentile(ms, 0.9):7.1f}  p99 {percentile(ms, 0.99):7.1f}  max {max(ms):7.1f} ms"
    )


def report_scrape(label: str, scrape: Scrape, expected: int) -> None:
    queued, longest, samples = exported(scrape.body)
    crossing = [
        name
        for name, jobs in queued.items()
        if jobs > ALERT_JOBS and longest.get(name, 0.0) >= ALERT_WAIT
    ]
    waiting = sum(queued.values())
    check = "as expected" if len(queued) == expected else f"EXPECTED {expected}"
    print(ms_line(f"/metrics, {label}", scrape.latencies))
    print(
        f"    body {len(scrape.body.encode()) / 1024:.0f} KiB, {samples} samples;"
        f" {len(queued)} {QUEUED} series ({check},"
        f" {'with' if 'other' in queued else 'no'} `other`);"
        f" {waiting:.0f} jobs queued past 5 min; {len(crossing)} types cross the alert"
    )


def webhook_bodies(fleet: Fleet, count: int, first_id: int) -> list[tuple[bytes, dict[str, str]]]:
    """`count` signed deliveries: jobs queued, then taken, then completed, interleaved."""
    rng = random.Random(first_id)
    now = datetime.now(UTC)
    out: list[tuple[bytes, dict[str, str]]] = []
    for n in range(count // 3 + 1):
        labels = ("self-hosted", fleet.pick(rng))
        created = now - timedelta(seconds=rng.uniform(10, 600))
        started = created + timedelta(seconds=rng.uniform(2, 60))
        done = started + timedelta(minutes=5)
        for action in ("queued", "in_progress", "completed"):
            body = json.dumps(
                job_delivery(
                    action, first_id + n, created, started=started, completed=done, labels=labels
                )
            ).encode()
            out.append((body, hook_headers(body)))
    return out[:count]


@dataclass
class Phase:
    answers: list[float]
    statuses: dict[int, int]
    scrapes: list[float]
    rate: float


async def webhook_phase(
    url: str, deliveries: list[tuple[bytes, dict[str, str]]], seconds: float, scrape: bool
) -> Phase:
    """The deliveries at a steady rate over `seconds`; with `scrape`, /metrics every 5 s too."""
    gap = seconds / len(deliveries)
    answers: list[float] = []
    statuses: dict[int, int] = {}
    scraped: list[float] = []
    began = time.monotonic() + 0.5

    async with (
        aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=16)) as http,
        aiohttp.ClientSession() as scraper,
    ):

        async def send(body: bytes, headers: dict[str, str], at: float) -> None:
            await asyncio.sleep(max(0.0, at - time.monotonic()))
            sent = time.monotonic()
            async with http.post(f"{url}/webhooks/github", data=body, headers=headers) as r:
                await r.read()
                statuses[r.status] = statuses.get(r.status, 0) + 1
            answers.append(time.monotonic() - sent)

        async def scrape_every() -> None:
            at = began
            while at < began + seconds:
                await asyncio.sleep(max(0.0, at - time.monotonic()))
                took, _ = await scrape_once(scraper, url)
                scraped.append(took)
                at += SCRAPE_EVERY

        work = [send(b, h, began + n * gap) for n, (b, h) in enumerate(deliveries)]
        await asyncio.gather(*work, *([scrape_every()] if scrape else []))
    took = time.monotonic() - began
    return Phase(answers, statuses, scraped, len(deliveries) / took * 60)


def report_phase(label: str, phase: Phase) -> None:
    print(ms_line(f"webhook, {label}", phase.answers))
    print(f"    {phase.rate:.0f} deliveries/min reached; answers {phase.statuses}")
    if phase.scrapes:
        print(ms_line("/metrics every 5 s meanwhile", phase.scrapes))


@dataclass
class Result:
    backend: str
    load_seconds: float
    default: Scrape
    every: Scrape
    alone: Phase
    scraped: Phase


async def serve(
    sandbox: SlackSandbox, database: str, scratch: Path, config: Path | None
) -> tuple[asyncio.subprocess.Process, str]:
    port = free_port()
    settings = {"GITHUB_WEBHOOK_SECRET": HOOK_SECRET}
    if config is not None:
        settings["QUEUEBOT_CONFIG"] = str(config)
    bot = await serve_process(sandbox, database, port, log_to=scratch / "queuebot.log", **settings)
    return bot, f"http://127.0.0.1:{port}"


async def bench(
    backend: str, database: str, scratch: Path, args: argparse.Namespace, fleet: Fleet
) -> Result:
    print(
        f"\n== {backend}: filling the store with {args.jobs:,} jobs of {args.types} types",
        flush=True,
    )
    load_seconds, stored = await fill(database, args, fleet)
    print(f"  loaded {stored:,} jobs in {load_seconds:.1f} s ({stored / load_seconds:,.0f} jobs/s)")
    every_type = scratch / "queuebot.yml"
    every_type.write_text(f"jobs:\n  metrics_runner_types: {args.types}\n")
    per_minute = args.per_minute
    count = int(per_minute * args.webhook_seconds / 60)
    async with SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    ) as sandbox:
        bot, url = await serve(sandbox, database, scratch, None)
        try:
            default = await scrapes(url, args.scrapes)
        finally:
            await stop_process(bot)
        report_scrape("default (100 types)", default, min(args.types, 100) + (args.types > 100))
        bot, url = await serve(sandbox, database, scratch, every_type)
        try:
            every = await scrapes(url, args.scrapes)
            report_scrape(f"all {args.types} types", every, args.types)
            print(
                f"  webhook: {count} deliveries at {per_minute}/min for {args.webhook_seconds:g} s",
                flush=True,
            )
            alone = await webhook_phase(
                url, webhook_bodies(fleet, count, 90_000_000_000), args.webhook_seconds, False
            )
            report_phase("no scraping", alone)
            scraped = await webhook_phase(
                url, webhook_bodies(fleet, count, 91_000_000_000), args.webhook_seconds, True
            )
            report_phase("/metrics every 5 s", scraped)
        finally:
            await stop_process(bot)
    return Result(backend, load_seconds, default, every, alone, scraped)


def p(seconds: list[float], share: float) -> float:
    return percentile([v * 1000 for v in seconds], share)


def summary(results: list[Result], args: argparse.Namespace) -> None:
    print(
        f"\nsummary: {args.jobs:,} jobs, {args.types} runner types, {args.scrapes} scrapes;"
        f" webhook {args.per_minute}/min for {args.webhook_seconds:g} s (ms)"
    )
    head = (
        f"{'backend':<11}{'load s':>8}{'m p50':>8}{'m p99':>8}{'m100 p99':>10}"
        f"{'hook p99':>10}{'+scrape':>9}{'scr max':>9}  goal /metrics p99 < 100 ms"
    )
    print(head)
    for r in results:
        headline = p(r.every.latencies, 0.99)
        print(
            f"{r.backend:<11}{r.load_seconds:>8.0f}{p(r.every.latencies, 0.5):>8.1f}"
            f"{headline:>8.1f}{p(r.default.latencies, 0.99):>10.1f}"
            f"{p(r.alone.answers, 0.99):>10.1f}{p(r.scraped.answers, 0.99):>9.1f}"
            f"{max(r.scraped.scrapes) * 1000:>9.1f}  {'met' if headline < GOAL_MS else 'NOT met'}"
        )
    print(
        "  m: /metrics with every type exported; m100: the default 100; hook: the webhook alone;"
        " +scrape: while /metrics is scraped every 5 s; scr max: the slowest of those scrapes"
    )


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--types", type=int, default=200)
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--queued", type=int, default=3000, help="jobs waiting now, at most")
    parser.add_argument("--per-minute", type=int, default=2000)
    parser.add_argument("--webhook-seconds", type=float, default=60.0)
    args = parser.parse_args()
    fleet = Fleet(runner_types(args.types))
    results: list[Result] = []
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    for backend in backends:
        with tempfile.TemporaryDirectory(prefix="queuebot-metrics-") as folder:
            scratch = Path(folder)
            if backend == "sqlite":
                results.append(
                    await bench(backend, str(scratch / "queuebot.db"), scratch, args, fleet)
                )
            else:
                async with fresh_database() as url:
                    results.append(await bench(backend, url, scratch, args, fleet))
    summary(results, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
