"""What the store's contract tests share: a clock moved by hand, alert groups and incidents to
store, and a GitHub job (the fixtures that open a store on each backend are `conftest.py`'s)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from bot.domain.alerts import AlertGroup
from bot.domain.clock import Clock as ProductClock
from bot.domain.incidents import Incident, IncidentStatus
from bot.domain.jobs import JobAction, JobEvent
from bot.domain.notifications import parse_webhook
from bot.domain.silences import Matcher, Person, Silence
from bot.store import NewIncident, Store
from testkit.payloads import encoded, reference

NOW = 1_700_000_000.0


AT = datetime.fromtimestamp(NOW, UTC)


DAY = 86400.0


T = datetime(2024, 1, 1, tzinfo=UTC)


class Clock:
    """Unix seconds the test moves forward by hand; the store reads them through the product's
    clock (`product`)."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now

    @property
    def product(self) -> ProductClock:
        return ProductClock(seconds=self)


Opener = Callable[[], Awaitable[Store]]


def group(name: str = "a", status: str = "firing") -> AlertGroup:
    body = reference(status)
    body["groupKey"] = f'{{}}:{{alertname="{name}"}}'
    for labels in (body["alerts"][0]["labels"], body["commonLabels"], body["groupLabels"]):
        labels["alertname"] = name
    return parse_webhook(encoded(body))


def new(
    name: str = "a",
    generation: int = 1,
    previous_id: int | None = None,
    digest_id: int | None = None,
    resolved_at: datetime | None = None,
) -> NewIncident:
    alerts = group(name)
    return NewIncident(
        group_key=alerts.group_key,
        generation=generation,
        channel="#ci",
        status=IncidentStatus.RESOLVED if resolved_at else IncidentStatus.FIRING,
        group=alerts,
        started_at=alerts.started_at,
        resolved_at=resolved_at,
        previous_id=previous_id,
        digest_id=digest_id,
    )


async def opened(
    store: Store,
    name: str = "a",
    generation: int = 1,
    previous_id: int | None = None,
    digest_id: int | None = None,
    resolved_at: datetime | None = None,
) -> Incident:
    async with store.transaction() as tx:
        return await tx.insert_incident(new(name, generation, previous_id, digest_id, resolved_at))


def silence() -> Silence:
    return Silence(
        ids=("s1",),
        matchers=((Matcher(name="alertname", value="a"),),),
        starts_at=AT,
        ends_at=AT + timedelta(hours=2),
        by=Person(id="U1", name="ana"),
    )


def job(action: JobAction) -> JobEvent:
    taken = action in (JobAction.IN_PROGRESS, JobAction.COMPLETED)
    done = action is JobAction.COMPLETED
    return JobEvent(
        job_id=9_000_000_001,
        run_id=7_000_000_001,
        run_attempt=1,
        repository="org/repo",
        workflow="ci",
        job="build",
        labels=("self-hosted", "linux.2xlarge"),
        runner_type="linux.2xlarge",
        html_url="https://github.com/org/repo/actions/runs/1",
        head_branch="main",
        action=action,
        created_at=T,
        started_at=T + timedelta(seconds=60) if taken else None,
        completed_at=T + timedelta(seconds=360) if done else None,
        conclusion="failure" if done else None,
        runner_name="runner-1" if taken else None,
    )
