"""An alert storm: 1,000 notifications for 300 incidents within one minute, against Slack's
real posting limit (about one message per second per channel, enforced by the local Slack API).

The bot runs as `queuebot serve` in its own process. Each incident fires, changes once, half of
them resolve, and a quarter of all notifications arrive twice (Grafana in HA sends each from
every replica). Prints: webhook answer times (p50/p99), notifications accepted per second, the
time from the storm's end until every incident's message shows its final state, the messages
posted, the 429s Slack answered, and the bot's peak RSS. Target: p99 answer under 50 ms, final
state within 2 minutes of the storm's end, nothing lost.

    python bench/storm.py [--incidents 300] [--notifications 1000] [--seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.harness import (
    BOT_TOKEN,
    CHANNEL_NAME,
    SIGNING_SECRET,
    serve_process,
    webhook_headers,
)
from testkit.payloads import encoded, reference, with_values
from testkit.servers import free_port


def peak_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def plan(incidents: int, total: int, seed: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The storm's notifications in sending order, and each incident's final state."""
    rng = random.Random(seed)
    firing: list[dict[str, Any]] = []
    later: list[dict[str, Any]] = []
    final: dict[str, str] = {}
    for n in range(incidents):
        body = reference()
        body["groupKey"] = f"storm-{n:04d}"
        body["commonLabels"] = {**body["commonLabels"], "storm": str(n)}
        body["alerts"][0]["labels"] = {**body["alerts"][0]["labels"], "storm": str(n)}
        body["alerts"][0]["fingerprint"] = f"fp{n:04d}"
        firing.append(body)
        changed = with_values(body, max_queue_time_mins=200 + n)
        later.append(changed)
        final[body["groupKey"]] = f"{200 + n} min"
        if n % 2 == 0:
            resolved = copy.deepcopy(changed)
            resolved["status"] = "resolved"
            resolved["alerts"][0]["status"] = "resolved"
            resolved["alerts"][0]["endsAt"] = "2024-12-01T04:05:00Z"
            later.append(resolved)
            final[body["groupKey"]] = "Resolved"
    sequence = firing + later
    while len(sequence) < total:
        sequence.insert(rng.randrange(len(sequence) + 1), None)  # type: ignore[arg-type]
    # A duplicate repeats the latest notification of a random incident sent so far.
    sent: list[dict[str, Any]] = []
    ordered: list[dict[str, Any]] = []
    for body in sequence:
        if body is None:
            body = rng.choice(sent) if sent else firing[0]
        else:
            sent.append(body)
        ordered.append(body)
    return ordered, final


def final_states_shown(sandbox: SlackSandbox, final: dict[str, str]) -> int:
    """How many incidents show their final state now, in a message of their own or on their
    line in a storm digest."""
    pieces: list[str] = []
    for message in sandbox.messages():
        kind = (message.metadata or {}).get("event_type")
        text = json.dumps(message.blocks, ensure_ascii=False)
        if kind == "queuebot_incident":
            pieces.append(text)
        elif kind == "queuebot_digest":
            # One line per incident, in the message and the thread replies continuing it.
            pages = [text] + [
                json.dumps(r.blocks, ensure_ascii=False) for r in sandbox.replies(None, message.ts)
            ]
            for page in pages:
                pieces.extend(page.split("\\n"))
    shown = 0
    for key, state in final.items():
        label = re.compile(rf"storm={int(key.rsplit('-', 1)[1])}\b")
        if any(label.search(p) and state in p for p in pieces):
            shown += 1
    return shown


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--incidents", type=int, default=300)
    parser.add_argument("--notifications", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0, help="length of the storm")
    parser.add_argument("--wait", type=float, default=900.0, help="give up after this long")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    bodies, final = plan(args.incidents, args.notifications, args.seed)
    scratch = Path(tempfile.mkdtemp(prefix="queuebot-storm-"))
    async with SlackSandbox(
        bot_token=BOT_TOKEN,
        signing_secret=SIGNING_SECRET,
        channel_name=CHANNEL_NAME,
        enforce_rate_limits=True,
    ) as sandbox:
        port = free_port()
        bot = await serve_process(sandbox, scratch / "queuebot.db", port)
        latencies: list[float] = []
        statuses: dict[int, int] = {}
        try:
            async with aiohttp.ClientSession() as http:
                gap = args.seconds / len(bodies)
                began = time.monotonic()

                async def send(body: dict[str, Any], at: float) -> None:
                    await asyncio.sleep(max(0.0, at - (time.monotonic() - began)))
                    start = time.monotonic()
                    async with http.post(
                        f"http://127.0.0.1:{port}/webhooks/grafana",
                        data=encoded(body),
                        headers=webhook_headers(),
                    ) as answer:
                        await answer.read()
                        statuses[answer.status] = statuses.get(answer.status, 0) + 1
                    latencies.append(time.monotonic() - start)

                await asyncio.gather(*(send(b, i * gap) for i, b in enumerate(bodies)))
                storm_seconds = time.monotonic() - began
            storm_end = time.monotonic()
            settled_after = None
            while time.monotonic() - storm_end < args.wait:
                if final_states_shown(sandbox, final) == len(final):
                    settled_after = time.monotonic() - storm_end
                    break
                await asyncio.sleep(0.5)
            rss = peak_rss_mb(bot.pid or 0)
        finally:
            bot.send_signal(signal.SIGINT)
            await bot.wait()
        posts = [c for c in sandbox.calls("chat.postMessage") if c.status == 200]
        limited = [c for c in sandbox.calls() if c.status == 429]
        shown = final_states_shown(sandbox, final)
        missing_debug = [
            (m.metadata, m.text[:120], [r.text[:60] for r in sandbox.replies(None, m.ts)])
            for m in sandbox.messages()
            if not any(
                f"storm={k.rsplit('-', 1)[1].lstrip('0') or '0'}`" in m.text + str(m.blocks)
                and v in m.text + str(m.blocks)
                for k, v in final.items()
            )
        ]
    ms = [v * 1000 for v in latencies]
    print(
        f"storm: {len(bodies)} notifications for {args.incidents} incidents"
        f" in {storm_seconds:.1f} s"
    )
    print(f"answers: {statuses}")
    print(
        f"webhook answer: p50 {statistics.median(ms):.1f} ms, p99 {percentile(ms, 0.99):.1f} ms,"
        f" max {max(ms):.1f} ms (target p99 < 50 ms)"
    )
    print(f"accepted per second: {statuses.get(202, 0) / storm_seconds:.1f}")
    if settled_after is None:
        print(
            f"final state shown for {shown}/{len(final)} incidents after {args.wait:.0f} s"
            " (target: all within 120 s)"
        )
    else:
        print(
            f"every incident's final state shown {settled_after:.1f} s after the storm"
            " (target 120 s)"
        )
    print(f"messages posted: {len(posts)}; 429s answered by Slack: {len(limited)}")
    print(f"bot peak RSS: {rss:.0f} MB")
    lost = len(final) - shown
    print(f"lost: {lost}")
    if lost and os.environ.get("STORM_DEBUG"):
        for message in missing_debug:
            print("NOT SHOWN:", message)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
