"""A run as GitHub tells of it: `workflow_job` deliveries and the self-hosted runners list.

Written from GitHub's documentation ("Webhook events and payloads: workflow_job", "REST API
endpoints for self-hosted runners") and the payload examples GitHub's own libraries carry:

- a job's deliveries are `queued`, `in_progress` and `completed`; while queued `started_at`
  already holds the creation time and the runner fields are null; timestamps are whole seconds
  in UTC with a `Z`; a job cancelled while it waited is `completed` with conclusion
  `cancelled`, no runner, and `started_at` still its creation time; a re-run keeps its run id
  with `run_attempt` 2;
- GitHub does not promise an order: now and then `in_progress` comes before `queued`, and a
  delivery is sent twice;
- the runners list names each runner's labels with their type (`read-only` for the ones GitHub
  gives every runner, `custom` for the rest); ARC's runners are listed from the moment ARC
  registers them (offline while their pod starts), a VM fleet's once their machine booted; a
  lost runner stays listed offline until it is removed.
"""

from __future__ import annotations

import functools
import random
import time
import zlib
from collections.abc import Iterator
from typing import Any

from fleetmodel.engine import FleetRun, Job, Runner


def _stamp(seconds: float | None) -> str | None:
    """GitHub's time, to the second in UTC (`2026-11-27T03:21:09Z`)."""
    if seconds is None:
        return None
    day, second = divmod(int(seconds), 86400)
    return _date(day) + _clock(second)


@functools.cache
def _date(day: int) -> str:
    """The date of `day` days since 1970-01-01."""
    t = time.gmtime(day * 86400)
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"


@functools.cache
def _clock(second: int) -> str:
    """The time of day `second` seconds after midnight, with the `T` before it and the `Z`."""
    minute, second = divmod(second, 60)
    hour, minute = divmod(minute, 60)
    return f"T{hour:02d}:{minute:02d}:{second:02d}Z"


@functools.cache
def _repository(org: str, name: str) -> dict[str, Any]:
    full = f"{org}/{name}"
    return {
        "id": zlib.crc32(full.encode()) % 900_000_000 + 100_000_000,
        "name": name,
        "full_name": full,
        "private": True,
        "html_url": f"https://github.com/{full}",
        "url": f"https://api.github.com/repos/{full}",
    }


@functools.cache
def _organization(org: str) -> dict[str, Any]:
    return {"login": org, "id": zlib.crc32(org.encode()) % 90_000_000 + 10_000_000}


@functools.cache
def _sender(developer: int) -> dict[str, Any]:
    return {"login": f"dev-{developer}", "id": 5_000_000 + developer}


class _Bodies:
    """The bodies of one job's deliveries: what every one of them carries is made once (a
    fleet's run is hundreds of thousands of deliveries)."""

    def __init__(self, job: Job, org: str) -> None:
        self.job, self.org = job, org
        repo = f"{org}/{job.workflow.repository}"
        self.workflow_name = job.workflow.name.replace("-", " ").title()
        self.head_branch = (
            "main" if job.workflow.event != "pull_request" else f"feature/{job.run_id % 997}"
        )
        self.run_url = f"https://api.github.com/repos/{repo}/actions/runs/{job.run_id}"
        self.node_id = f"CR_kwDO{job.id:x}"
        self.head_sha = f"{job.run_id * 2654435761 % (1 << 160):040x}"
        self.url = f"https://api.github.com/repos/{repo}/actions/jobs/{job.id}"
        self.html_url = f"https://github.com/{repo}/actions/runs/{job.run_id}/job/{job.id}"
        self.check_run_url = f"https://api.github.com/repos/{repo}/check-runs/{job.id}"
        self.created = _stamp(job.created)
        self.repository = _repository(org, job.workflow.repository)
        self.organization = _organization(org)
        self.sender = _sender(job.run_id % 41)

    def body(self, action: str) -> dict[str, Any]:
        """The body GitHub delivers for the job when it became `action`."""
        job = self.job
        started = action in ("in_progress", "completed") and job.runner is not None
        runner = job.runner if started else None
        completed = action == "completed"
        started_at = _stamp(job.started) if started else self.created
        steps: list[dict[str, Any]] = []
        if runner is not None:
            end = job.completed if completed else job.started
            steps.append(
                {
                    "name": "Set up job",
                    "status": "completed",
                    "conclusion": "success",
                    "number": 1,
                    "started_at": started_at,
                    "completed_at": _stamp(min(end or job.started, (job.started or 0) + 2)),
                }
            )
        body = {
            "id": job.id,
            "run_id": job.run_id,
            "workflow_name": self.workflow_name,
            "head_branch": self.head_branch,
            "run_url": self.run_url,
            "run_attempt": job.attempt,
            "node_id": self.node_id,
            "head_sha": self.head_sha,
            "url": self.url,
            "html_url": self.html_url,
            "status": action if action in ("queued", "in_progress") else "completed",
            "conclusion": job.conclusion if completed else None,
            "created_at": self.created,
            "started_at": started_at,
            "completed_at": _stamp(job.completed) if completed else None,
            "name": job.name,
            "steps": steps,
            "check_run_url": self.check_run_url,
            "labels": list(job.labels),
            "runner_id": runner.id if runner is not None else None,
            "runner_name": runner.name if runner is not None else None,
            "runner_group_id": 1 if started else None,
            "runner_group_name": "Default" if started else None,
        }
        return {
            "action": action,
            "workflow_job": body,
            "repository": self.repository,
            "organization": self.organization,
            "sender": self.sender,
        }


def _events(job: Job, until: float) -> Iterator[tuple[float, str]]:
    if job.created <= until:
        yield job.created, "queued"
    if job.started is not None and job.runner is not None and job.started <= until:
        yield job.started, "in_progress"
    if job.completed is not None and job.completed <= until:
        yield job.completed, "completed"


def deliveries(
    fleet: FleetRun, *, until: float | None = None, seed: int = 0, dropped: float = 0.0
) -> list[dict[str, Any]]:
    """Every body GitHub sent up to `until` (the end), in the order they arrived: a few out of
    order, a few twice, and a share `dropped` never. Bodies share what does not change
    (the repository, the organization, the sender): read them, do not change them."""
    until = fleet.plan.end if until is None else until
    rng = random.Random(f"deliveries:{seed}")
    uniform, draw = rng.uniform, rng.random
    # When each body arrives, in the order they were sent: they arrive by time, and those
    # arriving at the same time in the order sent.
    arrivals: list[float] = []
    sent: list[dict[str, Any]] = []
    org = fleet.plan.org
    for job in fleet.jobs:
        bodies: _Bodies | None = None
        for at, action in _events(job, until):
            if dropped and draw() < dropped:
                continue
            arrives = at + uniform(0.2, 2.0)
            if draw() < 0.01:
                arrives = at - uniform(0.5, 3.0)  # overtakes the one before
            if bodies is None:
                bodies = _Bodies(job, org)
            body = bodies.body(action)
            arrivals.append(arrives)
            sent.append(body)
            if draw() < 0.003:
                arrivals.append(arrives + uniform(30, 600))  # sent again
                sent.append(body)
    return [sent[i] for i in sorted(range(len(sent)), key=arrivals.__getitem__)]


def newest_deliveries(fleet: FleetRun, *, until: float | None = None) -> list[dict[str, Any]]:
    """Each job's furthest delivery by `until` (the end), in the order the jobs were created.
    A store keeps of a job the furthest state its deliveries told, so these leave it as every
    delivery would: a history loaded at once, without the deliveries the newest tells again."""
    until = fleet.plan.end if until is None else until
    org = fleet.plan.org
    newest = []
    for job in fleet.jobs:
        last = None
        for _, action in _events(job, until):
            last = action
        if last is not None:
            newest.append(_Bodies(job, org).body(last))
    return newest


def _arch(runner_type: str) -> str:
    return "ARM64" if "arm64" in runner_type else "X64"


def _listed(runner: Runner, at: float, kind: str) -> bool:
    if runner.created > at or (runner.gone is not None and runner.gone <= at):
        return False
    if kind == "vm":
        return runner.online is not None and runner.online <= at
    return True


def _online(runner: Runner, at: float) -> bool:
    return (
        runner.online is not None
        and runner.online <= at
        and (runner.lost is None or runner.lost > at)
        and runner.failed is None
    )


def runners_list(fleet: FleetRun, at: float | None = None) -> list[dict[str, Any]]:
    """`GET /orgs/{org}/actions/runners`' runners at `at` (the end)."""
    at = fleet.plan.end if at is None else at
    kinds = {kind.name: kind for kind in fleet.plan.types}
    listed = []
    for runner in fleet.runners:
        if not _listed(runner, at, fleet.plan.kind):
            continue
        online = _online(runner, at)
        busy = (
            online
            and runner.busy_from is not None
            and runner.busy_from <= at
            and (runner.busy_until is None or runner.busy_until > at)
        )
        os = kinds[runner.runner_type].os
        listed.append(
            {
                "id": runner.id,
                "name": runner.name,
                "os": os,
                "status": "online" if online else "offline",
                "busy": bool(busy),
                "ephemeral": True,
                "runner_group_id": 1,
                "labels": [
                    {"id": 1, "name": "self-hosted", "type": "read-only"},
                    {"id": 2, "name": os, "type": "read-only"},
                    {"id": 3, "name": _arch(runner.runner_type), "type": "read-only"},
                    {
                        "id": 100 + zlib.crc32(runner.runner_type.encode()) % 1000,
                        "name": runner.runner_type,
                        "type": "custom",
                    },
                ],
            }
        )
    return listed
