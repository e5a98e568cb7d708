"""What queuebot needs to run, for the deployment guide's sizing table: the bot's memory, the
database's size and the CPU GitHub's job events take, with a million jobs stored, on SQLite and
on PostgreSQL; and the container image's size.

For each backend the store is filled with `--jobs` jobs (a week of a fleet of `--types` runner
types, through the store's own merge: `bench/footprint_parts.py`), then `queuebot serve` runs as
its own process (`python -m bot serve`) against the local Slack workspace with GitHub's job
events on, and this prints:

  1. its resident memory, /proc/PID/status VmRSS (now) and VmHWM (the most it has held): idle
     `--settle` seconds after it answers /healthz; after `--scrapes` /metrics scrapes and
     `--asks` /queue-status summaries and as many runner types in detail (signed slash
     commands, each answer waited for at its response_url); and after `/queue-status report N`
     (`--report-days`, 0 to skip), composed over the jobs in a worker process the bot spawns,
     whose own memory is shown too;
  2. the database's size (the SQLite file and its -wal; PostgreSQL's `pg_database_size`), empty
     and filled, per million jobs, and its biggest tables (with indexes). The fill remembers one
     delivery id per job; a live store remembers every delivery's id for 3 days;
  3. unless `--skip-ingest`: CPU seconds the bot spends (/proc/PID/stat utime + stime, all its
     threads) per minute while taking `--per-minute` signed `workflow_job` deliveries over HTTP
     for `--ingest-seconds` (queued, in_progress, completed per job), with the answers' p50/p99;
     its CPU while idle too.
  4. the image `--image` (default `queuebot`, as the Containerfile's header builds it) in
     podman's storage, by `podman image inspect`; or that no image is built.

The load comes from this process, on the same machine as the bot and PostgreSQL (the load
average is printed: the numbers are only as quiet as the machine). PostgreSQL: a database of
the run's own on the server at QUEUEBOT_TEST_POSTGRES (default postgresql://postgres@127.0.0.1:
5432/test), dropped afterwards.

Usage: .venv/bin/python bench/footprint.py [--jobs 1000000] [--backend sqlite|postgresql|both]
    [--skip-ingest] [--per-minute 10000] [--ingest-seconds 60] [--report-days 7] [--types 200]
    [--settle 10] [--scrapes 20] [--asks 5] [--image queuebot] [--build-image]
On 2 cores, a million jobs: about 11 minutes, 3 on SQLite and 8 on PostgreSQL (6 of them its
fill); 100,000 jobs: about 4 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench.footprint_parts import (
    StoreSize,
    cpu_seconds,
    descendants,
    fill,
    image_size,
    memory,
    migrate,
    size_of,
)
from bench.metrics_scrape import Fleet, runner_types, webhook_bodies, webhook_phase
from bench.stats import percentile
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.github import HOOK_SECRET
from testkit.harness import BOT_TOKEN, CHANNEL_NAME, SIGNING_SECRET, serve_process, stop_process
from testkit.postgres import fresh_database
from testkit.servers import free_port

MIB = 1024  # /proc speaks KiB
MB = 1e6
MILLION = 1_000_000


@dataclass
class Footprint:
    """What one backend's run measured."""

    backend: str
    jobs: int
    fill_seconds: float
    empty: StoreSize
    filled: StoreSize
    start_seconds: float = 0.0
    start_cpu: float = 0.0
    idle_cpu_per_minute: float = 0.0
    #: VmRSS and VmHWM (KiB) of the bot's process, by when they were read.
    memory: dict[str, tuple[int, int]] = field(default_factory=dict)
    report_seconds: float | None = None
    #: The processes the bot started (the report's worker): what each runs, VmRSS, VmHWM.
    workers: list[tuple[str, int, int]] = field(default_factory=list)
    ingest_cpu_per_minute: float | None = None
    #: Deliveries a minute reached, p50 and p99 of the answers (ms), answers by status.
    ingest: tuple[float, float, float, dict[int, int]] | None = None


async def ask(sandbox: SlackSandbox, text: str, user: str, timeout: float) -> float:  # noqa: ASYNC109
    """`/queue-status TEXT` from `user`; the seconds until its answer reached the response_url."""
    before = len(sandbox.response_posts)
    began = time.monotonic()
    result = await sandbox.slash_command("/queue-status", text, user_id=user)
    if result.status != 200:
        raise SystemExit(f"/queue-status {text} was answered {result.status}")
    await sandbox.wait_for(lambda: len(sandbox.response_posts) > before, timeout=timeout)
    took = time.monotonic() - began
    if (answered := sandbox.response_posts[before]).status != 200:
        raise SystemExit(f"/queue-status {text}: the answer was refused: {answered.outcome}")
    return took


async def scrape(url: str, times: int) -> str:
    """/metrics scraped `times` times; a line saying what was read."""
    async with aiohttp.ClientSession() as http:
        body = b""
        for _ in range(times):
            async with http.get(f"{url}/metrics") as answer:
                body = await answer.read()
                if answer.status != 200:
                    raise SystemExit(f"/metrics answered {answer.status}")
    return f"{times} /metrics scrapes ({len(body) / 1024:.0f} KiB each)"


async def asks(sandbox: SlackSandbox, args: argparse.Namespace) -> str:
    """/queue-status's summary and a runner type in detail, each asked by `--asks` people (one
    person may ask only a few times a minute); a line saying what was read."""
    detail = runner_types(args.types)[0].rsplit(".", 1)[0]
    took = []
    for n in range(args.asks):
        for text in ("", detail):
            user = sandbox.workspace.add_user(f"U0SIZE{n:03d}{len(text)}", f"sizer{n}").id
            took.append(await ask(sandbox, text, user, 60.0))
    return (
        f"{len(took)} /queue-status answers (summary and `{detail}`;"
        f" slowest {max(took, default=0):.1f} s)"
    )


async def measure(
    backend: str, database: str, scratch: Path, args: argparse.Namespace
) -> Footprint:
    print(f"\n== {backend}", flush=True)
    await migrate(database)
    empty = await size_of(database)
    print(f"  filling the store with {args.jobs:,} jobs of {args.types} runner types", flush=True)
    fill_seconds, stored = await fill(database, args.jobs, args.types, args.queued)
    print(f"  stored {stored:,} jobs in {fill_seconds:.0f} s ({stored / fill_seconds:,.0f}/s)")
    result = Footprint(backend, stored, fill_seconds, empty, await size_of(database))
    async with SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    ) as sandbox:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        sandbox.request_url = f"{url}/slack/events"
        began = time.monotonic()
        bot = await serve_process(
            sandbox, database, port, log_to=scratch / "queuebot.log",
            GITHUB_WEBHOOK_SECRET=HOOK_SECRET,
        )  # fmt: skip
        try:
            result.start_seconds = time.monotonic() - began
            result.start_cpu = cpu_seconds(bot.pid)
            await asyncio.sleep(args.settle)
            result.idle_cpu_per_minute = (
                (cpu_seconds(bot.pid) - result.start_cpu) / args.settle * 60
            )
            result.memory["idle after start"] = memory(bot.pid)
            print(f"  {await scrape(url, args.scrapes)}", flush=True)
            result.memory["after /metrics scrapes"] = memory(bot.pid)
            print(f"  {await asks(sandbox, args)}", flush=True)
            result.memory["after /queue-status reads"] = memory(bot.pid)
            if args.report_days:
                await report(sandbox, bot.pid, result, args)
            if not args.skip_ingest:
                await ingest(url, bot.pid, result, args)
                result.memory["after ingest"] = memory(bot.pid)
        finally:
            await stop_process(bot)
    return result


async def report(
    sandbox: SlackSandbox, pid: int, result: Footprint, args: argparse.Namespace
) -> None:
    text = f"report {args.report_days}"
    print(f"  /queue-status {text} over the stored jobs", flush=True)
    user = sandbox.workspace.add_user("U0SIZEREPORT", "capacity-lead").id
    result.report_seconds = await ask(sandbox, text, user, 1800.0)
    result.memory[f"after {text}"] = memory(pid)
    for child, command in descendants(pid):
        with contextlib.suppress(OSError):  # one that ended meanwhile
            result.workers.append((command, *memory(child)))
    print(f"  answered in {result.report_seconds:.1f} s", flush=True)


async def ingest(url: str, pid: int, result: Footprint, args: argparse.Namespace) -> None:
    count = int(args.per_minute * args.ingest_seconds / 60)
    print(
        f"  {count:,} deliveries at {args.per_minute:,}/min for {args.ingest_seconds:g} s",
        flush=True,
    )
    deliveries = webhook_bodies(Fleet(runner_types(args.types)), count, 95_000_000_000)
    cpu, began = cpu_seconds(pid), time.monotonic()
    phase = await webhook_phase(url, deliveries, args.ingest_seconds, False)
    took = time.monotonic() - began
    result.ingest_cpu_per_minute = (cpu_seconds(pid) - cpu) / took * 60
    ms = [v * 1000 for v in phase.answers]
    result.ingest = (phase.rate, percentile(ms, 0.5), percentile(ms, 0.99), phase.statuses)


def mib(pair: tuple[int, int] | None) -> str:
    return "-" if pair is None else f"{pair[0] / MIB:.0f} / {pair[1] / MIB:.0f}"


def per_million(size: int, jobs: int) -> str:
    return f"{size / jobs * MILLION / MB:.0f} MB" if jobs else "-"


Row = tuple[str, list[str]]


def rows(results: list[Footprint], args: argparse.Namespace) -> list[Row]:
    """The summary's lines: a label, and a value per backend (none for a heading)."""

    def row(label: str, value: Callable[[Footprint], str]) -> Row:
        return label, [value(r) for r in results]

    def memory_at(when: str) -> Callable[[Footprint], str]:
        return lambda r: mib(r.memory.get(when))

    def table_size(table: str) -> Callable[[Footprint], str]:
        return lambda r: per_million(r.filled.tables.get(table, 0), r.jobs)

    moments = dict.fromkeys(when for r in results for when in r.memory)
    return [
        ("memory of the bot's process, MiB (VmRSS / VmHWM)", []),
        *(row(f"  {when}", memory_at(when)) for when in moments),
        row("  the report's worker process (its own)", _workers),
        row("  the bot and its worker, VmHWM summed", _peak),
        ("database size", []),
        row("  empty (migrated)", lambda r: f"{r.empty.total / MB:.1f} MB"),
        row(f"  with {args.jobs:,} jobs", _filled),
        row(
            "  per million jobs (less the empty)",
            lambda r: per_million(r.filled.total - r.empty.total, r.jobs),
        ),
        *(
            row(f"    {table} with its indexes, per million", table_size(table))
            for table in ("jobs", "seen_requests", "fleet_totals")
        ),
        ("CPU of the bot's process", []),
        row(
            "  start until /healthz: s; CPU s",
            lambda r: f"{r.start_seconds:.1f}; {r.start_cpu:.1f}",
        ),
        row("  idle, CPU s per minute", lambda r: f"{r.idle_cpu_per_minute:.2f}"),
        row(
            f"  {args.per_minute:,} deliveries/min, CPU s per minute",
            lambda r: _cpu(r.ingest_cpu_per_minute),
        ),
        row("  deliveries/min reached; answers", _reached),
        row("  answers p50 / p99, ms", _latency),
        row("fill s; report s", _times),
    ]


def _workers(r: Footprint) -> str:
    # Spawned by multiprocessing: the worker runs `spawn_main`; its resource tracker is tiny.
    shown = [mib((rss, hwm)) for command, rss, hwm in r.workers if "spawn_main" in command]
    return ", ".join(shown) or "-"


def _peak(r: Footprint) -> str:
    """At most what both held at once (each one's peak, which need not be at the same time)."""
    bot = max((hwm for _, hwm in r.memory.values()), default=0)
    workers = sum(hwm for command, _, hwm in r.workers if "spawn_main" in command)
    return f"{(bot + workers) / MIB:.0f}"


def _filled(r: Footprint) -> str:
    wal = f" (-wal {r.filled.wal / MB:.1f})" if r.backend == "sqlite" else ""
    return f"{r.filled.total / MB:.0f} MB{wal}"


def _cpu(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ({value / 60:.0%} of a core)"


def _reached(r: Footprint) -> str:
    return "-" if r.ingest is None else f"{r.ingest[0]:,.0f}; {r.ingest[3]}"


def _latency(r: Footprint) -> str:
    return "-" if r.ingest is None else f"{r.ingest[1]:.1f} / {r.ingest[2]:.1f}"


def _times(r: Footprint) -> str:
    report = "-" if r.report_seconds is None else f"{r.report_seconds:.1f}"
    return f"{r.fill_seconds:.0f}; {report}"


def print_summary(results: list[Footprint], image: str, args: argparse.Namespace) -> None:
    print(f"\nsummary: {args.jobs:,} jobs of {args.types} runner types stored")
    table = rows(results, args)
    width = max(len(label) for label, _ in table) + 2
    columns = [max(len(r.backend), *(len(v[i]) for _, v in table if v)) + 2
               for i, r in enumerate(results)]  # fmt: skip
    print(" " * width + "".join(r.backend.rjust(c) for r, c in zip(results, columns, strict=True)))
    for label, values in table:
        print(
            label.ljust(width) + "".join(v.rjust(c) for v, c in zip(values, columns, strict=False))
        )
    for r in results:
        for command, rss, hwm in r.workers:
            shown = f"{rss / MIB:.0f} / {hwm / MIB:.0f} MiB"
            program, _, rest = command.partition(" ")
            print(f"  {r.backend}: the bot started `{Path(program).name} {rest[:70]}`: {shown}")
    print(f"container image `{args.image}`: {image}")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--skip-ingest", action="store_true", help="no webhook deliveries")
    parser.add_argument("--per-minute", type=int, default=10_000)
    parser.add_argument("--ingest-seconds", type=float, default=60.0)
    parser.add_argument("--report-days", type=int, default=7, help="0: no capacity report")
    parser.add_argument("--types", type=int, default=200)
    parser.add_argument("--queued", type=int, default=3000, help="jobs waiting now, at most")
    parser.add_argument("--settle", type=float, default=10.0, help="idle seconds after start")
    parser.add_argument("--scrapes", type=int, default=20)
    parser.add_argument("--asks", type=int, default=5)
    parser.add_argument("--image", default="queuebot")
    parser.add_argument(
        "--build-image", action="store_true", help="build the image first (podman, mmdebstrap)"
    )
    args = parser.parse_args()
    began = time.monotonic()
    print(
        f"footprint: {args.jobs:,} jobs; {os.cpu_count()} CPUs; load average"
        f" {' '.join(f'{v:.1f}' for v in os.getloadavg())}; Python {sys.version.split()[0]}",
        flush=True,
    )
    results: list[Footprint] = []
    backends = ("sqlite", "postgresql") if args.backend == "both" else (args.backend,)
    for backend in backends:
        with tempfile.TemporaryDirectory(prefix="queuebot-footprint-") as folder:
            scratch = Path(folder)
            if backend == "sqlite":
                results.append(await measure(backend, str(scratch / "queuebot.db"), scratch, args))
            else:
                async with fresh_database() as url:
                    results.append(await measure(backend, url, scratch, args))
    with tempfile.TemporaryDirectory(prefix="queuebot-footprint-podman-") as folder:
        image = await image_size(args.image, Path(folder), build=args.build_image)
    print_summary(results, image, args)
    load = " ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"\ntook {time.monotonic() - began:.0f} s in all; load average now {load}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
