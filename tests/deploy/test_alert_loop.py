"""The whole loop with real parts: GitHub's job events into a running queuebot, a real Prometheus
scraping its /metrics with the shipped `deploy/prometheus/rules.yml`, a real Alertmanager with
the shipped `deploy/alertmanager/alertmanager.yml` sending to queuebot's webhook, and the
alert's message in the local Slack channel, its numbers those of the job events.

The only changes to the shipped files are the test's addresses, the token file, and shorter
waits (Prometheus scrapes and evaluates every second; Alertmanager's group_wait is a second),
so a test takes seconds instead of minutes.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from testkit.alertmanager import Alertmanager
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import WEBHOOK_TOKEN, Stack, running_stack
from testkit.integration import require_binary
from testkit.prometheus import Prometheus

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
INSTALL = "apt-get install -y prometheus prometheus-alertmanager"


class LoopPrometheus(Prometheus):
    """Prometheus scraping the bot every second with the shipped rules, alerting `alertmanager`."""

    def __init__(self, binary: str, workdir: Path, bot: str, alertmanager: str) -> None:
        super().__init__(binary, workdir)
        self.bot, self.alertmanager = bot, alertmanager

    def config_text(self) -> str:
        return yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(DEPLOY / "prometheus" / "rules.yml")],
                "alerting": {
                    "alertmanagers": [{"static_configs": [{"targets": [self.alertmanager]}]}]
                },
                "scrape_configs": [
                    {"job_name": "queuebot", "static_configs": [{"targets": [self.bot]}]}
                ],
            }
        )

    async def query(self, expr: str) -> list[dict[str, Any]]:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{self.url}/api/v1/query", params={"query": expr}) as answer,
        ):
            result: list[dict[str, Any]] = (await answer.json())["data"]["result"]
            return result


class LoopAlertmanager(Alertmanager):
    """Alertmanager with the shipped configuration, sending to the bot at `webhook`."""

    ready_path = "/-/ready"

    def __init__(self, binary: str, workdir: Path, webhook: str) -> None:
        super().__init__(binary, workdir)
        self.webhook = webhook

    def arguments(self) -> list[str]:
        return [
            f"--config.file={self.config}",
            f"--storage.path={self.storage}",
            f"--web.listen-address={self.host}:{self.port}",
            "--cluster.listen-address=",
        ]

    def config_text(self) -> str:
        config = yaml.safe_load((DEPLOY / "alertmanager" / "alertmanager.yml").read_text())
        token = self.workdir / "queuebot-webhook-token"
        token.write_text(WEBHOOK_TOKEN)
        receiver = config["receivers"][0]["webhook_configs"][0]
        receiver["url"] = self.webhook
        receiver["http_config"]["authorization"]["credentials_file"] = str(token)
        config["route"].update(group_wait="1s", group_interval="1s")
        return yaml.safe_dump(config)


def queued(job_id: int, runner_type: str, minutes_ago: float, now: datetime) -> dict[str, Any]:
    created = now - timedelta(minutes=minutes_ago)
    return job_delivery("queued", job_id, created, labels=("self-hosted", runner_type))


async def send_all(stack: Stack, bodies: list[dict[str, Any]]) -> None:
    for body in bodies:
        status, answer = await deliver(stack.http, stack.url, body)
        assert status == 202, answer


async def evaluated(prometheus: LoopPrometheus, expr: str, count: int) -> None:
    """Wait until `expr` has answered in Prometheus, then `count` more rule evaluations."""
    async with asyncio.timeout(30):
        while not await prometheus.query(expr):  # noqa: ASYNC110
            await asyncio.sleep(0.2)
    await asyncio.sleep(count * 1.0 + 0.5)


def values_of(text: str) -> dict[str, str]:
    """The message's "*Name:* value" pairs."""
    return dict(re.findall(r"\*([A-Z][a-z ]+):\* ([0-9]+(?: min)?)", text))


async def test_job_events_become_the_alert_in_slack_and_a_healthy_fleet_posts_nothing(
    tmp_path: Path,
) -> None:
    prometheus_binary = require_binary("prometheus", INSTALL)
    alertmanager_binary = require_binary("prometheus-alertmanager", INSTALL)
    now = datetime.now(UTC)
    async with running_stack(tmp_path / "bot", GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
        bot = stack.url.removeprefix("http://")
        alertmanager = LoopAlertmanager(
            alertmanager_binary, tmp_path / "am", f"{stack.url}/webhooks/grafana"
        )
        await alertmanager.start()
        prometheus = LoopPrometheus(
            prometheus_binary, tmp_path / "prom", bot, f"127.0.0.1:{alertmanager.port}"
        )
        await prometheus.start()
        try:
            # A healthy fleet: many jobs queued but none long, a long wait for few, the rest
            # taken at once.
            healthy = [queued(100 + i, "linux.4xlarge", 20 + i, now) for i in range(12)]
            healthy += [queued(200 + i, "linux.12xlarge", 90 - i, now) for i in range(5)]
            started = now - timedelta(minutes=50)
            healthy += [
                job_delivery(
                    "in_progress",
                    300 + i,
                    started - timedelta(minutes=3),
                    started=started,
                    labels=("self-hosted", "linux.2xlarge"),
                )
                for i in range(8)
            ]
            await send_all(stack, healthy)
            await evaluated(prometheus, 'queuebot_queued_jobs{runner_type="linux.4xlarge"}', 3)
            assert await prometheus.query("ALERTS") == []
            assert stack.sandbox.messages() == []
            (series,) = await prometheus.query('queuebot_queued_jobs{runner_type="linux.4xlarge"}')
            assert series["value"][1] == "12"

            # Now linux.2xlarge queues: 14 jobs waiting, the longest 114 minutes.
            at = datetime.now(UTC)
            crossing = [queued(400 + i, "linux.2xlarge", 114 - 7 * i, at) for i in range(14)]
            await send_all(stack, crossing)
            (parent,) = await stack.parents(1, timeout=40)
            await stack.settled()
            text = stack.text(parent)
            assert "linux.2xlarge" in text
            assert "linux.4xlarge" not in text and "linux.12xlarge" not in text
            assert values_of(text) == {"Jobs queued": "14", "Longest wait": "114 min"}
            assert "P2" in text
            firing = await prometheus.query("ALERTS")
            assert [a["metric"]["runner_type"] for a in firing] == ["linux.2xlarge"]
            # One alert, one message: nothing else was posted.
            await asyncio.sleep(2)
            assert len(stack.sandbox.messages()) == 1
            assert json.dumps(parent.blocks).count("Jobs are queueing") >= 1

            # Runners take the jobs: the queue empties, the alert resolves, the message says so.
            taken = datetime.now(UTC)
            await send_all(
                stack,
                [
                    job_delivery(
                        "in_progress",
                        400 + i,
                        at - timedelta(minutes=114 - 7 * i),
                        started=taken,
                        labels=("self-hosted", "linux.2xlarge"),
                    )
                    for i in range(14)
                ],
            )

            def resolved_parent() -> Any:
                message = stack.sandbox.messages()[0]
                return message if "Resolved" in stack.text(message) else None

            resolved = await stack.sandbox.wait_for(resolved_parent, timeout=40)
            assert len(stack.sandbox.messages()) == 1
            assert "linux.2xlarge" in stack.text(resolved)
        finally:
            await prometheus.stop()
            await alertmanager.stop()
