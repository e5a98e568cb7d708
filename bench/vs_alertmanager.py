"""Alertmanager's own Slack receiver and queuebot side by side, while Slack answers 429.

One real Alertmanager 0.25 (Debian's binary) takes the alerts, pushed to POST /api/v2/alerts as
Prometheus pushes them (batches of 64, pushed again every minute with endsAt four minutes on).
Each alert has its own alertname, so each is one group and one notification. Its route sends
every group two ways (`continue: true`): to `slack_configs`, whose `api_url` is an incoming
webhook of the local Slack workspace (channel #alertmanager-path), and to `webhook_configs`
pointing at `queuebot serve` (its own process), which posts to #queuebot-path through the Web
API. Both get the group at the same moment (same group_wait), so the comparison starts even.

For the first --limited-seconds after the push, Slack answers every call 429 with
`Retry-After: --retry-after`: incoming webhooks and every Web API method alike (--status 503
answers that instead; --after lets each call take effect first, as when Slack's answer is
lost). Then it recovers. The bench runs until both channels show every group (and queuebot's
outbox is empty), or --deadline passes, then watches --linger seconds more for duplicates.

Counted per path, from what its channel holds at the end: delivered (groups a message shows),
lost (groups no message shows), duplicated (groups more than one message shows), and the
latency from pushing the alert into Alertmanager to the first moment a message showed it
(p50/p95/max). For queuebot a group is shown by its own message or by its line in a storm
digest (more than ten incidents opening in a minute go to one digest message, continued in
its thread), from the moment of the post or edit that added the line. Also printed: the
requests each path made to Slack and how many were refused, when Alertmanager tried, and what
it logged.

What Alertmanager 0.25 does on 429 (prometheus/alertmanager v0.25.0):
- notify/slack/slack.go, `Notify`: the answer goes to `n.retrier.Check(resp.StatusCode,
  resp.Body)` ("Only 5xx response codes are recoverable and 2xx codes are successful"); the
  Slack notifier's Retrier has no RetryCodes. `Retry-After` is never read.
- notify/util.go, `Retrier.Check`: `retry := statusCode/100 == 5`, then RetryCodes; so 429 is
  "unexpected status code 429" with retry=false.
- notify/notify.go, `RetryStage.exec`: `if !retry { return ... "notify retry canceled due to
  unrecoverable error after %d attempts" }`: the notification fails after one attempt.
  A 5xx is retried (retry=true) on an exponential backoff with jitter (cenkalti/backoff
  defaults: 0.5 s growing 1.5× up to 60 s) until the flush's context ends, group_interval
  (at least 10 s) later; if Slack posted and only the answer was lost, every try is a message.
- Nothing is written to the notification log, so the group's next flush, one group_interval
  later (dispatch/dispatch.go `ag.next.Reset(ag.opts.GroupInterval)`), finds it unsent
  (`DedupStage.needsUpdate`: no entry, alerts firing) and sends again. While Slack keeps
  answering 429, each group is tried once per group_interval; a group whose alerts resolve
  before a try that succeeds is never shown (and resolved notices are only sent when the
  log says the firing one was).
The bench shows this rather than assumes it: it prints when Alertmanager's posts came and
how far apart each group's tries were. group_interval defaults to 1m here so the bench stays
short; Alertmanager's own default is 5m (--group-interval 5m --deadline 330 shows that).

    python bench/vs_alertmanager.py [--groups 100] [--limited-seconds 45] [--retry-after 10]
        [--status 429] [--after] [--group-interval 1m] [--deadline 200] [--linger 10]
        [--channel-by-name] [--slack-limit]

queuebot is given its channel by ID; --channel-by-name gives `#name`, with which queuebot cannot
look for a post whose answer was lost until it has learnt the ID (docs/promises.md), which
--after shows.
--slack-limit also enforces the sandbox's model of Slack's posting limit on both paths (about
one message a second per channel after a burst of three; Slack documents bursts but not their
size, so this is stricter than Slack may be).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile
from bot.delivery.digest import DIGEST_PAGE_EVENT
from queuebot_lab.sandbox.slack import SlackSandbox
from queuebot_lab.sandbox.slack.faults import INCOMING_WEBHOOK, Fault
from testkit.alertmanager import Alertmanager, rfc3339
from testkit.harness import (
    BOT_TOKEN,
    SIGNING_SECRET,
    WEBHOOK_TOKEN,
    outbox_pending,
    serve_process,
    stop_process,
)
from testkit.servers import free_port

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"
AM_CHANNEL, QB_CHANNEL = "alertmanager-path", "queuebot-path"
#: Prometheus sends at most 64 alerts per request and resends firing ones every minute, each
#: valid for four resend intervals (rules/alerting.go ValidUntil).
BATCH, RESEND_SECONDS, VALID_FOR = 64, 60.0, timedelta(minutes=4)
MARKER = re.compile(r"VsAm\d{4}")


class BenchAlertmanager(Alertmanager):
    """Alertmanager with the bench's routes, instead of the tests' do-nothing config."""

    def __init__(self, workdir: Path, config: str) -> None:
        super().__init__(ALERTMANAGER, workdir)
        self.bench_config = config

    def config_text(self) -> str:
        return self.bench_config


def alertmanager_config(hook_url: str, queuebot_url: str, group_interval: str) -> str:
    return f"""\
route:
  receiver: "null"
  group_by: [alertname]
  group_wait: 1s
  group_interval: {group_interval}
  repeat_interval: 4h
  routes:
    - receiver: slack
      matchers: ['bench="vs_alertmanager"']
      continue: true
    - receiver: queuebot
      matchers: ['bench="vs_alertmanager"']
receivers:
  - name: "null"
  - name: slack
    slack_configs:
      - api_url: {json.dumps(hook_url)}
        channel: "#{AM_CHANNEL}"
  - name: queuebot
    webhook_configs:
      - url: {json.dumps(queuebot_url)}
        http_config:
          authorization:
            credentials: {json.dumps(WEBHOOK_TOKEN)}
"""


def alerts(groups: int, started: datetime, now: datetime) -> list[dict[str, Any]]:
    return [
        {
            "labels": {
                "alertname": f"VsAm{n:04d}",
                "bench": "vs_alertmanager",
                "severity": "critical",
                "queue": f"queue-{n:04d}",
            },
            "annotations": {"summary": f"queue-{n:04d} is backing up"},
            "startsAt": rfc3339(started),
            "endsAt": rfc3339(now + VALID_FOR),
        }
        for n in range(groups)
    ]


async def push(am: Alertmanager, batch: list[dict[str, Any]]) -> None:
    await am.request("POST", "/alerts", json=batch)


async def push_all(am: Alertmanager, groups: int, started: datetime) -> dict[str, float]:
    """Push every alert once, as Prometheus does; when each was pushed (epoch seconds)."""
    pushed: dict[str, float] = {}
    every = alerts(groups, started, datetime.now(UTC))
    for first in range(0, len(every), BATCH):
        batch = every[first : first + BATCH]
        at = time.time()
        await push(am, batch)
        pushed.update({a["labels"]["alertname"]: at for a in batch})
    return pushed


async def resend(am: Alertmanager, groups: int, started: datetime) -> None:
    """Keep the alerts firing the way Prometheus does, until cancelled."""
    while True:
        await asyncio.sleep(RESEND_SECONDS)
        every = alerts(groups, started, datetime.now(UTC))
        for first in range(0, len(every), BATCH):
            await push(am, every[first : first + BATCH])


@dataclass
class Lane:
    name: str
    #: When each group was first shown in the channel (epoch seconds).
    first_shown: dict[str, float] = field(default_factory=dict)
    #: How many messages show each group now.
    shown_now: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    refused: int = 0

    def look(self, sandbox: SlackSandbox, channel: str) -> None:
        """Read the channel: every announcing message (a top-level one, or a page continuing a
        storm digest; other thread replies are updates), every version of it."""
        self.first_shown, self.shown_now = {}, Counter()
        channel_id = sandbox.workspace.channel(channel).id
        for message in sandbox.workspace.messages.get(channel_id, {}).values():
            page = (message.metadata or {}).get("event_type") == DIGEST_PAGE_EVENT
            if message.deleted or message.orphan or (message.is_reply and not page):
                continue
            extra = json.dumps(message.attachments)
            for version in message.versions:
                at = float(version.edited_ts or message.ts)
                for marker in MARKER.findall(version.text + json.dumps(version.blocks) + extra):
                    self.first_shown[marker] = min(at, self.first_shown.get(marker, at))
            # A digest's lines move between its pages as it grows: only what shows now counts.
            self.shown_now.update(set(MARKER.findall(message.text + json.dumps(message.blocks))))
            self.shown_now.update(set(MARKER.findall(extra)))

    def done(self, groups: int) -> bool:
        return len(self.shown_now) >= groups


def alertmanager_tries(sandbox: SlackSandbox, began: float) -> str:
    """When Alertmanager posted to the hook (seconds after the push) and what Slack answered,
    and how far apart one group's tries were."""
    by_second: Counter[tuple[int, int]] = Counter()
    tries: dict[str, list[float]] = defaultdict(list)
    for call in sandbox.calls(INCOMING_WEBHOOK):
        by_second[(round(call.received_at - began), call.status)] += 1
        for marker in set(MARKER.findall(json.dumps(call.params))):
            tries[marker].append(call.received_at)
    when = ", ".join(f"{n}×{status} at {s} s" for (s, status), n in sorted(by_second.items()))
    gaps = [b - a for times in tries.values() for a, b in itertools.pairwise(times)]
    most = max((len(t) for t in tries.values()), default=0)
    if not gaps:
        return f"{when}; at most {most} try per group"
    return (
        f"{when}; at most {most} tries per group, {min(gaps):.1f}-{max(gaps):.1f} s apart"
        f" (median {percentile(gaps, 0.5):.1f} s)"
    )


def queuebot_calls(sandbox: SlackSandbox, began: float) -> str:
    """queuebot's Slack calls since the push, per method and answer, with their time span."""
    seen: dict[tuple[str, int], list[float]] = defaultdict(list)
    for call in sandbox.calls():
        if call.method != INCOMING_WEBHOOK and call.received_at >= began:
            seen[(call.method, call.status)].append(call.received_at - began)
    return "; ".join(
        f"{method} {status}×{len(at)} ({min(at):.0f}-{max(at):.0f} s)"
        for (method, status), at in sorted(seen.items(), key=lambda kv: min(kv[1]))
    )


def failures_logged(log: str) -> str:
    """What Alertmanager logged about failed Slack notifications, in its own words."""
    failed = [line for line in log.splitlines() if 'err="slack/' in line]
    if not failed:
        return "no failed Slack notification"
    reasons = Counter(line[line.index('err="') :] for line in failed)
    return "; ".join(f"{n}× {reason}" for reason, n in reasons.most_common())


def row(path: Lane, pushed: dict[str, float]) -> list[str]:
    latencies = [at - pushed[m] for m, at in path.first_shown.items() if m in path.shown_now]
    stats = [f"{percentile(latencies, p):.1f} s" for p in (0.5, 0.95, 1.0)] if latencies else []
    return [
        path.name,
        str(len(path.shown_now)),
        str(len(pushed) - len(path.shown_now)),
        str(sum(1 for n in path.shown_now.values() if n > 1)),
        *(stats or ["-"] * 3),
        f"{path.requests} ({path.refused})",
    ]


def table(rows: list[list[str]]) -> str:
    head = ["path", "delivered", "lost", "duplicated", "p50", "p95", "max", "requests (refused)"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in [head, *rows]]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


async def run(args: argparse.Namespace, scratch: Path) -> int:
    sandbox = SlackSandbox(
        bot_token=BOT_TOKEN,
        signing_secret=SIGNING_SECRET,
        channel_name=QB_CHANNEL,
        enforce_rate_limits=args.slack_limit,
    )
    await sandbox.start()
    sandbox.add_channel(AM_CHANNEL)
    hook = sandbox.incoming.add(AM_CHANNEL)
    port = free_port()
    bot = am = keeper = recover = None
    try:
        channel = f"#{QB_CHANNEL}" if args.channel_by_name else sandbox.channel_id
        bot = await serve_process(sandbox, scratch / "queuebot.db", port, QUEUEBOT_CHANNEL=channel)
        queuebot_url = f"http://127.0.0.1:{port}/webhooks/grafana"
        config = alertmanager_config(hook, queuebot_url, args.group_interval)
        am = BenchAlertmanager(scratch / "alertmanager", config)
        await am.start()
        print_parameters(args)
        # Slack is rate limiting before the alerts arrive, and for --limited-seconds after.
        fault: Fault = sandbox.faults.add(
            status=args.status,
            retry_after=args.retry_after if args.status == 429 else None,
            count=10**9,
            after=args.after,
        )
        began, started = time.monotonic(), datetime.now(UTC)
        recover = asyncio.get_running_loop().call_later(
            args.limited_seconds, setattr, fault, "remaining", 0
        )
        pushed = await push_all(am, args.groups, started)
        keeper = asyncio.create_task(resend(am, args.groups, started))
        am_path, qb_path = Lane("Alertmanager slack_configs"), Lane("queuebot")
        drained = False
        while time.monotonic() - began < args.deadline:
            am_path.look(sandbox, AM_CHANNEL)
            qb_path.look(sandbox, QB_CHANNEL)
            if am_path.done(args.groups) and qb_path.done(args.groups):
                drained = await outbox_pending(port) == 0
                if drained:
                    break
            await asyncio.sleep(0.5)
        ended = time.monotonic() - began
        await asyncio.sleep(args.linger)
        am_path.look(sandbox, AM_CHANNEL)
        qb_path.look(sandbox, QB_CHANNEL)
        drained = await outbox_pending(port) == 0
        for call in sandbox.calls():
            path = am_path if call.method == INCOMING_WEBHOOK else qb_path
            if call.received_at >= began:
                path.requests += 1
                path.refused += call.status >= 400
        print(f"\nended {ended:.1f} s after the push (then watched {args.linger:.0f} s more)")
        print(table([row(am_path, pushed), row(qb_path, pushed)]))
        if len(am_path.shown_now) < args.groups:
            print(
                "lost: no message showed the group when the run ended; Alertmanager tries such"
                " a group again each group_interval while its alerts fire"
            )
        print(f"\nqueuebot's outbox drained: {'yes' if drained else 'NO'}")
        print(f"queuebot's messages in #{QB_CHANNEL}: {message_kinds(sandbox)}")
        print(f"Alertmanager's posts to Slack: {alertmanager_tries(sandbox, began)}")
        print(f"queuebot's calls to Slack: {queuebot_calls(sandbox, began)}")
        print(f"Alertmanager's log: {failures_logged(am.log_since_start())}")
        return 0 if drained else 1
    finally:
        if recover is not None:
            recover.cancel()
        if keeper is not None:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)
        if am is not None:
            await am.stop()
        if bot is not None:
            await stop_process(bot)
        await sandbox.stop()


def message_kinds(sandbox: SlackSandbox) -> str:
    kinds: Counter[str] = Counter()
    channel_id = sandbox.workspace.channel(QB_CHANNEL).id
    for message in sandbox.workspace.messages.get(channel_id, {}).values():
        kind = (message.metadata or {}).get("event_type", "no metadata")
        kinds[f"{kind}{' (reply)' if message.is_reply else ''}"] += 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))


def print_parameters(args: argparse.Namespace) -> None:
    print(
        f"groups: {args.groups} (one alert each), pushed in batches of {BATCH}, resent every"
        f" {RESEND_SECONDS:.0f} s\n"
        f"Alertmanager: {ALERTMANAGER}, group_wait 1s, group_interval {args.group_interval},"
        f" repeat_interval 4h\n"
        f"Slack: every call answers {args.status}"
        f"{f' (Retry-After: {args.retry_after})' if args.status == 429 else ''}"
        f"{' after doing what it was asked' if args.after else ''} for the first"
        f" {args.limited_seconds:.0f} s after the push, then recovers;"
        f" per-channel limit (~1/s, burst 3) {'on' if args.slack_limit else 'off'}\n"
        f"queuebot: QUEUEBOT_CHANNEL is the channel's"
        f" {'#name' if args.channel_by_name else 'ID'}\n"
        f"deadline {args.deadline:.0f} s, then {args.linger:.0f} s watching for duplicates"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=100, help="alert groups (max 9999)")
    parser.add_argument("--limited-seconds", type=float, default=45.0)
    parser.add_argument("--retry-after", type=int, default=10, help="Retry-After Slack sends")
    parser.add_argument(
        "--status", type=int, default=429, help="what Slack answers meanwhile (429, 500, 503)"
    )
    parser.add_argument(
        "--after",
        action="store_true",
        help="Slack posts the message, then answers --status (an answer lost on the way)",
    )
    parser.add_argument("--group-interval", default="1m", help="Alertmanager's group_interval")
    parser.add_argument("--deadline", type=float, default=200.0, help="seconds after the push")
    parser.add_argument("--linger", type=float, default=10.0)
    parser.add_argument(
        "--channel-by-name",
        action="store_true",
        help="give queuebot its channel as #name rather than its ID",
    )
    parser.add_argument(
        "--slack-limit",
        action="store_true",
        help="also enforce Slack's per-channel posting limit (~1 message/s, burst 3)",
    )
    args = parser.parse_args()
    if not 1 <= args.groups <= 9999:
        parser.error("--groups must be between 1 and 9999")
    if args.status != 429 and not 500 <= args.status <= 599:
        parser.error("--status must be 429 or a 5xx")
    if args.after and args.status == 429:
        parser.error("--after needs a 5xx --status: Slack posts nothing it answers 429")
    if not Path(ALERTMANAGER).exists():
        print(f"needs Alertmanager at {ALERTMANAGER} (Debian: prometheus-alertmanager)")
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="queuebot-vs-am-"))
    try:
        return asyncio.run(_main(args, scratch))
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _main(args: argparse.Namespace, scratch: Path) -> int:
    # SIGTERM stops the bench as Ctrl-C does: the finally blocks stop every process.
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        return await run(args, scratch)
    except asyncio.CancelledError:
        return 143


if __name__ == "__main__":
    sys.exit(main())
