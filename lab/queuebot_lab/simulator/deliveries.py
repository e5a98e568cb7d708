"""The simulated fleet as GitHub tells of it: `workflow_job` deliveries and the runners list.

Shapes as GitHub sends them (docs.github.com, "Webhook events and payloads: workflow_job", and
"REST API endpoints for self-hosted runners"): a delivery's headers (`X-GitHub-Event`,
`X-GitHub-Delivery`, `X-Hub-Signature-256` over the raw body, `X-GitHub-Hook-ID`, the hook's
installation target, `User-Agent: GitHub-Hookshot/…`); a body with `action`, `workflow_job`,
`repository`, `organization` and `sender`. Quirks kept: `started_at` equals `created_at` until a
runner takes the job; the runner fields are null and `steps` empty while queued; timestamps are
whole seconds. A job asks for its scale set by name (`runs-on: linux-2xlarge`), so its only label
is the runner type, which is also the custom label of that scale set's runners. ARC registers an
ephemeral runner with GitHub before its pod runs: runners still starting, and those that failed
to, are listed offline.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import random
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from queuebot_lab.simulator.job_log import JobLog
from queuebot_lab.simulator.profiles import JOB_NAMES, POD_ALPHABET, workflow_of

ORG, ORG_ID = "pytorch", 21003710
_REPO_IDS = {"pytorch/pytorch": 65600975}
#: The actions after a runner took the job.
_TAKEN = ("in_progress", "completed")


@dataclass(frozen=True)
class SimulatedJob:
    """One job as its deliveries describe it; times are whole Unix seconds."""

    id: int
    run_id: int
    runner_type: str
    repository: str
    workflow: str
    name: str
    created: int
    started: int | None
    completed: int | None
    failed: bool
    runner_id: int | None
    runner_name: str | None

    @property
    def action(self) -> str:
        """Its state at the simulation's end, as a delivery's action."""
        if self.completed is not None:
            return "completed"
        return "in_progress" if self.started is not None else "queued"


@dataclass(frozen=True)
class SimulatedRunner:
    """A self-hosted runner in GitHub's list."""

    id: int
    name: str
    runner_type: str
    online: bool
    busy: bool
    os: str


@functools.lru_cache(maxsize=1024)
def _day(days: int) -> str:
    """The date of the `days`-th day since the epoch, as a timestamp begins (`2026-01-14T`)."""
    return time.strftime("%Y-%m-%dT", time.gmtime(days * 86400))


#: A day's minutes and a minute's seconds as a timestamp ends (`21:10:` and `05Z`).
_MINUTES = tuple(f"{hour:02d}:{minute:02d}:" for hour in range(24) for minute in range(60))
_SECONDS = tuple(f"{second:02d}Z" for second in range(60))


def _stamp(seconds: int | None) -> str | None:
    """`2026-01-14T21:10:05Z`, as GitHub writes a moment (UTC, whole seconds)."""
    if seconds is None:
        return None
    minutes, second = divmod(seconds, 60)
    days, minute = divmod(minutes, 1440)
    return _day(days) + _MINUTES[minute] + _SECONDS[second]


#: How many letters a pod name's suffix is drawn from.
_LETTERS = float(len(POD_ALPHABET))


def _suffix(draw: Callable[[], float]) -> str:
    """Five letters of the pod alphabet, drawn one after another as `Random.choices` draws
    them (one `random()` each)."""
    a, n = POD_ALPHABET, _LETTERS
    return (
        a[int(draw() * n)]
        + a[int(draw() * n)]
        + a[int(draw() * n)]
        + a[int(draw() * n)]
        + a[int(draw() * n)]
    )


def _runner_name(runner_type: str, rng: random.Random) -> str:
    """`<type>-<suffix>-runner-<suffix>`, as ARC names an ephemeral runner's pod."""
    first = _suffix(rng.random)
    return f"{runner_type}-{first}-runner-{_suffix(rng.random)}"


def _os(runner_type: str) -> str:
    return "windows" if runner_type.startswith("windows") else "linux"


def jobs_of(
    runner_type: str,
    workflows: tuple[str, ...],
    log: JobLog,
    seed: int,
    first_id: int,
) -> tuple[list[SimulatedJob], list[SimulatedRunner]]:
    """One runner type's jobs (ids from `first_id` on) and runners, from its job log."""
    rng = random.Random(f"{seed}/{runner_type}/jobs")  # noqa: S311 - a simulation, not secrets
    jobs: list[SimulatedJob] = []
    runners: list[SimulatedRunner] = []
    run_id, previous = first_id // 3, (-1.0, -1)
    for offset, logged in enumerate(log.jobs):
        ref = workflows[logged.workflow]
        repository = ref.split("/.github/", 1)[0]
        workflow = workflow_of(ref)
        # Jobs a workflow run asked for at once share the run.
        if (logged.created, logged.workflow) != previous:
            run_id += 1 + rng.randrange(3)
            previous = (logged.created, logged.workflow)
        created = int(logged.created)
        started = None if logged.started is None else max(created, int(logged.started))
        completed = None
        if logged.completed is not None and started is not None:
            completed = max(started, int(logged.completed))
        runner_name = None if started is None else _runner_name(runner_type, rng)
        job_id = first_id + offset
        jobs.append(
            SimulatedJob(
                id=job_id,
                run_id=run_id,
                runner_type=runner_type,
                repository=repository,
                workflow=workflow,
                name=rng.choice(JOB_NAMES.get(workflow, (f"{workflow} / build",))),
                created=created,
                started=started,
                completed=completed,
                failed=logged.failed,
                runner_id=None if started is None else job_id % 10_000_000 + 1,
                runner_name=runner_name,
            )
        )
        if runner_name is not None and completed is None:
            runners.append(
                SimulatedRunner(job_id % 10_000_000 + 1, runner_name, runner_type, True, True, "")
            )
    ids = first_id % 10_000_000 + 5_000_000
    for online, count in ((True, log.idle), (False, log.pending + log.failed)):
        for _ in range(count):
            ids += 1
            name = _runner_name(runner_type, rng)
            runners.append(SimulatedRunner(ids, name, runner_type, online, False, ""))
    os = _os(runner_type)
    return jobs, [
        SimulatedRunner(r.id, r.name, r.runner_type, r.online, r.busy, os) for r in runners
    ]


def _repository(full_name: str) -> dict[str, Any]:
    owner, name = full_name.split("/", 1)
    return {
        "id": _REPO_IDS.get(full_name, 65600975),
        "node_id": "MDEwOlJlcG9zaXRvcnk2NTYwMDk3NQ==",
        "name": name,
        "full_name": full_name,
        "private": False,
        "owner": {"login": owner, "id": ORG_ID, "type": "Organization"},
        "html_url": f"https://github.com/{full_name}",
        "url": f"https://api.github.com/repos/{full_name}",
        "default_branch": "main",
    }


def workflow_job_body(job: SimulatedJob, action: str, *, later: int = 0) -> dict[str, Any]:
    """The body GitHub delivers for `job` reaching `action` (queued, in_progress, completed);
    `later`: seconds each of its moments is moved on by (a recording replayed at another time)."""
    taken = job.started is not None and action in _TAKEN
    done = action == "completed"
    api = f"https://api.github.com/repos/{job.repository}"
    created_at = _stamp(job.created + later)
    # Each moment is written once: GitHub repeats them (started_at is created_at until taken).
    started_at = _stamp(job.started + later) if taken and job.started is not None else created_at
    completed_at = None
    if done and job.completed is not None:
        completed_at = _stamp(job.completed + later)
    steps: list[dict[str, Any]] = []
    if taken:
        steps.append(
            {
                "name": "Set up job",
                "status": "completed",
                "conclusion": "success",
                "number": 1,
                "started_at": started_at,
                "completed_at": started_at,
            }
        )
        steps.append(
            {
                "name": "Run tests",
                "status": "completed" if done else "in_progress",
                "conclusion": ("failure" if job.failed else "success") if done else None,
                "number": 2,
                "started_at": started_at,
                "completed_at": completed_at,
            }
        )
    conclusion = None
    if done:
        conclusion = "cancelled" if not taken else ("failure" if job.failed else "success")
    return {
        "action": action,
        "workflow_job": {
            "id": job.id,
            "run_id": job.run_id,
            "workflow_name": job.workflow,
            "head_branch": "main",
            "run_url": f"{api}/actions/runs/{job.run_id}",
            "run_attempt": 1,
            "node_id": f"CR_kwDO{job.id:x}",
            "head_sha": hashlib.sha1(str(job.run_id).encode()).hexdigest(),  # noqa: S324
            "url": f"{api}/actions/jobs/{job.id}",
            "html_url": f"https://github.com/{job.repository}/actions/runs/{job.run_id}"
            f"/job/{job.id}",
            "status": action,
            "conclusion": conclusion,
            "created_at": created_at,
            "started_at": started_at,
            "completed_at": completed_at,
            "name": job.name,
            "steps": steps,
            "check_run_url": f"{api}/check-runs/{job.id}",
            "labels": [job.runner_type],
            "runner_id": job.runner_id if taken else None,
            "runner_name": job.runner_name if taken else None,
            "runner_group_id": 1 if taken else None,
            "runner_group_name": "Default" if taken else None,
        },
        "repository": _repository(job.repository),
        "organization": {"login": ORG, "id": ORG_ID, "url": f"https://api.github.com/orgs/{ORG}"},
        "sender": {"login": "pytorchmergebot", "id": 97764156, "type": "User"},
    }


def events(
    jobs: list[SimulatedJob], since: float, until: float
) -> list[tuple[int, str, SimulatedJob]]:
    """Every delivery GitHub sent in (since, until], in the order it sent them: (when, action,
    job)."""
    found: list[tuple[int, str, SimulatedJob]] = []
    for job in jobs:
        for when, action in (
            (job.created, "queued"),
            (job.started, "in_progress"),
            (job.completed, "completed"),
        ):
            if when is not None and since < when <= until:
                found.append((when, action, job))
    rank = {"queued": 0, "in_progress": 1, "completed": 2}
    found.sort(key=lambda e: (e[0], rank[e[1]], e[2].id))
    return found


def signature(raw: bytes, secret: str) -> str:
    """`X-Hub-Signature-256`: the HMAC-SHA256 of the raw body with the hook's secret."""
    return "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()


def delivery(
    body: dict[str, Any],
    secret: str,
    *,
    delivery_id: str | None = None,
    event: str = "workflow_job",
) -> tuple[dict[str, str], bytes]:
    """The headers and raw body of one delivery, as GitHub sends it to an organization hook."""
    raw = json.dumps(body, separators=(",", ":")).encode()
    return {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/2d7d0a3",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-GitHub-Hook-ID": "492012713",
        "X-GitHub-Hook-Installation-Target-Type": "organization",
        "X-GitHub-Hook-Installation-Target-ID": str(ORG_ID),
        "X-Hub-Signature-256": signature(raw, secret),
    }, raw


def as_of(job: SimulatedJob, when: float) -> SimulatedJob | None:
    """`job` as it stood at `when`; None if it was not created yet."""
    if job.created > when:
        return None
    started = job.started if job.started is not None and job.started <= when else None
    completed = job.completed if started is not None and job.completed is not None else None
    if completed is not None and completed > when:
        completed = None
    if (started, completed) == (job.started, job.completed):
        return job
    runner = (job.runner_id, job.runner_name) if started is not None else (None, None)
    return replace(
        job,
        started=started,
        completed=completed,
        failed=job.failed and completed is not None,
        runner_id=runner[0],
        runner_name=runner[1],
    )


def history_bodies(jobs: list[SimulatedJob], until: float) -> Iterator[dict[str, Any]]:
    """Each job's last delivery by `until`: what a store held then."""
    for job in jobs:
        then = as_of(job, until)
        if then is not None:
            yield workflow_job_body(then, then.action)


def final_bodies(jobs: list[SimulatedJob]) -> Iterator[dict[str, Any]]:
    """Each job's last delivery: all a store keeps of it (for loading a history at once)."""
    for job in jobs:
        yield workflow_job_body(job, job.action)
