"""One runner type's jobs as the queue model ran them, and its runners at the end: what GitHub's
`workflow_job` deliveries and its runners list would have told of the same fleet."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoggedJob:
    """A job, Unix seconds; `started` and `completed` None where they lie past the end."""

    created: float
    started: float | None
    completed: float | None
    workflow: int  # index into the profile's workflows
    failed: bool


@dataclass
class JobLog:
    """Every job created in [since, until], and the runners at `until`."""

    since: float
    until: float
    jobs: list[LoggedJob] = field(default_factory=list)
    idle: int = 0
    busy: int = 0
    pending: int = 0  # created, not yet running a runner: registered with GitHub, offline
    failed: int = 0  # failed to start, listed until deleted: offline

    def taken(
        self, created: float, started: float, completed: float, workflow: int, failed: bool
    ) -> None:
        """A runner took a job: kept with what of it had happened by `until`."""
        if not self.since <= created <= self.until:
            return
        if started > self.until:
            self.jobs.append(LoggedJob(created, None, None, workflow, False))
        elif completed > self.until:
            self.jobs.append(LoggedJob(created, started, None, workflow, False))
        else:
            self.jobs.append(LoggedJob(created, started, completed, workflow, failed))

    def close(self, queued: list[tuple[float, int]], idle: int, pending: int, failed: int) -> None:
        """The jobs still waiting at the end, and the runners then."""
        for created, workflow in queued:
            if self.since <= created <= self.until:
                self.jobs.append(LoggedJob(created, None, None, workflow, False))
        self.jobs.sort(key=lambda job: job.created)
        self.idle, self.pending, self.failed = idle, pending, failed
        self.busy = sum(1 for job in self.jobs if job.started is not None and job.completed is None)
