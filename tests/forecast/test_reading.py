"""Each runner type's queue read from the job events in the store, as the early warning reads
it: at any moment it counts what the alert's rule counts from the same jobs."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.forecast.projection import Threshold
from bot.forecast.reading import RECENT_SECONDS, queue_states
from bot.store import open_store
from queuebot_lab.simulator import Scenario, SimulationSpec
from queuebot_lab.simulator.deliveries import history_bodies
from testkit.github_fleet import alert_numbers, simulated

END = datetime(2026, 11, 24, 18, 0, tzinfo=UTC)


async def test_the_queue_read_is_the_alerts_own_count_at_every_moment(tmp_path: Path) -> None:
    spec = SimulationSpec(
        scenario=Scenario.CAPACITY_CAP, hours=26, runner_types=6, seed=3, end=END, step_seconds=120
    )
    fleet = await asyncio.to_thread(simulated, spec)
    jobs = list(fleet.jobs)
    store = await open_store(str(tmp_path / "queuebot.db"))
    config = JobsConfig()
    try:
        await load_history(store, history_bodies(jobs, fleet.end), config, remember_until=0.0)
        threshold = Threshold()
        queueing = 0
        for minutes_before in range(0, 180, 15):
            at = fleet.end - minutes_before * 60.0
            states = await queue_states(store, config, at)
            expected = alert_numbers(fleet, at)
            for name, (queued, longest) in expected.items():
                assert states[name].queued(threshold) == queued, (name, minutes_before)
                assert abs(states[name].longest_wait() - longest) < 1.0
                queueing += queued > 0
            # The rates are the last minutes' jobs, per minute.
            for name, state in states.items():
                arrived = sum(
                    at - RECENT_SECONDS <= j.created < at for j in jobs if j.runner_type == name
                )
                assert abs(state.arrivals_per_minute - arrived / (RECENT_SECONDS / 60.0)) < 1e-9
        assert queueing > 3, "the capacity cap should leave jobs queueing"
    finally:
        await store.close()
