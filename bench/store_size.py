"""The store's size over simulated busy weeks: does it stay bounded?

A fleet of alert rules fires and resolves through the weeks, Grafana re-sending each group every
5 minutes while it changes and every 4 hours while it does not, from two HA replicas (every
notification twice); a few rules are big groups (hundreds of alerts, bodies of hundreds of KB).
Notifications go through the incident service into a real SQLite store on a simulated clock;
Slack deliveries are marked delivered as they would be; retention runs every hour with the
default 30 days. Prints, at the end of each week: notifications and body bytes received, the
database's size on disk (file and write-ahead log), and the rows it holds.

Usage: .venv/bin/python bench/store_size.py [--weeks 6] [--rules 60] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.domain.clock import Clock
from bot.domain.notifications import parse_webhook
from bot.incidents.service import IncidentService
from bot.store import OutboxState
from bot.store.sqlite import SQLiteStore
from bot.telemetry.metrics import Metrics
from testkit.payloads import reference

STEP = 300.0  # Grafana's group interval
REPEAT = 4 * 3600.0  # Grafana's repeat interval
RETENTION = 30 * 86400.0
HOUR = 3600.0


def body(rule: int, alerts: int, status: str, value: int, started: float) -> bytes:
    """The reference notification for rule `rule`, with `alerts` alerts."""
    base = reference(status)
    template = base["alerts"][0]
    base["groupKey"] = f'{{}}:{{alertname="rule-{rule}"}}'
    base["commonLabels"]["alertname"] = base["groupLabels"]["alertname"] = f"rule-{rule}"
    when = datetime.fromtimestamp(started, UTC).isoformat()
    base["alerts"] = [
        {
            **template,
            "status": status,
            "labels": {**template["labels"], "alertname": f"rule-{rule}", "runner": f"r{n}"},
            "fingerprint": f"{rule:04x}{n:08x}",
            "startsAt": when,
            "endsAt": when if status == "resolved" else "0001-01-01T00:00:00Z",
            "values": {"max_queue_time_mins": value, "max_queue_size": value % 17},
        }
        for n in range(alerts)
    ]
    return json.dumps(base).encode()


def size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return os.stat(path).st_size + (os.stat(wal).st_size if wal.exists() else 0)


def rows(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as db:
        return {
            table: int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])  # noqa: S608
            for table in ("incidents", "notifications", "notification_bodies", "outbox")
        }


async def simulate(args: argparse.Namespace, path: Path) -> None:
    rng = random.Random(args.seed)
    now = [datetime(2026, 1, 5, tzinfo=UTC).timestamp()]
    store = await SQLiteStore.open(str(path), clock=Clock(seconds=lambda: now[0]))
    service = IncidentService(
        store,
        default_channel="#alerts",
        metrics=Metrics(),
        clock=Clock.at(lambda: datetime.fromtimestamp(now[0], UTC)),
    )
    sizes = [rng.choice([1, 1, 1, 2, 5, 20]) for _ in range(args.rules)]
    for big in rng.sample(range(args.rules), 3):
        sizes[big] = 400  # a group of hundreds of alerts
    firing: dict[int, dict[str, Any]] = {}
    received = sent_bytes = 0
    next_prune = now[0] + HOUR
    step = 0
    print("week  notifications  received MB  database MB  incidents  notifications  bodies  outbox")
    for week in range(1, args.weeks + 1):
        for _ in range(int(7 * 86400 / STEP)):
            step += 1
            now[0] += STEP
            for rule in range(args.rules):
                state = firing.get(rule)
                if state is None:
                    # Busy: each rule fires about twice a day.
                    if rng.random() < 2 * STEP / 86400:
                        end = now[0] + rng.uniform(0.5, 6) * HOUR
                        state = {"started": now[0], "end": end, "value": 60, "sent": 0.0}
                        firing[rule] = state
                    else:
                        continue
                status = "resolved" if now[0] >= state["end"] else "firing"
                changed = status == "resolved" or rng.random() < 0.3
                if changed:
                    state["value"] += rng.randint(1, 9)
                elif now[0] - state["sent"] < REPEAT:
                    continue
                raw = body(rule, sizes[rule], status, state["value"], state["started"])
                for _replica in range(2):  # Grafana in HA: every notification twice
                    await service.accept(parse_webhook(raw), raw.decode())
                    received += 1
                    sent_bytes += len(raw)
                state["sent"] = now[0]
                if status == "resolved":
                    del firing[rule]
            for due in await store.due_incidents():
                while (item := await store.next_item(due.incident_id)) is not None:
                    await store.finish_item(item.id, OutboxState.DONE, posted_ts="1.0")
            if now[0] >= next_prune:
                await store.prune(now[0] - RETENTION)
                next_prune += HOUR
        held = rows(path)
        print(
            f"{week:4}  {received:13}  {sent_bytes / 1e6:11.1f}  {size(path) / 1e6:11.1f}"
            f"  {held['incidents']:9}  {held['notifications']:13}  {held['notification_bodies']:6}"
            f"  {held['outbox']:6}"
        )
    await store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weeks", type=int, default=6)
    parser.add_argument("--rules", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="queuebot-size-") as scratch:
        asyncio.run(simulate(args, Path(scratch) / "queuebot.db"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
