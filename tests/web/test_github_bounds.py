"""What a workflow_job delivery may carry, on both backends: ids past a signed 64-bit integer, a
NUL in a name, a time before GitHub or far past the bot's clock, labels and names beyond their
bounds each get 400 with the field and the reason, nothing is stored, and the deliveries after
them are taken as before."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.domain.clock import Clock
from bot.web.routes import EDGES
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import Stack, running_stack
from testkit.postgres import fresh_database

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
NOW = T0 + timedelta(minutes=30)
WEEK = 7 * 86400.0


def _set(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        body["workflow_job"][field] = value

    return change


BAD: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "id past 2^63": (_set("id", 2**63), "workflow_job.id"),
    "run_id past 2^63": (_set("run_id", 2**64), "workflow_job.run_id"),
    "run_attempt past 2^63": (_set("run_attempt", 2**63), "workflow_job.run_attempt"),
    "NUL in the job's name": (_set("name", "build\x00test"), "workflow_job.name"),
    "NUL in a label": (_set("labels", ["self-hosted", "linux\x00x"]), "workflow_job.labels.1"),
    "a year-one time east of UTC": (
        _set("created_at", "0001-01-01T00:00:00+01:00"),
        "workflow_job.created_at",
    ),
    "a time before GitHub": (_set("created_at", "1999-12-31T23:00:00Z"), "workflow_job.created_at"),
    "a time in the year 9999": (
        _set("created_at", "9999-01-01T00:00:00Z"),
        "workflow_job.created_at",
    ),
    "a 4,000-character label": (
        _set("labels", ["self-hosted", "x" * 4000]),
        "workflow_job.labels.1",
    ),
    "101 labels": (_set("labels", [f"l{i}" for i in range(101)]), "workflow_job.labels"),
    "a 900 KB branch": (_set("head_branch", "b" * 900_000), "workflow_job.head_branch"),
    "a 10,000-character runner name": (
        _set("runner_name", "r" * 10_000),
        "workflow_job.runner_name",
    ),
}


@asynccontextmanager
async def _stack(tmp_path: Path, backend: str) -> AsyncIterator[Stack]:
    env = {"GITHUB_WEBHOOK_SECRET": HOOK_SECRET}
    clock = Clock.at(NOW)  # the bot's clock, fixed
    if backend == "sqlite":
        async with running_stack(tmp_path, clock=clock, **env) as stack:
            yield stack
    else:
        async with (
            fresh_database() as url,
            running_stack(tmp_path, clock=clock, QUEUEBOT_DATABASE=url, **env) as stack,
        ):
            yield stack


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
async def test_out_of_bounds_deliveries_get_400_and_store_nothing(
    tmp_path: Path, backend: str
) -> None:
    async with _stack(tmp_path, backend) as stack:
        for number, (what, (change, field)) in enumerate(BAD.items(), start=1):
            body = job_delivery("queued", 100 + number, T0)
            change(body)
            status, answer = await deliver(stack.http, stack.url, body)
            assert status == 400, (what, status, answer)
            assert any(d["field"] == field for d in answer["details"]), (what, answer)
        store = stack.app[EDGES].store
        assert await store.queued_jobs(NOW.timestamp(), 300.0, WEEK) == []
        status, _ = await deliver(stack.http, stack.url, job_delivery("queued", 7, T0))
        assert status == 202
        (queued,) = await store.queued_jobs(NOW.timestamp(), 300.0, WEEK)
        assert queued.runner_type == "linux.2xlarge"


async def test_a_job_a_day_ahead_is_taken_and_one_two_days_ahead_is_not(tmp_path: Path) -> None:
    """Clocks differ: a day ahead of the bot's is a skew, more is a time no job has yet."""
    async with _stack(tmp_path, "sqlite") as stack:
        soon = job_delivery("queued", 1, NOW + timedelta(hours=23))
        assert (await deliver(stack.http, stack.url, soon))[0] == 202
        later = job_delivery("queued", 2, NOW + timedelta(days=2))
        status, answer = await deliver(stack.http, stack.url, later)
        assert status == 400
        assert "more than a day ahead" in str(answer["details"])
