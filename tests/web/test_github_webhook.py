"""POST /webhooks/github: GitHub's workflow_job deliveries, verified, deduplicated and merged
into one state per job however late, doubled or out of order they come."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest

from bot.web.routes import EDGES
from testkit.github import HOOK_SECRET, deliver, fixture, hook_headers, job_delivery
from testkit.harness import Stack, running_stack

#: A day ago on the hour: the stack keeps jobs for 14 days by the machine's clock, so the
#: deliveries' times must follow it.
T0 = (datetime.now(UTC) - timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
MINUTE = timedelta(minutes=1)
WEEK = 7 * 86400.0


async def _queued(stack: Stack, at: datetime) -> list[tuple[str, float]]:
    """(runner type, seconds waited) of each job queued at `at` for 5 minutes or more."""
    jobs = await stack.app[EDGES].store.queued_jobs(at.timestamp(), 300.0, WEEK)
    return sorted((j.runner_type, at.timestamp() - j.created_at) for j in jobs)


async def _send(stack: Stack, body: object, **headers: object) -> tuple[int, dict[str, object]]:
    return await deliver(stack.http, stack.url, body, **headers)  # type: ignore[arg-type]


class TestVerification:
    @pytest.mark.parametrize("secret", [None, "not-the-hook-secret"])
    async def test_unsigned_or_wrongly_signed_is_refused_and_nothing_stored(
        self, tmp_path: Path, secret: str | None
    ) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            body = job_delivery("queued", 11, T0)
            status, answer = await _send(stack, body, secret=secret)
            assert status == 401
            assert "unauthorized" in str(answer["error"])
            assert await _queued(stack, T0 + 10 * MINUTE) == []

    async def test_ping_is_answered(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            status, answer = await _send(
                stack, fixture("octokit_ping_with-organization.payload.json"), event="ping"
            )
            assert (status, answer) == (200, {"status": "pong"})

    async def test_without_a_secret_the_route_says_how_to_turn_it_on(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path) as stack:
            status, answer = await _send(stack, job_delivery("queued", 11, T0))
            assert status == 404
            assert "GITHUB_WEBHOOK_SECRET" in str(answer["error"])

    async def test_the_form_content_type_is_taken_too(self, tmp_path: Path) -> None:
        """A hook may be set to application/x-www-form-urlencoded: the JSON in `payload`."""
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            raw = urlencode({"payload": json.dumps(job_delivery("queued", 11, T0))}).encode()
            status, _ = await _send(stack, raw, content_type="application/x-www-form-urlencoded")
            assert status == 202
            assert await _queued(stack, T0 + 10 * MINUTE) == [("linux.2xlarge", 600.0)]

    async def test_plain_text_is_415(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            raw = json.dumps(job_delivery("queued", 11, T0)).encode()
            status, _ = await _send(stack, raw, content_type="text/plain")
            assert status == 415


class TestDeliveries:
    async def test_each_documented_delivery_is_taken(self, tmp_path: Path) -> None:
        """GitHub's own example bodies, as they are."""
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            for name in (
                "octokit_workflow_job_queued.payload.json",
                "octokit_workflow_job_queued.with-deployment.payload.json",
                "octokit_workflow_job_waiting.payload.json",
                "octokit_workflow_job_in_progress.payload.json",
                "octokit_workflow_job_in_progress.with-queued-steps.payload.json",
                "octokit_workflow_job_completed.success.with-organization.payload.json",
                "octokit_workflow_job_completed.failure.with-organization.payload.json",
            ):
                status, answer = await _send(stack, fixture(name))
                assert (status, answer["status"]) == (202, "recorded"), name

    async def test_a_redelivery_is_recorded_once(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            body = job_delivery("queued", 11, T0)
            first = await _send(stack, body, delivery="d-1")
            again = await _send(stack, body, delivery="d-1")
            assert (first[0], again) == (202, (200, {"status": "duplicate"}))

    async def test_out_of_order_deliveries_end_where_the_job_is(self, tmp_path: Path) -> None:
        """completed before in_progress, queued last: the job is done, its wait the one its
        own timestamps give."""
        started, done = T0 + 3 * MINUTE, T0 + 20 * MINUTE
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            for action in ("completed", "in_progress", "queued"):
                body = job_delivery(action, 11, T0, started=started, completed=done)
                assert (await _send(stack, body))[0] == 202
            store = stack.app[EDGES].store
            activity = await store.job_activity(T0.timestamp(), (T0 + 30 * MINUTE).timestamp())
            assert [(r.runner_type, r.seconds) for r in activity.starts] == [
                ("linux.2xlarge", 180.0)
            ]
            assert [r.seconds for r in activity.completions] == [1020.0]
            assert await _queued(stack, T0 + 10 * MINUTE) == []

    async def test_a_job_is_queued_until_a_runner_takes_it(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            await _send(stack, job_delivery("queued", 11, T0))
            assert await _queued(stack, T0 + 4 * MINUTE) == []  # not 5 minutes yet
            assert await _queued(stack, T0 + 90 * MINUTE) == [("linux.2xlarge", 5400.0)]
            taken = T0 + 100 * MINUTE
            await _send(stack, job_delivery("in_progress", 11, T0, started=taken))
            assert await _queued(stack, T0 + 99 * MINUTE) == [("linux.2xlarge", 5940.0)]
            assert await _queued(stack, T0 + 101 * MINUTE) == []

    async def test_waiting_for_approval_is_not_queueing(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            await _send(stack, job_delivery("waiting", 11, T0))
            assert await _queued(stack, T0 + 30 * MINUTE) == []
            await _send(stack, job_delivery("queued", 11, T0))
            assert await _queued(stack, T0 + 30 * MINUTE) == [("linux.2xlarge", 1800.0)]

    async def test_a_job_cancelled_while_queued_leaves_the_queue_unstarted(
        self, tmp_path: Path
    ) -> None:
        cancelled = T0 + 30 * MINUTE
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            await _send(stack, job_delivery("queued", 11, T0))
            body = job_delivery(
                "completed", 11, T0, completed=cancelled, conclusion="cancelled", taken=False
            )
            assert (await _send(stack, body))[0] == 202
            assert await _queued(stack, T0 + 20 * MINUTE) == [("linux.2xlarge", 1200.0)]
            assert await _queued(stack, T0 + 40 * MINUTE) == []
            store = stack.app[EDGES].store
            activity = await store.job_activity(T0.timestamp(), (T0 + 60 * MINUTE).timestamp())
            assert activity.starts == [] and activity.completions == []

    async def test_lost_jobs_stop_counting_after_the_maximum_age(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            await _send(stack, job_delivery("queued", 11, T0))
            assert await _queued(stack, T0 + timedelta(days=6)) != []
            assert await _queued(stack, T0 + timedelta(days=8)) == []

    @pytest.mark.parametrize(
        ("labels", "runner_type"),
        [
            (("self-hosted", "linux.2xlarge"), "linux.2xlarge"),
            (("linux.4xlarge",), "linux.4xlarge"),
            (("self-hosted", "linux.g5.4xlarge.nvidia.gpu", "gpu"), "linux.g5.4xlarge.nvidia.gpu"),
        ],
    )
    async def test_the_runner_type_is_the_reference_alerts_machine_type(
        self, tmp_path: Path, labels: tuple[str, ...], runner_type: str
    ) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            await _send(stack, job_delivery("queued", 11, T0, labels=labels))
            assert await _queued(stack, T0 + 6 * MINUTE) == [(runner_type, 360.0)]

    async def test_a_body_that_is_no_workflow_job_is_400_with_the_field(
        self, tmp_path: Path
    ) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            body = job_delivery("queued", 11, T0)
            del body["workflow_job"]["created_at"]
            status, answer = await _send(stack, body)
            assert status == 400
            assert any("created_at" in d["field"] for d in answer["details"])  # type: ignore[index, union-attr]

    async def test_an_action_github_may_add_later_is_ignored(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            body = job_delivery("queued", 11, T0)
            body["action"] = "requested"
            assert await _send(stack, body) == (
                200,
                {"status": "ignored", "reason": "action requested"},
            )

    async def test_another_event_is_ignored(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, GITHUB_WEBHOOK_SECRET=HOOK_SECRET) as stack:
            raw = json.dumps({"zen": "x"}).encode()
            async with stack.http.post(
                f"{stack.url}/webhooks/github", data=raw, headers=hook_headers(raw, event="push")
            ) as response:
                assert response.status == 200
                assert (await response.json())["status"] == "ignored"
