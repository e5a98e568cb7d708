"""Latency from a Grafana webhook POST to chat.postMessage arriving at the local Slack API.

Runs `queuebot serve` as its own process (so the bot does not share an event loop with the
load), pointed at a local Slack-compatible workspace in this process. Slack takes about one
message a second per channel and queuebot paces itself to that, and more than ten incidents
opening in one channel within a minute become a storm digest; so the alerts are routed, by a
label, across CHANNELS channels (as teams' alerts are), to measure the bot rather than Slack's
limit. Sends ALERTS distinct alerts one at a time (a few a second, each channel well under the
storm threshold), then ALERTS more all at once (a handful per channel: the pacer's burst of three
goes out at once, the rest a second apart). Prints percentiles of:
  - webhook: POST sent -> 202 received
  - delivered: POST sent -> chat.postMessage received by the local Slack API
Usage: .venv/bin/python bench/ingest.py [--alerts 200] [--channels 40]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import aiohttp

from bot.incidents.service import STORM_WINDOW
from queuebot_lab.sandbox.slack import SlackSandbox

BOT_TOKEN = "xoxb-bench-token"
SIGNING_SECRET = "bench-signing-secret"
CHANNEL = "bench-alerts"
WEBHOOK_TOKEN = "bench-webhook-token"
#: Seconds between alerts sent one at a time.
SPACING = 0.2
MARK = re.compile(r"Bench alert (\d+)-(\d+)")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def alert_body(run: int, index: int, channels: int) -> bytes:
    raw = resources.files("queuebot_lab.demo").joinpath("seed_queueing_alert_firing.json")
    body: dict[str, Any] = copy.deepcopy(json.loads(raw.read_bytes()))
    name = f"Bench alert {run}-{index}"
    body["groupKey"] = f'{{}}:{{alertname="{name}"}}'
    for labels in (body["alerts"][0]["labels"], body["commonLabels"], body["groupLabels"]):
        labels["alertname"] = name
        labels["bench_channel"] = channel_name(index % channels)
    body["alerts"][0]["fingerprint"] = f"{run:04x}{index:012x}"
    return json.dumps(body).encode()


def channel_name(n: int) -> str:
    return f"bench-{n:03d}"


def routes(channels: int) -> str:
    """The YAML file's routes: each bench_channel label to its channel."""
    lines = ["routes:"]
    for n in range(channels):
        name = channel_name(n)
        lines.append(f"  - match: {{bench_channel: {name}}}\n    channel: '#{name}'")
    return "\n".join(lines) + "\n"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


async def start_bot(
    sandbox: SlackSandbox, scratch: Path, channels: int
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    config = scratch / "queuebot.yml"
    config.write_text(routes(channels) + "auto_diagnose: false\n")
    env = {
        "PATH": os.environ["PATH"],
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": sandbox.api_url,
        "QUEUEBOT_CHANNEL": f"#{CHANNEL}",
        "QUEUEBOT_DATABASE": str(scratch / "bench.db"),
        "QUEUEBOT_CONFIG": str(config),
        "QUEUEBOT_WEBHOOK_TOKEN": WEBHOOK_TOKEN,
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    bot = subprocess.Popen(
        [sys.executable, "-m", "bot", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(scratch / "bot.log").open("wb"),
    )
    url = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        for _ in range(200):
            try:
                async with http.get(f"{url}/healthz") as response:
                    if response.status == 200:
                        return bot, url
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    bot.kill()
    raise SystemExit(f"the bot did not start; see {scratch / 'bot.log'}")


async def send(http: aiohttp.ClientSession, url: str, body: bytes) -> tuple[float, float]:
    """POST one webhook; returns (sent at, answer latency)."""
    sent = time.monotonic()
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {WEBHOOK_TOKEN}"}
    async with http.post(f"{url}/webhooks/grafana", data=body, headers=headers) as response:
        await response.read()
        if response.status != 202:
            raise SystemExit(f"webhook answered {response.status}")
    return sent, time.monotonic() - sent


def arrivals(sandbox: SlackSandbox, run: int) -> dict[int, float]:
    found: dict[int, float] = {}
    for call in sandbox.calls("chat.postMessage"):
        match = MARK.search(str(call.params.get("text", "")))
        if match and int(match.group(1)) == run and call.ok:
            found.setdefault(int(match.group(2)), call.received_at)
    return found


def delivered_at_least(sandbox: SlackSandbox, run: int, count: int) -> Callable[[], bool]:
    return lambda: len(arrivals(sandbox, run)) >= count


async def measure(
    sandbox: SlackSandbox, url: str, run: int, count: int, channels: int, at_once: bool
) -> tuple[list[float], list[float]]:
    bodies = [alert_body(run, i, channels) for i in range(count)]
    async with aiohttp.ClientSession() as http:
        if at_once:
            results = await asyncio.gather(*(send(http, url, b) for b in bodies))
        else:
            results = []
            for body in bodies:
                results.append(await send(http, url, body))
                await sandbox.wait_for(delivered_at_least(sandbox, run, len(results)), 10)
                # A few a second: each channel well under ten new incidents a minute.
                await asyncio.sleep(max(0.0, SPACING - (time.monotonic() - results[-1][0])))
    # All at once, each channel's share goes out at Slack's pace of one a second.
    patience = 60 + count / channels * 1.5
    seen = await sandbox.wait_for(
        lambda: found if len(found := arrivals(sandbox, run)) >= count else None, patience
    )
    delivered = [seen[i] - sent for i, (sent, _) in enumerate(results)]
    answered = [latency for _, latency in results]
    return answered, delivered


def row(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"{name:<28}{len(ms):>5}{statistics.median(ms):>10.1f}{percentile(ms, 90):>10.1f}"
        f"{percentile(ms, 99):>10.1f}{max(ms):>10.1f}"
    )


async def main(count: int, channels: int) -> None:
    sandbox = SlackSandbox(bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL)
    for n in range(channels):
        bot_user = sandbox.workspace.identity.bot_user_id
        sandbox.workspace.add_channel(channel_name(n), members={bot_user})
    await sandbox.start()
    with tempfile.TemporaryDirectory(prefix="queuebot-bench-") as scratch:
        bot, url = await start_bot(sandbox, Path(scratch), channels)
        try:
            # Warm up: auth, SQLite, imports.
            await measure(sandbox, url, 0, 5, channels, at_once=False)
            single = await measure(sandbox, url, 1, count, channels, at_once=False)
            # Past the storm window, so the burst's incidents are not counted with those.
            await asyncio.sleep(STORM_WINDOW.total_seconds() + 1)
            burst = await measure(sandbox, url, 2, count, channels, at_once=True)
        finally:
            bot.terminate()
            bot.wait(timeout=10)
            await sandbox.stop()
    print(
        f"ingest: {count} distinct alerts over {channels} channels, bot in its own process,"
        " SQLite store (synced commits)"
    )
    print(f"{'latency (ms)':<28}{'n':>5}{'p50':>10}{'p90':>10}{'p99':>10}{'max':>10}")
    print(row("one at a time: webhook 202", single[0]))
    print(row("one at a time: delivered", single[1]))
    print(row("all at once: webhook 202", burst[0]))
    print(row("all at once: delivered", burst[1]))
    print(
        f"target: one-at-a-time delivered p99 < 100 ms -> "
        f"{'met' if percentile(single[1], 99) < 0.1 else 'NOT met'}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", type=int, default=200)
    parser.add_argument("--channels", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(main(args.alerts, args.channels))
