"""What a heads-up message says besides the projection: how arrivals compare with the usual,
the workflows behind them, and links (the runbook; the alert's message once it fired)."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from bot.diagnostics.sources.job_events import usual_moments
from bot.diagnostics.sources.job_window import counted
from bot.diagnostics.sources.jobs_config import JobsConfig
from bot.forecast.projection import Threshold
from bot.forecast.reading import RECENT_SECONDS
from bot.forecast.warnings import HeadsUp
from bot.store import Store

#: Workflows named as behind the arrivals, at most.
WORKFLOWS_NAMED = 2


@dataclass(frozen=True)
class HeadsUpNews:
    """Everything one heads-up message shows."""

    heads_up: HeadsUp
    threshold: Threshold
    #: Arrivals a minute at this time on the usual days (None without history).
    usual_arrivals: float | None = None
    #: The workflows most of the arrivals now come from, most first.
    workflows: tuple[str, ...] = ()
    runbook_url: str | None = None
    #: The alert's message, once the threshold was crossed and it was posted.
    alert_link: str | None = None


async def arrivals_context(
    store: Store, config: JobsConfig, runner_type: str, at: float
) -> tuple[float | None, tuple[str, ...]]:
    """Arrivals a minute usual at `at` (the median of the same minutes on previous days) and
    the workflows the arrivals of the last minutes come from, most above their usual first."""
    now = counted(await store.job_activity(at - RECENT_SECONDS, at), config)
    days, _ = usual_moments(at, RECENT_SECONDS, await store.first_job_created(), 7)
    per_day: list[int] = []
    usual_by_workflow: Counter[str] = Counter()
    for day in days:
        then = counted(await store.job_activity(day - RECENT_SECONDS, day), config)
        arrivals = [row for row in then.arrivals if row.runner_type == runner_type]
        per_day.append(len(arrivals))
        usual_by_workflow.update(row.workflow for row in arrivals)
    minutes = RECENT_SECONDS / 60.0
    usual = statistics.median(per_day) / minutes if per_day else None
    by_workflow = Counter(r.workflow for r in now.arrivals if r.runner_type == runner_type)
    share = max(len(days), 1)
    above = {name: count - usual_by_workflow[name] / share for name, count in by_workflow.items()}
    ranked = sorted((n for n, extra in above.items() if extra > 0), key=lambda n: -above[n])
    return usual, tuple(ranked[:WORKFLOWS_NAMED])
