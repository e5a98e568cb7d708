"""Loading a history of `workflow_job` bodies into the store at once.

The webhook learns jobs as they happen; baselines want days of them. A history (a hook's
stored deliveries, an export of the jobs table of another system, a simulated fleet) is loaded
here with the webhook's own parsing and merging, many jobs per transaction. Each body counts as
one delivery, named for its job and action, so loading the same history twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from pydantic import ValidationError

from bot.domain.jobs import JobEvent, WorkflowJobDelivery, job_event
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import Store

#: Jobs merged per transaction.
CHUNK = 5000


class HistoryError(ValueError):
    """A body of the history is not a `workflow_job` delivery: which one, and why."""


def delivered_event(body: Any, config: JobsConfig) -> JobEvent:
    """What a `workflow_job` body says of its job, its runner type named and whether it counts
    by `config`, as the webhook reads it. Raises ValidationError."""
    event = job_event(WorkflowJobDelivery.model_validate(body), config.runner_type)
    return replace(event, counted=config.counts(event.runner_type, event.repository))


#: A REST job's status as the delivery action it stands for (`requested` and `pending` jobs
#: wait for a runner as queued ones do).
REST_ACTIONS = {
    "queued": "queued",
    "requested": "queued",
    "pending": "queued",
    "waiting": "waiting",
    "in_progress": "in_progress",
    "completed": "completed",
}


def rest_event(job: Any, repository: str, config: JobsConfig) -> JobEvent | None:
    """A job as GitHub's REST API gives it (`GET …/actions/jobs/{id}`, a run's jobs: the same
    fields as a delivery's `workflow_job`) read as the delivery of its status would be; None
    for one that is not a job GitHub sends."""
    action = REST_ACTIONS.get(str(job.get("status"))) if isinstance(job, dict) else None
    if action is None:
        return None
    body = {"action": action, "workflow_job": job, "repository": {"full_name": repository}}
    try:
        return delivered_event(body, config)
    except ValidationError:
        return None


def _event(index: int, body: Any, config: JobsConfig) -> JobEvent:
    try:
        return delivered_event(body, config)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "body"
        raise HistoryError(f"entry {index}: {where}: {first['msg']}") from None


async def load_history(
    store: Store, bodies: Iterable[Any], config: JobsConfig, *, remember_until: float
) -> int:
    """Merge every body into the store; how many were new. Raises HistoryError, before
    anything of its chunk is stored, on a body that is not a `workflow_job` delivery."""
    new = 0
    chunk: list[tuple[JobEvent, str]] = []
    for index, body in enumerate(bodies, start=1):
        event = _event(index, body, config)
        chunk.append((event, f"history:{event.job_id}:{event.action.value}"))
        if len(chunk) >= CHUNK:
            new += await store.record_jobs(chunk, remember_until)
            chunk = []
    if chunk:
        new += await store.record_jobs(chunk, remember_until)
    return new
