"""The fleet's own numbers on /metrics, scraped from a running queuebot fed GitHub's job events:
each runner type's queued jobs exactly as the alert counts them and its longest wait; the
totals counted once per delivery whatever the order; a bounded number of runner types, the rest
as `other`, names escaped; two replicas on one database telling the same numbers; GitHub's
runners per type."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from queuebot_lab.sandbox.github import GitHubSandbox, SandboxRunner
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import Stack, running_stack
from testkit.postgres import fresh_database

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(url: str) -> Samples:
    async with aiohttp.ClientSession() as http, http.get(f"{url}/metrics") as answer:
        assert answer.status == 200
        text = await answer.text()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith(("queuebot_queue", "queuebot_job", "queuebot_runners"))
    }


def per_type(samples: Samples, name: str) -> dict[str, float]:
    return {
        dict(labels)["runner_type"]: value
        for (found, labels), value in samples.items()
        if found == name and len(labels) == 1
    }


async def send(stack: Stack, *bodies: dict[str, Any], delivery: str | None = None) -> None:
    for body in bodies:
        extra = {"delivery": delivery} if delivery else {}
        status, answer = await deliver(stack.http, stack.url, body, **extra)
        assert status in (200, 202), answer


def queued(job_id: int, runner_type: str, created: datetime, **more: Any) -> dict[str, Any]:
    return job_delivery("queued", job_id, created, labels=("self-hosted", runner_type), **more)


async def test_queued_jobs_and_longest_wait_are_the_alerts(tmp_path: Path) -> None:
    now = datetime.now(UTC)

    def ago(minutes: float) -> datetime:
        return now - timedelta(minutes=minutes)

    bodies = [
        # linux.2xlarge: 3 count (over 5 minutes), the longest 2 hours; one of 2 minutes not.
        queued(1, "linux.2xlarge", ago(120)),
        queued(2, "linux.2xlarge", ago(61)),
        queued(3, "linux.2xlarge", ago(6)),
        queued(4, "linux.2xlarge", ago(2)),
        # Taken by a runner after 10 minutes: no longer queued.
        queued(5, "linux.2xlarge", ago(30)),
        job_delivery("in_progress", 5, ago(30), started=ago(20)),
        # Held for an environment's approval: not queueing.
        job_delivery("waiting", 6, ago(50), labels=("self-hosted", "linux.2xlarge")),
        # Older than a week: taken for lost.
        queued(7, "linux.2xlarge", ago(8 * 24 * 60)),
        # Cancelled while queued: no longer queued.
        queued(8, "linux.4xlarge", ago(40)),
        job_delivery(
            "completed",
            8,
            ago(40),
            completed=ago(35),
            labels=("self-hosted", "linux.4xlarge"),
            taken=False,
        ),
        queued(9, "linux.4xlarge", ago(15)),
        # Left out as the alert leaves them out: rocm, and a repository not counted.
        queued(10, "linux.rocm.gpu", ago(90)),
        queued(11, "linux.4xlarge", ago(90), repository="someone/else"),
        # One label only: the type is that label (the alert's rule).
        job_delivery("queued", 12, ago(45), labels=("linux.12xlarge",)),
    ]
    config = tmp_path / "queuebot.yml"
    config.write_text("jobs:\n  repositories: [pytorch/*]\n")
    async with running_stack(
        tmp_path / "bot", GITHUB_WEBHOOK_SECRET=HOOK_SECRET, QUEUEBOT_CONFIG=str(config)
    ) as stack:
        await send(stack, *bodies)
        samples = await scrape(stack.url)
        scraped = datetime.now(UTC)
    assert per_type(samples, "queuebot_queued_jobs") == {
        "linux.2xlarge": 3,
        "linux.4xlarge": 1,
        "linux.12xlarge": 1,
    }
    longest = per_type(samples, "queuebot_queue_longest_wait_seconds")
    assert set(longest) == {"linux.2xlarge", "linux.4xlarge", "linux.12xlarge"}
    for name, created in (
        ("linux.2xlarge", ago(120)),
        ("linux.4xlarge", ago(15)),
        ("linux.12xlarge", ago(45)),
    ):
        truth = (scraped - created).total_seconds()
        # GitHub writes whole seconds: a job created at 12:00:00.7 is sent as 12:00:00.
        assert truth - 60 <= longest[name] <= truth + 1, name


async def test_totals_count_each_job_once_whatever_the_order(tmp_path: Path) -> None:
    created = datetime.now(UTC) - timedelta(hours=2)
    started, done = created + timedelta(seconds=200), created + timedelta(seconds=1400)

    def body(action: str, job_id: int, **more: Any) -> dict[str, Any]:
        return job_delivery(action, job_id, created, started=started, completed=done, **more)

    async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
        # Completed first, then in progress, then queued, and a redelivery.
        await send(stack, body("completed", 21), delivery="c21")
        await send(stack, body("completed", 21), delivery="c21")
        await send(stack, body("in_progress", 21), body("queued", 21))
        # A second job fails; a third is queued still.
        await send(stack, body("queued", 22), body("completed", 22, conclusion="failure"))
        await send(stack, body("queued", 23))
        samples = await scrape(stack.url)
    kind = (("runner_type", "linux.2xlarge"),)
    assert samples[("queuebot_jobs_queued_total", kind)] == 3
    assert samples[("queuebot_jobs_started_total", kind)] == 2
    assert samples[("queuebot_job_run_seconds_total", kind)] == 2 * 1200
    completed = {
        dict(labels)["conclusion"]: value
        for (name, labels), value in samples.items()
        if name == "queuebot_jobs_completed_total"
    }
    assert completed == {"success": 1, "failure": 1}
    assert samples[("queuebot_job_queue_seconds_count", kind)] == 2
    assert samples[("queuebot_job_queue_seconds_sum", kind)] == 400
    buckets = {
        dict(labels)["le"]: value
        for (name, labels), value in samples.items()
        if name == "queuebot_job_queue_seconds_bucket"
    }
    assert (buckets["120.0"], buckets["300.0"], buckets["+Inf"]) == (0, 2, 2)


async def test_runner_types_are_bounded_and_their_names_escaped(tmp_path: Path) -> None:
    hostile = 'gpu"}\nqueuebot_queued_jobs{runner_type="x'
    names = ["linux.2xlarge", "linux.4xlarge", hostile, "windows.4xlarge"]
    config = tmp_path / "queuebot.yml"
    config.write_text("jobs:\n  metrics_runner_types: 3\n")
    ago = datetime.now(UTC) - timedelta(minutes=30)
    async with running_stack(
        tmp_path / "bot", GITHUB_WEBHOOK_SECRET=HOOK_SECRET, QUEUEBOT_CONFIG=str(config)
    ) as stack:
        for index, name in enumerate(names):
            # Each type first seen a minute after the one before; two jobs each.
            first = ago + timedelta(minutes=index)
            await send(stack, queued(100 + index, name, first), queued(200 + index, name, first))
        samples = await scrape(stack.url)
    assert per_type(samples, "queuebot_queued_jobs") == {
        "linux.2xlarge": 2,
        "linux.4xlarge": 2,
        hostile: 2,
        "other": 2,
    }
    assert per_type(samples, "queuebot_jobs_queued_total")["other"] == 2


async def test_two_replicas_on_one_database_tell_the_same_fleet(tmp_path: Path) -> None:
    ago = datetime.now(UTC) - timedelta(minutes=40)
    async with (
        fresh_database() as url,
        running_stack(
            tmp_path / "a", GITHUB_WEBHOOK_SECRET=HOOK_SECRET, QUEUEBOT_DATABASE=url
        ) as first,
        running_stack(
            tmp_path / "b", GITHUB_WEBHOOK_SECRET=HOOK_SECRET, QUEUEBOT_DATABASE=url
        ) as second,
    ):
        for job_id in range(10):
            stack = first if job_id % 2 else second
            await send(stack, queued(300 + job_id, "linux.2xlarge", ago))
        # Each job's start goes to the other replica.
        for job_id in range(4):
            stack = second if job_id % 2 else first
            body = job_delivery(
                "in_progress", 300 + job_id, ago, started=ago + timedelta(seconds=90)
            )
            await send(stack, body)
        one, other = await scrape(first.url), await scrape(second.url)
    kind = (("runner_type", "linux.2xlarge"),)
    wait = ("queuebot_queue_longest_wait_seconds", kind)
    assert abs(one.pop(wait) - other.pop(wait)) < 5
    assert one == other
    assert one[("queuebot_queued_jobs", kind)] == 6
    assert one[("queuebot_jobs_queued_total", kind)] == 10
    assert one[("queuebot_jobs_started_total", kind)] == 4


async def test_runners_per_type_from_githubs_list(tmp_path: Path) -> None:
    github = GitHubSandbox("ghp-runners-token")
    github.runners += [
        SandboxRunner(1, "a", ("linux.2xlarge",)),
        SandboxRunner(2, "b", ("linux.2xlarge",), busy=True),
        SandboxRunner(3, "c", ("linux.2xlarge",), status="offline"),
        SandboxRunner(4, "d", ("linux.rocm.gpu",)),
    ]
    await github.start()
    try:
        async with running_stack(
            tmp_path,
            GITHUB_WEBHOOK_SECRET=HOOK_SECRET,
            GITHUB_TOKEN=github.token,
            GITHUB_ORG=github.org,
            GITHUB_API_URL=github.url,
        ) as stack:
            await send(stack, queued(1, "linux.2xlarge", datetime.now(UTC)))
            samples = await scrape(stack.url)
            for _ in range(100):  # the first scrape starts the listing; a later one has it
                if per_type(samples, "queuebot_runners_online"):
                    break
                await asyncio.sleep(0.05)
                samples = await scrape(stack.url)
    finally:
        await github.stop()
    assert per_type(samples, "queuebot_runners_online") == {"linux.2xlarge": 2}
    assert per_type(samples, "queuebot_runners_offline") == {"linux.2xlarge": 1}
    assert per_type(samples, "queuebot_runners_busy") == {"linux.2xlarge": 1}
