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
    t = time.gmtime(int(seconds))
    return (
        f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
        f"T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}Z"
    )


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


def workflow_job(job: Job, action: str, org: str) -> dict[str, Any]:
    """The body GitHub delivers for `job` when it became `action`."""
    repo = f"{org}/{job.workflow.repository}"
    started = action in ("in_progress", "completed") and job.runner is not None
    body = {
        "id": job.id,
        "run_id": job.run_id,
        "workflow_name": job.workflow.name.replace("-", " ").title(),
        "head_branch": "main"
        if job.workflow.event != "pull_request"
        else f"feature/{job.run_id % 997}",
        "run_url": f"https://api.github.com/repos/{repo}/actions/runs/{job.run_id}",
        "run_attempt": job.attempt,
        "node_id": f"CR_kwDO{job.id:x}",
        "head_sha": f"{job.run_id * 2654435761 % (1 << 160):040x}",
        "url": f"https://api.github.com/repos/{repo}/actions/jobs/{job.id}",
        "html_url": f"https://github.com/{repo}/actions/runs/{job.run_id}/job/{job.id}",
        "status": {"queued": "queued", "in_progress": "in_progress"}.get(action, "completed"),
        "conclusion": job.conclusion if action == "completed" else None,
        "created_at": _stamp(job.created),
        "started_at": _stamp(job.started if started else job.created),
        "completed_at": _stamp(job.completed) if action == "completed" else None,
        "name": job.name,
        "steps": [],
        "check_run_url": f"https://api.github.com/repos/{repo}/check-runs/{job.id}",
        "labels": list(job.labels),
        "runner_id": job.runner.id if started and job.runner else None,
        "runner_name": job.runner.name if started and job.runner else None,
        "runner_group_id": 1 if started else None,
        "runner_group_name": "Default" if started else None,
    }
    if started and job.runner is not None:
        end = job.completed if action == "completed" else job.started
        body["steps"] = [
            {
                "name": "Set up job",
                "status": "completed",
                "conclusion": "success",
                "number": 1,
                "started_at": _stamp(job.started),
                "completed_at": _stamp(min(end or job.started, (job.started or 0) + 2)),
            }
        ]
    return {
        "action": action,
        "workflow_job": body,
        "repository": _repository(org, job.workflow.repository),
        "organization": {"login": org, "id": zlib.crc32(org.encode()) % 90_000_000 + 10_000_000},
        "sender": {"login": "dev-" + str(job.run_id % 41), "id": 5_000_000 + job.run_id % 41},
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
    order, a few twice, and a share `dropped` never."""
    until = fleet.plan.end if until is None else until
    rng = random.Random(f"deliveries:{seed}")
    timed: list[tuple[float, int, dict[str, Any]]] = []
    order = 0
    for job in fleet.jobs:
        for at, action in _events(job, until):
            if dropped and rng.random() < dropped:
                continue
            arrives = at + rng.uniform(0.2, 2.0)
            if rng.random() < 0.01:
                arrives = at - rng.uniform(0.5, 3.0)  # overtakes the one before
            body = workflow_job(job, action, fleet.plan.org)
            timed.append((arrives, order, body))
            order += 1
            if rng.random() < 0.003:
                timed.append((arrives + rng.uniform(30, 600), order, body))  # sent again
                order += 1
    timed.sort(key=lambda item: (item[0], item[1]))
    return [body for _, _, body in timed]


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
