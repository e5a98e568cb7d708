"""Early warning, backtested: heads-ups against the alert firing, on simulated fleets whose
incidents are known.

Each run simulates a fleet (every scenario, several seeds, ending at several hours of the
day), loads its `workflow_job` history into a store, and steps through the last hours minute by
minute as the watcher would: each runner type's queue read from the store, the heads-up board
stepped. The alert fires for a runner type when its rule holds, computed from the fleet's own
jobs as the reference alert's query computes it (more than 5 jobs queued 5 minutes or more, the
longest waiting an hour or more, by default).

Printed:
- precision: of the heads-ups raised, the share whose runner type's alert then fired (the
  heads-up ended by the crossing, not by the trend reversing or the run ending);
- recall: of the alert's onsets (firing after at least 30 minutes not firing), the share a
  heads-up was out for beforehand;
- lead time: from the heads-up to the alert firing, p50 and p10, for the onsets warned of.
Targets: precision ≥ 0.8, recall ≥ 0.8, median lead time ≥ 10 minutes.

    python bench/early_warning.py [--seeds 1-3] [--sizes 6] [--at-hours 6,18] [--hours 6]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.forecast.projection import QueueState, Threshold
from bot.forecast.reading import queue_states
from bot.forecast.warnings import Phase, WarningBoard
from bot.store import open_store
from queuebot_lab.simulator import Scenario, SimulationSpec, simulate_jobs
from queuebot_lab.simulator.deliveries import SimulatedJob, history_bodies
from testkit.github_fleet import ALERT_LEAVES_OUT

#: An onset is the alert firing after this long without.
QUIET_BEFORE = 1800.0
STEP = 60.0


class AlertRule:
    """The alert's numbers at any moment, as `testkit.github_fleet.alert_numbers` computes
    them, over the only jobs that can count: those that waited 5 minutes or more."""

    def __init__(self, jobs: list[SimulatedJob], threshold: Threshold) -> None:
        self._threshold = threshold
        self._waits = [
            (job.created, job.started if job.started is not None else float("inf"), job.runner_type)
            for job in jobs
            if not any(word in job.runner_type.lower() for word in ALERT_LEAVES_OUT)
            and (job.started is None or job.started - job.created > threshold.queued_after)
        ]

    def firing(self, at: float) -> set[str]:
        waits: dict[str, list[float]] = {}
        for created, started, name in self._waits:
            if started > at and threshold_age(at - created, self._threshold):
                waits.setdefault(name, []).append(at - created)
        return {
            name for name, found in waits.items() if self._threshold.crossed(len(found), max(found))
        }


def threshold_age(wait: float, threshold: Threshold) -> bool:
    return threshold.queued_after < wait < 7 * 86400.0


@dataclass
class Tally:
    raised: int = 0
    fired: int = 0  # heads-ups ended by the alert firing
    reversed: int = 0  # heads-ups ended as back to normal
    open_at_end: int = 0
    onsets: int = 0
    warned: int = 0
    leads: list[float] = field(default_factory=list)
    #: Heads-ups that ended back to normal, by the scenario of their run.
    reversed_by_scenario: Counter[str] = field(default_factory=Counter)


def _range(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-", 1)
        return list(range(int(low), int(high) + 1))
    return [int(part) for part in text.split(",")]


@dataclass
class Replay:
    """One threshold's board, rule and the heads-ups it has out, over one run."""

    threshold: Threshold
    tally: Tally
    board: WarningBoard
    rule: AlertRule
    last_fired: dict[str, float] = field(default_factory=dict)
    raised_at: dict[str, float] = field(default_factory=dict)

    def step(self, t: float, start: float, states: dict[str, QueueState], scenario: str) -> None:
        tally = self.tally
        for name in self.rule.firing(t):
            quiet = t - self.last_fired.get(name, -1e18) > QUIET_BEFORE + STEP / 2
            if quiet and t >= start:
                tally.onsets += 1
                if name in self.raised_at:
                    tally.warned += 1
                    tally.leads.append((t - self.raised_at[name]) / 60.0)
            self.last_fired[name] = t
        for heads_up in self.board.step(states):
            name = heads_up.runner_type
            if heads_up.phase is Phase.WARNING and name not in self.raised_at:
                self.raised_at[name] = t
                if t >= start:
                    tally.raised += 1
            elif heads_up.phase is not Phase.WARNING and name in self.raised_at:
                counted = self.raised_at.pop(name) >= start
                if counted and heads_up.phase is Phase.FIRED:
                    tally.fired += 1
                elif counted:
                    tally.reversed += 1
                    tally.reversed_by_scenario[scenario] += 1

    def finish(self, start: float) -> None:
        self.tally.open_at_end += sum(1 for at in self.raised_at.values() if at >= start)


async def one_run(
    spec: SimulationSpec, hours: float, workdir: Path, tallies: dict[Threshold, Tally]
) -> None:
    fleet = await asyncio.to_thread(simulate_jobs, spec)
    jobs = list(fleet.jobs)
    store = await open_store(str(workdir / "queuebot.db"))
    config = JobsConfig()
    try:
        await load_history(store, history_bodies(jobs, fleet.end), config, remember_until=0.0)
        replays = [
            Replay(threshold, tally, WarningBoard(threshold=threshold), AlertRule(jobs, threshold))
            for threshold, tally in tallies.items()
        ]
        start = fleet.end - hours * 3600.0
        t = start - QUIET_BEFORE
        while t <= fleet.end:
            states = await queue_states(store, config, t)
            for replay in replays:
                replay.step(t, start, states, spec.scenario.value)
            t += STEP
        for replay in replays:
            replay.finish(start)
    finally:
        await store.close()


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-3")
    parser.add_argument("--sizes", default="6")
    parser.add_argument("--at-hours", default="6,18", help="UTC hours the runs end at")
    parser.add_argument("--hours", type=float, default=6.0, help="hours stepped through")
    parser.add_argument(
        "--wait-minutes", default="15,20,30,60", help="the alert's longest-wait thresholds to try"
    )
    parser.add_argument("--queued", type=int, default=5)
    args = parser.parse_args()
    tallies = {
        Threshold(wait_seconds=minutes * 60.0, queued=args.queued): Tally()
        for minutes in _range(args.wait_minutes)
    }
    started = time.monotonic()
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    with tempfile.TemporaryDirectory(prefix="queuebot-warning-") as scratch:
        for size in _range(args.sizes):
            for seed in _range(args.seeds):
                for hour in _range(args.at_hours):
                    for scenario in Scenario:
                        end = today - timedelta(days=1) + timedelta(hours=hour)
                        spec = SimulationSpec(
                            scenario=scenario,
                            hours=max(27.0, args.hours + 25.0),
                            runner_types=size,
                            seed=seed,
                            end=end,
                            step_seconds=120,
                        )
                        workdir = Path(scratch) / f"{scenario.value}-{size}-{seed}-{hour}"
                        workdir.mkdir()
                        await one_run(spec, args.hours, workdir, tallies)
                        print(
                            f"{scenario.value:<20} types={size:<3} seed={seed:<3} at={hour:02d}:00"
                            f"  {time.monotonic() - started:.0f} s",
                            flush=True,
                        )
    print(f"\n{time.monotonic() - started:.0f} s in all")
    for threshold, tally in tallies.items():
        report(threshold, tally)
    return 0


def report(threshold: Threshold, tally: Tally) -> None:
    ended = tally.fired + tally.reversed
    precision = tally.fired / ended if ended else float("nan")
    recall = tally.warned / tally.onsets if tally.onsets else float("nan")
    print(
        f"\nalert: more than {threshold.queued} jobs queued, the longest"
        f" {threshold.wait_seconds / 60:.0f} min or more"
    )
    print(
        f"heads-ups raised: {tally.raised} (then fired {tally.fired}, back to normal"
        f" {tally.reversed}, still out at the end {tally.open_at_end})"
    )
    print(f"precision: {precision:.2f} (target ≥ 0.8)")
    if tally.reversed_by_scenario:
        shares = ", ".join(f"{k} {n}" for k, n in tally.reversed_by_scenario.most_common())
        print(f"back to normal without firing, by scenario: {shares}")
    print(f"alert onsets: {tally.onsets}, warned of {tally.warned}")
    print(f"recall: {recall:.2f} (target ≥ 0.8)")
    if tally.leads:
        print(
            f"lead time: p50 {percentile(tally.leads, 0.5):.0f} min,"
            f" p10 {percentile(tally.leads, 0.1):.0f} min, max {max(tally.leads):.0f} min"
            " (target median ≥ 10 min)"
        )


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
