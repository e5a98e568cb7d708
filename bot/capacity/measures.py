"""What a window's jobs say of each runner type, before any model: queue times (overall and by
hour of the week), the runner-hours spent and by which workflows, the most runners busy at once,
failed jobs. Pure: spans in, numbers out.

A job's queue time is from its creation to a runner taking it; a job still waiting at the end
of the window counts with its wait so far (leaving it out would hide the worst waits); a job
cancelled before any runner took it never used capacity and is left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from bot.capacity.replay import percentile
from bot.domain.capacity import HourOfWeek, WorkflowUse
from bot.store import JobSpan

#: 1970-01-01 was a Thursday: Unix days shifted by this give Monday 0.
_THURSDAY = 3
#: Hours of the week listed as the worst.
WORST_HOURS = 3
#: Workflows listed as using the most runner time.
TOP_WORKFLOWS = 3


def hour_of_week(stamp: float) -> tuple[int, int]:
    """(weekday with Monday 0, hour), UTC."""
    days, rest = divmod(int(stamp), 86400)
    return (days + _THURSDAY) % 7, rest // 3600


@dataclass
class TypeMeasures:
    """One runner type's jobs over [since, until)."""

    runner_type: str
    #: (created, started or None, completed or None) of every job that used or waited for a
    #: runner, oldest first: what the sizing model replays.
    jobs: list[tuple[float, float | None, float | None]] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    by_hour: dict[tuple[int, int], list[float]] = field(default_factory=lambda: defaultdict(list))
    busy_seconds: float = 0.0
    by_workflow: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    failed_jobs: int = 0
    peak_busy: int = 0

    @property
    def busy_hours(self) -> float:
        return self.busy_seconds / 3600.0

    def hours(self) -> list[HourOfWeek]:
        """Each hour of the week that had jobs, in week order."""
        return [
            HourOfWeek(
                weekday=weekday,
                hour=hour,
                jobs=len(waits),
                p50_seconds=percentile(waits, 0.5),
                p95_seconds=percentile(waits, 0.95),
            )
            for (weekday, hour), waits in sorted(self.by_hour.items())
        ]

    def worst_hours(self) -> tuple[HourOfWeek, ...]:
        ranked = sorted(self.hours(), key=lambda h: (-h.p95_seconds, h.weekday, h.hour))
        return tuple(h for h in ranked[:WORST_HOURS] if h.p95_seconds > 0)

    def workflows(self) -> tuple[WorkflowUse, ...]:
        total = sum(self.by_workflow.values())
        ranked = sorted(self.by_workflow.items(), key=lambda item: (-item[1], item[0]))
        return tuple(
            WorkflowUse(workflow=name, runner_hours=seconds / 3600.0, share=seconds / total)
            for name, seconds in ranked[:TOP_WORKFLOWS]
            if total > 0
        )


def measure(spans: Iterable[JobSpan], since: float, until: float) -> dict[str, TypeMeasures]:
    """Every runner type's measures, from the jobs created within [since, until) (the caller
    has left out the types and repositories that do not count)."""
    measures: dict[str, TypeMeasures] = {}
    changes: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for span in spans:
        if span.started_at is None and span.completed_at is not None:
            continue  # cancelled before a runner took it
        type_ = measures.get(span.runner_type)
        if type_ is None:
            type_ = measures[span.runner_type] = TypeMeasures(span.runner_type)
        started = (
            span.started_at if span.started_at is not None and span.started_at < until else None
        )
        completed = span.completed_at if started is not None else None
        if completed is not None and completed >= until:
            completed = None
        type_.jobs.append((span.created_at, started, completed))
        wait = (started if started is not None else until) - span.created_at
        wait = max(0.0, wait)
        type_.waits.append(wait)
        type_.by_hour[hour_of_week(span.created_at)].append(wait)
        if started is None:
            continue
        end = completed if completed is not None else until
        type_.busy_seconds += end - started
        type_.by_workflow[span.workflow] += end - started
        type_.failed_jobs += span.conclusion == "failure"
        changes[span.runner_type] += [(started, 1), (end, -1)]
    for name, moments in changes.items():
        busy = peak = 0
        # An end before a start at the same moment: a runner handed on is not two runners.
        for _, step in sorted(moments, key=lambda m: (m[0], m[1])):
            busy += step
            peak = max(peak, busy)
        measures[name].peak_busy = peak
    return measures
