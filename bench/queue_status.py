"""How fast /queue-status acks and answers, on a big fleet with many open incidents.

Simulates 50 runner types with 7 days of history, backfills it into a real Prometheus, runs the
bot against the local Slack workspace with 20 open incidents (opened at once, so most are in a
storm digest; each answer links the listed ones with chat.getPermalink), and sends signed
/queue-status commands: the summary, a prefix in detail (baseline over 7 days, and the chart
uploaded to Slack), and `post`. For each it times the ack (Slack allows 3 s) and the answer
arriving at the response_url (queuebot allows Prometheus 5 s).

    python bench/queue_status.py [--types 50] [--days 7] [--step 120] [--runs 30]

Needs the Debian packages prometheus (with promtool). Generating and backfilling the history
takes a few minutes; it is kept in --cache between runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.diagnostics_latency import percentile, prepare, summary
from bot.domain.clock import Clock
from testkit.harness import Stack, running_stack
from testkit.payloads import reference

INCIDENTS = 20
FORMS = {"summary": "", "detail": "linux-g5", "post": "post"}


def _incident(n: int) -> dict[str, Any]:
    body = reference()
    body["groupKey"] = f"bench-{n}"
    body["alerts"][0]["labels"] = {**body["alerts"][0]["labels"], "bench": str(n)}
    body["alerts"][0]["fingerprint"] = f"bench{n}"
    return body


def _answers(stack: Stack) -> int:
    return len(stack.sandbox.response_posts)


async def run(stack: Stack, text: str, runs: int) -> tuple[list[float], list[float]]:
    acks, answers = [], []
    # Many people asking: one person is allowed only a few asks a minute.
    people = [
        stack.sandbox.workspace.add_user(f"U0BENCH{n:04d}", f"oncall{n}").id for n in range(runs)
    ]
    for person in people:
        before = _answers(stack)
        began = time.monotonic()
        result = await stack.sandbox.slash_command("/queue-status", text, user_id=person)
        acks.append(result.elapsed)
        await stack.sandbox.wait_for(lambda n=before: _answers(stack) > n, timeout=60)
        answers.append(time.monotonic() - began)
        posted = stack.sandbox.response_posts[-1]
        if posted.outcome not in ("ephemeral", "in_channel"):
            raise SystemExit(f"/queue-status {text}: Slack refused the answer ({posted.outcome})")
        shown = json.dumps(posted.body)
        if "could not be read" in shown or "runner type" not in shown:
            raise SystemExit(f"/queue-status {text} did not read the fleet: {shown[:500]}")
    return acks, answers


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--types", type=int, default=50)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--step", type=int, default=120, help="seconds between samples")
    parser.add_argument("--runs", type=int, default=30, help="commands of each form")
    parser.add_argument("--cache", type=Path, help="keep the backfilled history here")
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="queuebot-status-"))
    cache.mkdir(parents=True, exist_ok=True)
    prometheus, end = await prepare(cache, args)
    work = Path(tempfile.mkdtemp(prefix="queuebot-status-bot-"))
    results: dict[str, tuple[list[float], list[float]]] = {}
    try:
        async with running_stack(
            work, clock=Clock.at(lambda: end), PROMETHEUS_URL=prometheus.url
        ) as stack:
            for n in range(INCIDENTS):
                await stack.webhook(_incident(n))
            await stack.settled(timeout=60)
            for form, text in FORMS.items():
                results[form] = await run(stack, text, args.runs)
    finally:
        await prometheus.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"fleet: {args.types} runner types, {args.days} days every {args.step} s;")
    print(f"{INCIDENTS} open incidents, {args.runs} commands of each form")
    worst_ack = 0.0
    for form, (acks, answers) in results.items():
        print(summary(f"{form:7} ack", acks))
        print(summary(f"{form:7} command to answer", answers))
        worst_ack = max(worst_ack, percentile(acks, 0.99))
    print(f"acks within Slack's 3 s: {worst_ack < 3.0} (p99 {worst_ack * 1000:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
