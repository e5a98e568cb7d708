"""Time from a click on Run diagnostics to the report in the thread, on a big fleet.

Simulates 50 runner types with 7 days of 1-minute history, backfills it into a real Prometheus,
runs the bot against the local Slack workspace, and clicks Run diagnostics repeatedly with
signed requests, timing each click until the thread's reply has become the report (all of the
query pack's queries, now and at the same time on 7 previous days, run concurrently). Also
times the report alone (no Slack). Target: p95 under 2 s.

    python bench/diagnostics_latency.py [--types 50] [--days 7] [--step 60] [--clicks 30]

Needs the Debian packages prometheus (with promtool). The history is large (tens of millions of
samples): generating and backfilling it takes minutes; it is kept in --cache between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile
from bot.diagnostics.checks import diagnose
from bot.domain.clock import Clock
from bot.fleet.signals import collect
from bot.fleet.sources.prometheus import PrometheusClient
from bot.fleet.sources.querypack import QueryPack
from bot.slack.contract import ActionId
from queuebot_lab.simulator import Scenario, SimulationSpec, write_file
from testkit.harness import running_stack
from testkit.payloads import reference
from testkit.prometheus import Prometheus


def summary(name: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (
        f"{name}: n={len(ms)} p50={statistics.median(ms):.0f} ms"
        f" p95={percentile(ms, 0.95):.0f} ms max={max(ms):.0f} ms"
    )


async def prepare(cache: Path, args: argparse.Namespace) -> tuple[Prometheus, datetime]:
    binary, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if not binary or not promtool:
        raise SystemExit("needs prometheus and promtool: apt-get install -y prometheus")
    prometheus = Prometheus(binary, cache / "prometheus", promtool=promtool)
    marker = cache / "end.txt"
    if marker.exists():
        end = datetime.fromisoformat(marker.read_text().strip())
        print(f"reusing the history in {cache} (ends {end.isoformat()})", flush=True)
    else:
        end = datetime.now(UTC).replace(second=0, microsecond=0)
        spec = SimulationSpec(
            scenario=Scenario.MIX,
            hours=args.days * 24 + 1,
            runner_types=args.types,
            seed=1,
            end=end,
            step_seconds=args.step,
        )
        history = cache / "fleet.om"
        began = time.monotonic()
        await asyncio.to_thread(write_file, spec, history)
        size = history.stat().st_size / 1e9
        print(f"simulated in {time.monotonic() - began:.0f} s ({size:.1f} GB)", flush=True)
        began = time.monotonic()
        samples = await prometheus.backfill(history)
        print(f"backfilled {samples} samples in {time.monotonic() - began:.0f} s", flush=True)
        history.unlink()
        marker.write_text(end.isoformat())
    await prometheus.start()
    return prometheus, end


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--types", type=int, default=50)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--step", type=int, default=60, help="seconds between samples")
    parser.add_argument("--clicks", type=int, default=30)
    parser.add_argument("--cache", type=Path, help="keep the backfilled history here")
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="queuebot-latency-"))
    cache.mkdir(parents=True, exist_ok=True)
    prometheus, end = await prepare(cache, args)
    try:
        async with aiohttp.ClientSession() as session:
            client = PrometheusClient(session, prometheus.url)
            alone = []
            for _ in range(args.clicks):
                began = time.monotonic()
                diagnose(await collect(client, QueryPack(), end))
                alone.append(time.monotonic() - began)
        clicks = await click_runs(prometheus, end, cache, args.clicks)
    finally:
        await prometheus.stop()
    print(f"fleet: {args.types} runner types, {args.days} days every {args.step} s")
    print(summary("report alone (all queries, checks)", alone))
    print(summary("click to report in the thread", clicks))
    print(f"target: p95 under 2000 ms; met: {percentile(clicks, 0.95) < 2.0}")
    return 0


async def click_runs(prometheus: Prometheus, end: datetime, cache: Path, count: int) -> list[float]:
    config = cache / "queuebot.yml"
    config.write_text("auto_diagnose: false\n")
    work = Path(tempfile.mkdtemp(prefix="queuebot-latency-bot-"))
    timings = []
    async with running_stack(
        work,
        clock=Clock.at(lambda: end),
        PROMETHEUS_URL=prometheus.url,
        QUEUEBOT_CONFIG=str(config),
    ) as stack:
        await stack.webhook(reference())
        (parent,) = await stack.parents(1)
        await stack.settled()

        def reports() -> int:
            return sum(
                ":mag: *Diagnostics:*" in stack.text(r)
                for r in stack.sandbox.replies(None, parent.ts)
            )

        for done in range(count):
            began = time.monotonic()
            await stack.sandbox.click(
                stack.sandbox.channel_id, parent.ts, ActionId.RUN_DIAGNOSTICS.value
            )
            await stack.sandbox.wait_for(lambda n=done: reports() > n, timeout=60)
            timings.append(time.monotonic() - began)
            # The run ends after the chart upload; the next click waits for it.
            await stack.sandbox.wait_for(
                lambda n=done: len([f for f in stack.sandbox.files if f.completed]) > n,
                timeout=60,
            )
    shutil.rmtree(work, ignore_errors=True)
    return timings


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
