"""What a heads-up shows besides the projection: how arrivals compare with the usual, the
workflows behind them, and links (the runbook; the alert's message once it fired)."""

from __future__ import annotations

import statistics
from collections import Counter

from bot.domain.heads_up import HeadsUpView
from bot.domain.incidents import Incident
from bot.fleet.sources.job_events import usual_moments
from bot.fleet.sources.job_window import counted
from bot.fleet.sources.jobs_config import JobsConfig
from bot.forecast.projection import Threshold
from bot.forecast.reading import RECENT_SECONDS
from bot.forecast.warnings import HeadsUp
from bot.store import Store

#: Workflows named as behind the arrivals, at most.
WORKFLOWS_NAMED = 2


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


async def view_of(
    store: Store,
    config: JobsConfig,
    heads_up: HeadsUp,
    threshold: Threshold,
    *,
    runbook_url: str | None,
    alert: Incident | None,
) -> HeadsUpView:
    """The heads-up as its message shows it."""
    usual, workflows = await arrivals_context(store, config, heads_up.runner_type, heads_up.at)
    state = heads_up.state
    return HeadsUpView(
        runner_type=heads_up.runner_type,
        phase=heads_up.phase,
        started_at=heads_up.started_at,
        at=heads_up.at,
        queued=state.queued(threshold),
        longest_wait=state.longest_wait(),
        arrivals_per_minute=state.arrivals_per_minute,
        starts_per_minute=state.starts_per_minute,
        threshold_wait=threshold.wait_seconds,
        threshold_queued=threshold.queued,
        crossing_in=heads_up.crossing_in,
        usual_arrivals=usual,
        workflows=workflows,
        runbook_url=runbook_url,
        alert_link=alert.permalink if alert is not None else None,
        alert_channel_id=alert.channel_id if alert is not None else None,
        alert_ts=alert.parent_ts if alert is not None else None,
    )
