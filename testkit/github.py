"""GitHub webhook deliveries for tests: GitHub's documented bodies (tests/fixtures/github/),
varied, and sent signed with the headers GitHub sends."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import aiohttp

from testkit.payloads import FIXTURES

#: The hook's secret the test bots know (GITHUB_WEBHOOK_SECRET).
HOOK_SECRET = "test-github-hook-secret"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "github" / name).read_text())
    return data


def _iso(when: datetime | None) -> str | None:
    return None if when is None else when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_delivery(
    action: str,
    job_id: int,
    created: datetime,
    *,
    started: datetime | None = None,
    completed: datetime | None = None,
    labels: tuple[str, ...] = ("self-hosted", "linux.2xlarge"),
    workflow: str = "pull",
    name: str = "build",
    repository: str = "pytorch/pytorch",
    conclusion: str | None = None,
    taken: bool | None = None,
) -> dict[str, Any]:
    """A workflow_job body as GitHub sends it for `action`, built on GitHub's own example:
    `started_at` equals `created_at` until a runner took the job, which `taken` (default: the
    action is in_progress or completed) says, with the runner fields and steps it brings."""
    source = {
        "queued": "octokit_workflow_job_queued.payload.json",
        "waiting": "octokit_workflow_job_waiting.payload.json",
        "in_progress": "octokit_workflow_job_in_progress.payload.json",
        "completed": "octokit_workflow_job_completed.success.with-organization.payload.json",
    }[action]
    body = copy.deepcopy(fixture(source))
    if taken is None:
        taken = action in ("in_progress", "completed")
    job = body["workflow_job"]
    job.update(
        {
            "id": job_id,
            "run_id": job_id // 10,
            "html_url": f"https://github.com/{repository}/actions/runs/{job_id // 10}/job/{job_id}",
            "status": action,
            "workflow_name": workflow,
            "name": name,
            "labels": list(labels),
            "created_at": _iso(created),
            "started_at": _iso(started if taken and started else created),
            "completed_at": _iso(completed) if action == "completed" else None,
            "conclusion": (conclusion or "success") if action == "completed" else None,
        }
    )
    if taken:
        job.update(
            {
                "runner_id": 7,
                "runner_name": "runner-7",
                "runner_group_id": 1,
                "runner_group_name": "Default",
            }
        )
        job["steps"] = job.get("steps") or [
            {
                "name": "Set up job",
                "status": "completed",
                "conclusion": "success",
                "number": 1,
                "started_at": _iso(started),
                "completed_at": _iso(started),
            }
        ]
    else:
        job.update(
            {
                "runner_id": None,
                "runner_name": None,
                "runner_group_id": None,
                "runner_group_name": None,
                "steps": [],
            }
        )
    body["action"] = action
    body["repository"]["full_name"] = repository
    return body


def signed(body: bytes, secret: str = HOOK_SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def hook_headers(
    body: bytes,
    event: str = "workflow_job",
    delivery: str | None = None,
    secret: str | None = HOOK_SECRET,
    content_type: str = "application/json",
) -> dict[str, str]:
    """The headers GitHub sends with a delivery (a new delivery id unless given)."""
    headers = {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "4242",
        "X-GitHub-Hook-Installation-Target-Type": "organization",
        "X-GitHub-Hook-Installation-Target-ID": "21031067",
        "User-Agent": "GitHub-Hookshot/2d7d0a3",
        "Content-Type": content_type,
    }
    if secret is not None:
        headers["X-Hub-Signature-256"] = signed(body, secret)
    return headers


async def deliver(
    http: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any] | bytes,
    **headers: Any,
) -> tuple[int, dict[str, Any]]:
    """POST a delivery to the bot at `url` as GitHub does; the status and JSON answer."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with http.post(
        f"{url}/webhooks/github", data=raw, headers=hook_headers(raw, **headers)
    ) as response:
        return response.status, await response.json()
