"""One reconciliation pass over a fleet whose GitHub deliveries were partly lost, against the
GitHub stand-in: how many requests it took, how long, what it corrected, and whether each
runner type's queue then reads as the fleet's own jobs say.

The fleet is the second model's (`fleetmodel`), as `tests/github/test_reconcile.py` draws it:
a fifth of the `in_progress` and `completed` deliveries lost, and every delivery of 20
minutes. The store is a fresh SQLite file; the share of the hourly budget is the default (a
fifth of the stand-in's 5,000) unless `--share` says otherwise.

Usage: .venv/bin/python bench/reconcile.py [--case outage] [--days 2] [--types 6] [--seed 4]
       [--share 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bot.domain.clock import Clock
from bot.fleet.sources.github_rest import GitHubReader
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.reconcile import Reconciler
from bot.store import Store, open_store
from fleetmodel import Case
from fleetmodel.github import newest_deliveries
from queuebot_lab.sandbox.github import GitHubSandbox
from testkit.second_model import counts, drawn_for, lost, truth

TOKEN = "ghs_" + "benchmark" * 4


async def _queues(store: Store, config: JobsConfig, at: float) -> dict[str, int]:
    """Each runner type's jobs waiting more than `queued_after_seconds`, as the alert counts."""
    found: dict[str, int] = {}
    for count in await store.queue_counts(
        at, config.queued_after_seconds, config.max_queued_age_seconds
    ):
        if config.counts(count.runner_type, count.repository):
            found[count.runner_type] = found.get(count.runner_type, 0) + count.jobs
    return {name: jobs for name, jobs in found.items() if jobs}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="outage", choices=[c.value for c in Case])
    parser.add_argument("--days", type=int, default=2)
    parser.add_argument("--types", type=int, default=6)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--share", type=float, default=0.2)
    args = parser.parse_args()
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    fleet = drawn_for(end, Case(args.case), seed=args.seed, types=args.types, days=args.days)
    at = end.timestamp()
    expected = counts(truth(fleet, at))
    config = JobsConfig()
    with tempfile.TemporaryDirectory(prefix="queuebot-reconcile-") as folder:
        store = await open_store(str(Path(folder) / "queuebot.db"))
        try:
            kept = lost(fleet, end, seed=args.seed)
            await load_history(store, kept, config, remember_until=0.0)
            before = await _queues(store, config, at)
            async with GitHubSandbox(TOKEN, org=fleet.plan.org) as github:
                github.history.add_bodies(newest_deliveries(fleet, until=at))
                async with aiohttp.ClientSession() as session:
                    reader = GitHubReader(session, github.url, TOKEN, max_wait=0.0)
                    reconciler = Reconciler(
                        reader, store, config, share=args.share, clock=Clock.at(end)
                    )
                    began = time.perf_counter()
                    done = await reconciler.reconcile()
                    took = time.perf_counter() - began
            after = await _queues(store, config, at)
        finally:
            await store.close()
    corrected = sum(done.corrected.values())
    wrong_before = sum(abs(before.get(n, 0) - expected.get(n, 0)) for n in {*before, *expected})
    print(
        f"reconcile: {args.case}, {args.days} days, {args.types} runner types:"
        f" {len(fleet.jobs):,} jobs, {len(kept):,} deliveries kept"
    )
    print(f"  queued jobs off by {wrong_before} across the types before the pass")
    print(
        f"  one pass: {done.requests:,} requests (share {args.share:g} of 5,000 an hour),"
        f" {took:.2f} s, {done.requests / took:,.0f} requests/s"
    )
    kinds = ", ".join(f"{kind.value} {jobs:,}" for kind, jobs in sorted(done.corrected.items()))
    print(f"  corrected: {corrected:,} jobs ({kinds})")
    if corrected:
        print(f"  requests per job corrected: {done.requests / corrected:.2f}")
    print(f"  stopped early: {done.stopped or 'no'}")
    print(
        f"  the alert's queued jobs per type after the pass equal the fleet's: {after == expected}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
