"""How fast the bot acks each interaction: Slack shows the clicker an error after 3 seconds.

Runs the bot against the local Slack workspace, the local Grafana silence API and a simulated
fleet as GitHub tells of it (two days of job events in the store, the runners list served by
the GitHub REST stand-in), opens one incident and repeats the on-call's round: Run diagnostics,
Silence… (the ack, and the modal open, which must happen within the click's 3-second trigger),
the modal's submission, Unsilence and /queue-status. Prints p50/p95/p99/max per interaction.

    python bench/acks.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.slack.contract import ActionId, SilenceInput
from bot.store import open_store
from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.sandbox.grafana import GrafanaSandbox
from queuebot_lab.sandbox.slack import ONCALL_USER, PostedMessage
from queuebot_lab.simulator import Scenario, SimulationSpec, simulate_jobs
from queuebot_lab.simulator.deliveries import history_bodies
from testkit.github_fleet import TOKEN, sandbox_runners
from testkit.harness import Stack, running_stack
from testkit.payloads import reference

SLACK_ACK_SECONDS = 3.0


def summary(name: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (
        f"{name:24} n={len(ms)} p50={statistics.median(ms):5.0f} ms"
        f" p95={percentile(ms, 0.95):5.0f} ms p99={percentile(ms, 0.99):5.0f} ms"
        f" max={max(ms):5.0f} ms"
    )


def _buttons(stack: Stack, parent: PostedMessage) -> str:
    current = stack.sandbox.message(None, parent.ts) or parent
    return json.dumps(current.blocks)


async def one_round(stack: Stack, parent: PostedMessage, times: dict[str, list[float]]) -> None:
    sandbox, channel = stack.sandbox, stack.sandbox.channel_id
    reports = len(sandbox.replies(None, parent.ts))
    click = await sandbox.click(channel, parent.ts, ActionId.RUN_DIAGNOSTICS.value)
    times["Run diagnostics"].append(click.elapsed)
    await sandbox.wait_for(lambda: len(sandbox.replies(None, parent.ts)) > reports, timeout=30)
    await stack.settled(timeout=30)

    views = len(sandbox.views)
    began = time.monotonic()
    click = await sandbox.click(channel, parent.ts, ActionId.SILENCE.value)
    times["Silence… ack"].append(click.elapsed)
    view = await sandbox.wait_for(lambda: sandbox.views[views:][:1], timeout=10)
    times["Silence… modal open"].append(time.monotonic() - began)
    values = {SilenceInput.DURATION.value: {SilenceInput.DURATION.value: "1h"}}
    submitted = await sandbox.submit_view(view[0].id, values, ONCALL_USER)
    times["modal submission"].append(submitted.elapsed)
    await sandbox.wait_for(lambda: ActionId.UNSILENCE.value in _buttons(stack, parent), timeout=10)

    click = await sandbox.click(channel, parent.ts, ActionId.UNSILENCE.value)
    times["Unsilence"].append(click.elapsed)
    await sandbox.wait_for(lambda: ActionId.SILENCE.value in _buttons(stack, parent), timeout=10)

    # A new person each round: one person is allowed only a few asks a minute.
    asker = sandbox.workspace.add_user(f"U0BENCH{len(times['/queue-status']):04d}", "oncall")
    command = await sandbox.slash_command("/queue-status", "", user_id=asker.id)
    times["/queue-status"].append(command.elapsed)
    await stack.settled(timeout=30)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    spec = SimulationSpec(
        scenario=Scenario.MIX,
        hours=2 * 24,
        runner_types=8,
        seed=1,
        end=datetime.now(UTC).replace(microsecond=0),
        step_seconds=120,
    )
    work = Path(tempfile.mkdtemp(prefix="queuebot-acks-"))
    config = work / "queuebot.yml"
    config.write_text("auto_diagnose: false\n")
    times: dict[str, list[float]] = {
        name: []
        for name in (
            "Run diagnostics",
            "Silence… ack",
            "Silence… modal open",
            "modal submission",
            "Unsilence",
            "/queue-status",
        )
    }
    try:
        fleet = await asyncio.to_thread(simulate_jobs, spec)
        store = await open_store(str(work / "queuebot.db"))
        try:
            bodies = history_bodies(list(fleet.jobs), fleet.end)
            await load_history(store, bodies, JobsConfig(), remember_until=0.0)
        finally:
            await store.close()
        async with GitHubSandbox(TOKEN) as github, GrafanaSandbox(token="glsa_bench") as grafana:
            github.runners = sandbox_runners(fleet.runners)
            env = {
                "GITHUB_TOKEN": TOKEN,
                "GITHUB_ORG": github.org,
                "GITHUB_API_URL": github.url,
                "GRAFANA_URL": grafana.url,
                "GRAFANA_TOKEN": "glsa_bench",
                "QUEUEBOT_CONFIG": str(config),
            }
            async with running_stack(work, **env) as stack:
                await stack.webhook(reference())
                (parent,) = await stack.parents(1)
                await stack.settled()
                for _ in range(args.rounds):
                    await one_round(stack, parent, times)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.rounds} rounds against the local workspace, Grafana and a simulated fleet")
    worst = 0.0
    for name, seconds in times.items():
        print(summary(name, seconds))
        worst = max(worst, percentile(seconds, 0.99))
    print(f"every p99 within Slack's {SLACK_ACK_SECONDS:g} s: {worst < SLACK_ACK_SECONDS}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
