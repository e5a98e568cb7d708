"""How long a big notification holds the bot's event loop: the time anything else (a Slack
click, another webhook) must wait while the bot takes a group of thousands of alerts.

`queuebot serve` runs as its own process against the local Slack-compatible API. A probe, in a
process of its own, asks the bot for something trivial (GET /openapi.json, answered from
memory) every 2 ms over one kept-alive connection. Each answer's latency is how long the bot's
loop kept it waiting. Then large notifications are posted, one at a time, each until the bot
owes Slack nothing (its parent posted, or edited, from the whole group). Printed: the probe's
latency at rest, and its worst while each kind of body is taken (parse, store, render, deliver).

Usage: .venv/bin/python bench/loop_stall.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from bench.stats import percentile
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    drained,
    serve_process,
    stop_process,
    webhook_headers,
)
from testkit.payloads import reference
from testkit.servers import free_port

PROBE = """
import http.client, json, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
connection = http.client.HTTPConnection("127.0.0.1", port)
out, end = [], time.time() + seconds
while time.time() < end:
    began = time.time()
    connection.request("GET", "/openapi.json")
    connection.getresponse().read()
    out.append((began, time.time() - began))
    time.sleep(0.002)
json.dump(out, sys.stdout)
"""


def minimal(count: int, round_: int) -> bytes:
    """`count` alerts of a few labels each: the most alerts 1 MiB holds."""
    body = reference()
    body["groupKey"] = f'{{}}:{{alertname="m{round_}"}}'
    body["alerts"] = [
        {
            "status": "firing",
            "startsAt": "2026-11-01T02:23:00Z",
            "labels": {"alertname": f"m{round_}", "r": str(n)},
        }
        for n in range(count)
    ]
    return json.dumps(body).encode()


def realistic(count: int, round_: int) -> bytes:
    """`count` alerts as Grafana sends the reference alert: annotations, values, links."""
    body = reference()
    body["groupKey"] = f'{{}}:{{alertname="realistic-{round_}"}}'
    template = body["alerts"][0]
    alerts: list[dict[str, Any]] = []
    for n in range(count):
        alert = copy.deepcopy(template)
        alert["labels"] = {**alert["labels"], "runner": f"r{n}"}
        alert["fingerprint"] = f"{round_:04x}{n:012x}"
        alerts.append(alert)
    body["alerts"] = alerts
    return json.dumps(body).encode()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="bodies of each kind")
    args = parser.parse_args()
    kinds = {
        "10,000 alerts, few labels (0.8 MB)": lambda n: minimal(10_000, n),
        "700 alerts as Grafana sends them (0.9 MB)": lambda n: realistic(700, 100 + n),
    }
    windows: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
    sizes: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="queuebot-stall-") as scratch:
        async with SlackSandbox(
            bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
        ) as sandbox:
            port = free_port()
            bot = await serve_process(sandbox, Path(scratch) / "queuebot.db", port)
            seconds = 6.0 + 14.0 * args.rounds
            probe = subprocess.Popen(  # noqa: S603 - this interpreter, this script
                [sys.executable, "-c", PROBE, str(port), str(seconds)], stdout=subprocess.PIPE
            )
            try:
                await asyncio.sleep(3.0)  # the probe's latency at rest
                async with aiohttp.ClientSession() as http:
                    for n in range(args.rounds):
                        for kind, make in kinds.items():
                            body = make(n)
                            sizes[kind] = len(body)
                            began = time.time()
                            async with http.post(
                                f"http://127.0.0.1:{port}/webhooks/grafana",
                                data=body,
                                headers=webhook_headers(),
                            ) as answer:
                                if answer.status != 202:
                                    raise SystemExit(
                                        f"{kind}: the webhook answered {answer.status}"
                                    )
                            await drained(port, timeout=60)
                            windows[kind].append((began, time.time()))
                            await asyncio.sleep(1.0)
                out, _ = await asyncio.to_thread(probe.communicate)
            finally:
                if probe.poll() is None:
                    probe.kill()
                await stop_process(bot)
    samples: list[tuple[float, float]] = json.loads(out)
    busy = [w for spans in windows.values() for w in spans]
    rest = [lat for at, lat in samples if not any(a - 0.5 <= at <= b + 0.5 for a, b in busy)]
    print(
        f"probe at rest: {len(rest)} answers, p50 {statistics.median(rest) * 1000:.1f} ms,"
        f" p99 {percentile(rest, 0.99) * 1000:.1f} ms, max {max(rest) * 1000:.1f} ms"
    )
    for kind, spans in windows.items():
        during = [lat for at, lat in samples if any(a <= at <= b for a, b in spans)]
        took = [b - a for a, b in spans]
        print(
            f"{kind}: {len(spans)} bodies of {sizes[kind] / 1e6:.2f} MB, webhook to Slack"
            f" p50 {statistics.median(took):.2f} s; probe meanwhile p50"
            f" {statistics.median(during) * 1000:.1f} ms, p99 {percentile(during, 0.99) * 1000:.1f}"
            f" ms, max {max(during) * 1000:.1f} ms (the longest the loop was held)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
