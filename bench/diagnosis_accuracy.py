"""How often diagnostics name the right cause: every scenario, several seeds and fleet sizes.

Each run simulates a fleet and reads it as the bot does, through one of two sources:

- `--source github` (the default): its jobs' `workflow_job` bodies loaded into a store, its
  runners list served by a GitHub REST stand-in over HTTP; also checks the alert's own numbers
  (jobs queued exact, the longest wait within a minute of the truth); `--source jobs`: the
  job events alone;
- `--source arc` or `--source arc-lean`: `queuebot simulate`'s metrics in that shape
  (actions-runner-controller's series with every bucket; or a lean scrape of `_sum`/`_count`
  only, without runner gauges) backfilled into a real Prometheus with promtool;
- `--source all`: the job events, the runners list and the full ARC scrape together.

`--model second` judges the checks on the second fleet model (`fleetmodel`, written apart from
the simulator the checks were tuned on): each fleet is read through every source combination
(`--sources`: job events alone; with the runners list; ARC full; ARC lean; all together) and
the cause compared with what an on-call would find there (`fleetmodel.truth`). It prints a
confusion matrix per combination, how often each confidence level is right, how often the
queueing runner types are all named with their cause, and whether the alert's numbers are exact.

It runs the same diagnostics the Slack button runs and compares the primary cause with what the
simulation staged, at several hours of the day (`--at-hours`). Prints a confusion matrix (rows:
staged, columns: named), the share of right primary causes, how often the staged runner types
were named, and the number of confident wrong answers on healthy data. Target: at least 95 %
right, and no cause named for a healthy fleet.

    python bench/diagnosis_accuracy.py [--source jobs|github|arc|arc-lean|all] [--seeds 1-5]
        [--sizes 6,12] [--hours 27] [--at-hours 0,6,12,18]
    python bench/diagnosis_accuracy.py --model second [--seeds 1-3] [--sizes 3,12,40]
        [--at-hours 3,10,15,21] [--sources jobs,jobs+runners,arc,arc-lean,all] [--day 2026-11-27]

`--source arc`, `arc-lean` and `all` need the Debian package prometheus (with promtool).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.diagnostics.checks import diagnose
from bot.fleet.signals import collect
from bot.fleet.sources.prometheus import PrometheusClient
from bot.fleet.sources.querypack import QueryPack
from fleetmodel import Case, plan, run
from queuebot_lab.simulator import MetricsShape, Scenario, SimulationSpec, write_file
from testkit.fleet_reading import COMBINATIONS, Judged, diagnose_run
from testkit.github_fleet import GitHubRun, diagnose_from_github, named_with_their_cause
from testkit.memory import collect_less
from testkit.prometheus import Prometheus

CAUSES = [
    "none",
    "increased_workload",
    "resource_constraints",
    "long_running_jobs",
    "autoscaling_limits",
    "infrastructure",
]
SHORT = {
    "unexplained": "unexplained",
    "none": "none",
    "increased_workload": "workload",
    "resource_constraints": "resources",
    "long_running_jobs": "long jobs",
    "autoscaling_limits": "autoscale",
    "infrastructure": "infra",
}


def _day(chosen: date | None) -> datetime:
    """Midnight UTC of the day the runs end: `chosen`, or yesterday. The fleets are drawn
    from the seed and the moment they end, so the same day gives the same fleets."""
    day = chosen or datetime.now(UTC).date() - timedelta(days=1)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _range(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-", 1)
        return list(range(int(low), int(high) + 1))
    return [int(part) for part in text.split(",")]


async def one_run(
    workdir: Path, spec: SimulationSpec, shape: MetricsShape, binary: str, promtool: str
) -> tuple[str, str, bool]:
    """(staged cause, named cause, staged runner types all named with their cause), read from
    Prometheus holding the fleet's metrics in `shape`."""
    history = workdir / "fleet.om"
    truth = await asyncio.to_thread(write_file, spec, history, shape)
    prometheus = Prometheus(binary, workdir / "prometheus", promtool=promtool)
    try:
        await prometheus.backfill(history)
        history.unlink()
        await prometheus.start()
        async with aiohttp.ClientSession() as session:
            client = PrometheusClient(session, prometheus.url)
            report = diagnose(await collect(client, QueryPack(), spec.end))
    finally:
        await prometheus.stop()
    named = report.primary_cause.value if report.primary_cause else "none"
    return truth.primary_cause, named, named_with_their_cause(report, truth.affected)


async def _from_github(
    source: str, spec: SimulationSpec, workdir: Path, binary: str | None, promtool: str | None
) -> GitHubRun:
    """The fleet's job events (`jobs`), with its runners list (`github`), and with its full ARC
    scrape in a real Prometheus (`all`)."""
    if source != "all":
        return await diagnose_from_github(spec, workdir, with_runners=source == "github")
    assert binary and promtool
    history = workdir / "fleet.om"
    await asyncio.to_thread(write_file, spec, history, MetricsShape.ARC)
    prometheus = Prometheus(binary, workdir / "prometheus", promtool=promtool)
    try:
        await prometheus.backfill(history)
        history.unlink()
        await prometheus.start()
        return await diagnose_from_github(spec, workdir, prometheus_url=prometheus.url)
    finally:
        await prometheus.stop()


def print_matrix(matrix: Counter[tuple[str, str]], staged_causes: list[str]) -> None:
    """Rows: the causes staged (those that occur); columns: the causes named."""
    corner = "staged / named"
    print(f"{corner:<16}" + "".join(f"{SHORT[c]:>11}" for c in CAUSES))
    for staged in staged_causes:
        row = [matrix[(staged, named)] for named in CAUSES]
        if sum(row):
            print(f"{SHORT[staged]:<16}" + "".join(f"{n:>11}" for n in row))


def _matrix(judged: list[Judged], title: str) -> None:
    print(f"\n{title}: confusion matrix ({len(judged)} fleets)")
    print_matrix(Counter((j.staged, j.named) for j in judged), ["unexplained", *CAUSES])
    judgeable = [j for j in judged if j.staged != "unexplained"]
    right = sum(j.right for j in judgeable)
    located = sum(j.located for j in judgeable)
    share = 100 * right / max(len(judgeable), 1)
    print(
        f"right primary cause: {right}/{len(judgeable)} = {share:.1f} %"
        f"; queueing types all named with their cause: {located}/{len(judgeable)}"
        f" = {100 * located / max(len(judgeable), 1):.1f} % (targets 95 %)"
    )
    for level in ("high", "medium", "low"):
        given = [j for j in judgeable if j.confidence == level]
        if given:
            ok = sum(j.right for j in given)
            print(
                f"  confidence {level:<6}: right {ok}/{len(given)} = {100 * ok / len(given):.1f} %"
            )
    confident_healthy = sum(
        1 for j in judgeable if j.staged == "none" and j.named != "none" and j.confidence == "high"
    )
    print(f"  high confidence on a healthy fleet: {confident_healthy} (target 0)")
    exact = [j.exact for j in judged if j.exact is not None]
    if exact:
        print(f"  alert's numbers exact for every type: {sum(exact)}/{len(exact)}")


async def second_model(args: argparse.Namespace) -> int:
    """The checks judged on the second fleet model, through every source combination."""
    combinations = tuple(args.sources.split(","))
    unknown = set(combinations) - set(COMBINATIONS)
    if unknown:
        print(f"unknown source combinations: {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    binary = shutil.which("prometheus")
    if any(c in ("arc", "arc-lean", "all") for c in combinations) and not binary:
        print("needs prometheus: apt-get install -y prometheus", file=sys.stderr)
        return 2
    judged: dict[str, list[Judged]] = {c: [] for c in combinations}
    failed: list[str] = []
    started = time.monotonic()
    day = _day(args.day)
    cases = [Case(c) for c in args.cases.split(",")] if args.cases else list(Case)
    with tempfile.TemporaryDirectory(prefix="queuebot-accuracy-") as scratch:
        for size in _range(args.sizes):
            for seed in _range(args.seeds):
                for hour in _range(args.at_hours):
                    end = day + timedelta(hours=hour, minutes=7 * seed)
                    for case in cases:
                        fleet = await asyncio.to_thread(
                            run, plan(case, seed=seed, types=size, end=end)
                        )
                        workdir = Path(scratch) / f"{case.value}-{size}-{seed}-{hour}"
                        workdir.mkdir()
                        version = "0.14" if seed % 2 else "latest"
                        try:
                            judged_here = await diagnose_run(
                                fleet, workdir, combinations, prometheus=binary, arc_version=version
                            )
                        except Exception as exc:  # said and counted; the run goes on
                            failed.append(f"{case.value} types={size} seed={seed} at={end:%H:%M}")
                            print(f"ERROR {failed[-1]}: {exc!r}", flush=True)
                            judged_here = []
                        for one in judged_here:
                            judged[one.combination].append(one)
                            mark = "ok " if one.right else "MISS"
                            print(
                                f"{mark} {case.value:<15} types={size:<3} seed={seed:<2}"
                                f" at={end:%H:%M} {one.combination:<13}"
                                f" staged={one.staged:<21} named={one.named:<21}"
                                f" {one.confidence or '-':<6} located={one.located}",
                                flush=True,
                            )
                            if not one.right and one.problems:
                                print(f"     unread: {'; '.join(one.problems)}", flush=True)
                        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nsecond model: {time.monotonic() - started:.0f} s")
    for combination in combinations:
        _matrix(judged[combination], f"second model, {combination}")
    if failed:
        print(f"\nnot read (counted nowhere above): {len(failed)}: {'; '.join(failed)}")
    return 1 if failed else 0


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1-5", help="e.g. 1-5 or 1,4,9")
    parser.add_argument("--sizes", default="6,12", help="runner-type counts, e.g. 6,12,24")
    parser.add_argument("--hours", type=float, default=27.0, help="history per run")
    parser.add_argument("--step", type=int, default=120, help="seconds between samples")
    parser.add_argument(
        "--source", choices=("jobs", "github", "arc", "arc-lean", "all"), default="github"
    )
    parser.add_argument(
        "--at-hours", default="0,6,12,18", help="UTC hours the runs end at, e.g. 3,18"
    )
    parser.add_argument("--model", choices=("first", "second"), default="first")
    parser.add_argument("--sources", default=",".join(COMBINATIONS), help="second model")
    parser.add_argument("--cases", default="", help="second model: e.g. surge,lowered_max")
    parser.add_argument(
        "--day",
        type=date.fromisoformat,
        default=None,
        help="the day the runs end, e.g. 2026-11-27 (default yesterday); same day, same fleets",
    )
    args = parser.parse_args()
    collect_less()  # it counts answers, not seconds: let the fleets be built quickly
    if args.model == "second":
        return await second_model(args)
    binary, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if args.source not in ("jobs", "github") and (not binary or not promtool):
        print("needs prometheus and promtool: apt-get install -y prometheus", file=sys.stderr)
        return 2
    matrix: Counter[tuple[str, str]] = Counter()
    located = total = exact = counted = 0
    wait_errors: list[float] = []
    started = time.monotonic()
    day = _day(args.day)
    with tempfile.TemporaryDirectory(prefix="queuebot-accuracy-") as scratch:
        for size in _range(args.sizes):
            for seed in _range(args.seeds):
                for hour in _range(args.at_hours):
                    end = day + timedelta(hours=hour)
                    for scenario in Scenario:
                        spec = SimulationSpec(
                            scenario=scenario,
                            hours=args.hours,
                            runner_types=size,
                            seed=seed,
                            end=end,
                            step_seconds=args.step,
                        )
                        workdir = Path(scratch) / f"{scenario.value}-{size}-{seed}-{hour}"
                        workdir.mkdir()
                        if args.source in ("jobs", "github", "all"):
                            run = await _from_github(args.source, spec, workdir, binary, promtool)
                            staged, named, found = run.staged, run.named, run.located
                            exact += run.queued_exact
                            counted += 1
                            wait_errors.append(run.wait_error)
                        else:
                            assert binary and promtool
                            shape = MetricsShape(args.source)
                            staged, named, found = await one_run(
                                workdir, spec, shape, binary, promtool
                            )
                        shutil.rmtree(workdir, ignore_errors=True)
                        matrix[(staged, named)] += 1
                        total += 1
                        located += found
                        mark = "ok " if staged == named else "MISS"
                        print(
                            f"{mark} {scenario.value:<20} types={size:<3} seed={seed:<3}"
                            f" at={hour:02d}:00 staged={staged:<21} named={named:<21}"
                            f" located={found}",
                            flush=True,
                        )
    right = sum(n for (staged, named), n in matrix.items() if staged == named)
    wrong_on_healthy = sum(
        n for (staged, named), n in matrix.items() if staged == "none" and named != "none"
    )
    print(f"\nconfusion matrix ({total} runs, {time.monotonic() - started:.0f} s)")
    print_matrix(matrix, CAUSES)
    print(f"\nright primary cause: {right}/{total} = {100 * right / total:.1f} % (target 95 %)")
    print(f"staged runner types named with their cause: {located}/{total}")
    print(f"confident wrong answers on healthy data: {wrong_on_healthy} (target 0)")
    if counted:
        wait_errors.sort()
        print(f"jobs queued exact for every runner type: {exact}/{counted} runs")
        middle = wait_errors[len(wait_errors) // 2]
        print(
            f"longest wait, error against the truth: p50 {middle:.0f} s,"
            f" max {wait_errors[-1]:.0f} s (target within 60 s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
