"""Capacity sizing against the fleet simulator: do the recommended sizes keep the p95 queue time
at the target when the simulator runs with them?

For the busiest runner types and a few seeds, a healthy week is simulated with each profile as
configured; its jobs (created, started, completed: nothing of the simulator's settings) go to
`recommend` with the target T. The simulator then runs again with the recommended maximum and
warm pool (the profile's `buffer`: it wants `busy + queued + buffer` runners, as ARC's listener
wants `minRunners + assigned`; its floor `min_runners` is kept at or under the pool, so that it
never binds), and once more with one runner fewer.

The simulator runs with arrivals and each job's run drawn from streams of their own, so the
resized runs see the same week: the same jobs arrive, each running as long, and only the fleet
differs (the line "arrivals shared" shows it). With `--fresh` they share the fleet's one stream,
as before, so a resized run sees another week of the same traffic: what next week's report
meets, week-to-week noise included. To tell the model's own error from the week's, the resized
run's jobs are also replayed through the model at the recommended size ("model on B").

Printed per case: the recommendation (M, W), its replayed p95 on the measured week A, the
simulator's p95 on week B at (M, W) and its ratio to T, the model's p95 on B's jobs, runner-hours
(model on A, simulator on B), the simulator's p95 at M-1 (week C) and the model's at M-1 on A,
`recommend`'s time (s), and the pickup (P) and start (S) delays it estimated.
Summary: the share of cases with the simulator's p95 ≤ 1.1 T, ratio percentiles, the model's
error on the same jobs, and the slowest `recommend`. Target: simulator p95 within 10 % of T.

    python bench/capacity.py [--seeds 1-2] [--types 4] [--targets 600,300,1200] [--margin 0]
                             [--fresh] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.stats import percentile
from bot.capacity.replay import Replay, Window, replay
from bot.capacity.sizing import MeasuredJob, Sizing, recommend
from queuebot_lab.simulator.job_log import JobLog
from queuebot_lab.simulator.profiles import Profile, profile, runner_type_names
from queuebot_lab.simulator.queue_model import simulate_type

DAY = 86400.0
STEP = 60
#: A Monday 00:00 UTC: the window is the week before it.
END = 1_700_438_400.0


@dataclass(frozen=True)
class Week:
    jobs: list[MeasuredJob]
    p95_seconds: float
    runner_hours: float  # registered and pending runners, sampled every minute


@dataclass(frozen=True)
class Case:
    name: str
    seed: int
    target: float
    sizing: Sizing
    seconds: float  # recommend's wall-clock time
    resized: Week  # B: the simulator at (M, W)
    on_resized: Replay  # the model on B's jobs at (M, W)
    smaller: Week  # C: the simulator at (M - 1, W)
    model_smaller: float  # the model's p95 on A at (M - 1, W)


def simulate(p: Profile, seed: int, days: float, streams: bool) -> Week:
    first = END - days * DAY
    log = JobLog(first, END)
    samples = int(days * DAY // STEP) + 1
    history = simulate_type(p, None, seed, first, samples, STEP, log, streams=streams)
    gauges = history.gauges
    registered = gauges["gha_registered_runners"]
    pending = gauges["gha_controller_pending_ephemeral_runners"]
    hours = sum(r + q for r, q in zip(registered, pending, strict=True)) * STEP / 3600.0
    jobs = [MeasuredJob(job.created, job.started, job.completed) for job in log.jobs]
    waits = [(END if job.started is None else job.started) - job.created for job in jobs]
    return Week(jobs, percentile(waits, 0.95) if waits else 0.0, hours)


def resized(p: Profile, max_runners: int, warm_pool: int) -> Profile:
    return dataclasses.replace(
        p, max_runners=max_runners, buffer=warm_pool, min_runners=min(p.min_runners, warm_pool)
    )


def run_case(
    p: Profile,
    seed: int,
    days: float,
    measured: Week,
    target: float,
    margin: float,
    streams: bool,
) -> Case:
    since = END - days * DAY
    began = time.perf_counter()
    sizing = recommend(
        measured.jobs,
        since,
        END,
        target,
        max_runners=p.max_runners or None,
        warm_pool=p.buffer,
        load_margin=margin,
    )
    seconds = time.perf_counter() - began
    m, w = sizing.max_runners, sizing.warm_pool
    week_b = simulate(resized(p, m, w), seed, days, streams)
    on_b = replay(Window.of(week_b.jobs, since, END), m, w, sizing.delays)
    week_c = simulate(resized(p, max(1, m - 1), w), seed, days, streams)
    model_c = replay(Window.of(measured.jobs, since, END), max(1, m - 1), w, sizing.delays)
    return Case(p.name, seed, target, sizing, seconds, week_b, on_b, week_c, model_c.p95_seconds)


def shared_arrivals(a: list[MeasuredJob], b: list[MeasuredJob]) -> float:
    """The share of week A's creation times that week B has too."""
    times = {job.created for job in b}
    return sum(1 for job in a if job.created in times) / max(1, len(a))


def seeds_of(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-", 1)
        return list(range(int(low), int(high) + 1))
    return [int(part) for part in text.split(",")]


def print_case(case: Case) -> None:
    s = case.sizing
    print(
        f"{case.name:<28} {case.seed:>4} {case.target / 60:>4.0f}m"
        f" {s.max_runners:>5} {s.warm_pool:>3}{'' if s.reachable else '!'}"
        f" {s.p95_seconds:>7.0f} {case.resized.p95_seconds:>7.0f}"
        f" {case.resized.p95_seconds / case.target:>6.2f}"
        f" {case.on_resized.p95_seconds:>7.0f}"
        f" {s.runner_hours:>8.0f} {case.resized.runner_hours:>8.0f}"
        f" {case.smaller.p95_seconds:>7.0f} {case.model_smaller:>7.0f} {case.seconds:>5.1f}"
        f" {s.delays.pickup_seconds:>4.0f} {s.delays.start_seconds:>4.0f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-2")
    parser.add_argument("--types", type=int, default=4, help="the busiest of 6 runner types")
    parser.add_argument("--targets", default="600,300,1200", help="p95 targets, seconds")
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--margin", type=float, default=0.0, help="recommend's load_margin")
    parser.add_argument("--fresh", action="store_true", help="resized runs see another week")
    parser.add_argument("--quick", action="store_true", help="1 seed, 2 types, 10 minutes")
    args = parser.parse_args()
    seeds, types = seeds_of(args.seeds), args.types
    targets = [float(t) for t in args.targets.split(",")]
    if args.quick:
        seeds, types, targets = seeds[:1], min(types, 2), [600.0]
    names = runner_type_names(6)[:types]
    began = time.perf_counter()
    print(
        f"{'runner type':<28} {'seed':>4} {'T':>5} {'M':>5} {'W':>3}"
        f" {'model':>7} {'sim':>7} {'sim/T':>6} {'modelB':>7}"
        f" {'h model':>8} {'h sim':>8} {'sim M-1':>7} {'mod M-1':>7} {'s':>5} {'P':>4} {'S':>4}"
    )
    cases: list[Case] = []
    shared: list[float] = []
    for seed in seeds:
        for index, name in enumerate(names):
            p = profile(name, index)
            measured = simulate(p, seed, args.days, not args.fresh)
            for target in targets:
                case = run_case(p, seed, args.days, measured, target, args.margin, not args.fresh)
                shared.append(shared_arrivals(measured.jobs, case.resized.jobs))
                print_case(case)
                cases.append(case)
    ratios = [c.resized.p95_seconds / c.target for c in cases]
    own = [c.resized.p95_seconds / c.on_resized.p95_seconds - 1.0 for c in cases]
    hours = [c.resized.runner_hours / c.sizing.runner_hours - 1.0 for c in cases]
    within = sum(1 for r in ratios if r <= 1.1) / len(ratios)
    band = sum(1 for r in ratios if 0.9 <= r <= 1.1) / len(ratios)
    print(
        f"\n{len(cases)} cases ({types} types x {len(seeds)} seeds x {len(targets)} targets,"
        f" {args.days:g} days); arrivals shared between a week and its resized rerun:"
        f" {min(shared):.1%} at least, {max(shared):.1%} at most"
    )
    print(
        f"simulator p95 <= 1.1 T: {within:.0%}; within T +-10 %: {band:.0%};"
        f" sim/T p10 {percentile(ratios, 0.1):.2f} p50 {percentile(ratios, 0.5):.2f}"
        f" p90 {percentile(ratios, 0.9):.2f}"
    )
    print(
        "model on the simulator's own jobs (sim p95 / model p95 - 1):"
        f" p10 {percentile(own, 0.1):+.1%} p50 {percentile(own, 0.5):+.1%}"
        f" p90 {percentile(own, 0.9):+.1%};"
        f" within 10 %: {sum(1 for e in own if abs(e) <= 0.1) / len(own):.0%}"
    )
    print(
        f"runner-hours, simulator / model - 1: p50 {percentile(hours, 0.5):+.1%}"
        f" (max {max(hours, key=abs):+.1%}); slowest recommend"
        f" {max(c.seconds for c in cases):.1f} s; total {time.perf_counter() - began:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
