"""The fleet simulator behind `queuebot simulate`: its output is OpenMetrics promtool reads, in the
label sets actions-runner-controller's metrics really have, it is reproducible, and, backfilled
into a real Prometheus, every query of the query pack answers for every runner type, with each
scenario's signature on the affected types and a healthy fleet on the others.

The Prometheus tests use the shared fleets (`testkit.fleets`: 27 hours of 6 runner types
every 2 minutes); "a day earlier" is the same hour the day before.
"""

from __future__ import annotations

import asyncio
import io
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bot.fleet.measures import BY_WORKFLOW, Signal
from bot.fleet.sources.querypack import DEFAULT_QUERIES, QueryPack
from queuebot_lab.simulator import (
    CAUSES,
    MAX_HOURS,
    MetricsShape,
    Scenario,
    SimulationSpec,
    Truth,
    runner_type_names,
    simulate,
    write_file,
)
from queuebot_lab.simulator.profiles import workflow_of
from queuebot_lab.simulator.simulate import run_cli
from queuebot_lab.simulator.spec import UNBOUNDED_TYPE
from testkit.fixtures import PrometheusFactory
from testkit.fleets import FLEET_END, FLEET_TYPES, Fleets, in_session_loop
from testkit.integration import require_binary
from testkit.prometheus import Prometheus, stored_samples

END = FLEET_END
DAY = timedelta(days=1)
SEED = 1
TYPES = FLEET_TYPES
PACK = QueryPack()
#: Percentiles from buckets: none where the percentile reaches the last bucket (an hour).
QUANTILES = (
    Signal.QUEUE_TIME_P50,
    Signal.QUEUE_TIME_P90,
    Signal.DURATION_P50,
    Signal.DURATION_P90,
)
#: The pack's own pattern from a runner pod's name to its runner type.
POD_PATTERN = re.findall(r'"pod", "([^"]+)"', DEFAULT_QUERIES[Signal.OOM_KILLS])[0]
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\} (\S+) (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"')
SUFFIXES = {"gauge": ("",), "counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
JOB_SERIES = (
    "gha_started_jobs",
    "gha_completed_jobs",
    "gha_job_startup_duration_seconds",
    "gha_job_execution_duration_seconds",
)


def _small(scenario: Scenario = Scenario.MIX, seed: int = 3) -> SimulationSpec:
    return SimulationSpec(scenario, hours=4, runner_types=4, seed=seed, end=END, step_seconds=120)


def _text(spec: SimulationSpec, shape: MetricsShape = MetricsShape.ARC) -> tuple[str, Truth]:
    out = io.StringIO()
    truth = simulate(spec, out, shape)
    return out.getvalue(), truth


# -- the output, without Prometheus ------------------------------------------------------------


def test_runner_types_are_the_busy_main_types_then_numbered_variants() -> None:
    assert runner_type_names(6) == [
        "linux-2xlarge",
        "linux-4xlarge",
        "linux-12xlarge",
        "linux-g5-4xlarge-nvidia-gpu",
        "linux-arm64-2xlarge",
        "windows-4xlarge",
    ]
    many = runner_type_names(50)
    assert many[:6] == runner_type_names(6) and len(set(many)) == 50
    assert "linux-2xlarge-2" in many
    assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) for name in many)
    with pytest.raises(ValueError):
        runner_type_names(0)


def test_the_same_seed_writes_the_same_bytes() -> None:
    first, truth = _text(_small())
    again, truth_again = _text(_small())
    assert first == again and truth == truth_again
    other, _ = _text(_small(seed=4))
    assert other != first


@pytest.mark.parametrize("shape", list(MetricsShape))
def test_the_output_is_openmetrics_as_promtool_wants_it(shape: MetricsShape) -> None:
    """One block of lines per family and per series, in time order, timestamps in whole seconds,
    ending with `# EOF`; histograms cumulative; counters never going down."""
    spec = _small()
    text, _ = _text(spec, shape)
    assert text.endswith("\n# EOF\n") and text.count("# EOF") == 1
    step, samples = spec.step_seconds, int(spec.hours * 3600 // spec.step_seconds) + 1
    stamps = [int(END.timestamp()) - (samples - 1 - i) * step for i in range(samples)]
    series, kinds = _series(text)
    assert set(kinds) >= {"gha_assigned_jobs", "gha_started_jobs"}
    for (metric, labels), points in series.items():
        assert [t for t, _ in points] == stamps, (metric, labels)
        values = [v for _, v in points]
        assert all(math.isfinite(v) and v >= 0 for v in values)
        if metric.endswith(("_total", "_bucket", "_sum", "_count")):
            assert values == sorted(values), f"counter {metric}{{{labels}}} goes down"
    if shape is MetricsShape.ARC:
        _assert_histograms_are_cumulative(series)


def _series(
    text: str,
) -> tuple[dict[tuple[str, str], list[tuple[int, float]]], dict[str, str]]:
    """Every series of an OpenMetrics text with its points, and each family's type."""
    kinds: dict[str, str] = {}
    family = ""
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    last_key: tuple[str, str] | None = None
    for line in text.splitlines()[:-1]:
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(" ")
            assert family not in kinds, f"family {family} appears twice"
            kinds[family] = kind
            continue
        if line.startswith("# HELP "):
            continue
        match = SAMPLE.match(line)
        assert match, line
        metric, labels, value, stamp = match.groups()
        assert metric in {family + suffix for suffix in SUFFIXES[kinds[family]]}, line
        assert stamp.isdigit(), f"not whole seconds: {line}"
        key = (metric, labels)
        if key != last_key:
            assert key not in series, f"series {key} is split"
            series[key], last_key = [], key
        series[key].append((int(stamp), float(value)))
    return series, kinds


@pytest.mark.parametrize("shape", list(MetricsShape))
def test_series_carry_the_labels_actions_runner_controller_gives_them(
    shape: MetricsShape,
) -> None:
    """Scale-set gauges carry `name`; job series carry no `name`, only the job's own labels
    (and `job_result` where a job ended); the scrape adds the listener pod's scale-set label;
    buckets stop at an hour; a lean scrape has no buckets and no runner gauges, and a
    `cluster`."""
    series, kinds = _series(_text(_small(), shape)[0])
    bounds: set[float] = set()
    for metric, labels in series:
        keys = dict(LABEL.findall(labels))
        family = next(f for f in kinds if metric.startswith(f))
        if family.startswith("container_"):
            assert {"pod", "container", "namespace"} <= set(keys), labels
            continue
        assert "actions_github_com_scale_set_name" in keys or family.startswith(
            "gha_controller_"
        ), labels
        assert ("cluster" in keys) == (shape is MetricsShape.ARC_LEAN), labels
        if family in JOB_SERIES:
            assert "name" not in keys and "namespace" not in keys, labels
            assert {"organization", "repository", "job_name", "event_name"} <= set(keys)
            assert ("job_result" in keys) == (
                family in ("gha_completed_jobs", "gha_job_execution_duration_seconds")
            ), labels
            workflow = "job_workflow_ref" if shape is MetricsShape.ARC else "job_workflow_name"
            assert workflow in keys, labels
        else:
            assert {"name", "namespace", "organization"} <= set(keys), labels
        if "le" in keys and keys["le"] != "+Inf":
            bounds.add(float(keys["le"]))
    gauges = {f for f, kind in kinds.items() if kind == "gauge"}
    if shape is MetricsShape.ARC:
        assert max(bounds) == 3600 and min(bounds) == 0.01
        assert {"gha_max_runners", "gha_controller_failed_ephemeral_runners"} <= gauges
    else:
        assert bounds == set()
        assert gauges == {"gha_assigned_jobs", "gha_running_jobs"}


def _assert_histograms_are_cumulative(
    series: dict[tuple[str, str], list[tuple[int, float]]],
) -> None:
    buckets: dict[tuple[str, str], list[tuple[float, list[float]]]] = {}
    for (metric, labels), points in series.items():
        if metric.endswith("_bucket"):
            le = dict(LABEL.findall(labels))["le"]
            rest = re.sub(r',?le="[^"]*"', "", labels)
            buckets.setdefault((metric[: -len("_bucket")], rest), []).append(
                (float(le), [v for _, v in points])
            )
    assert buckets
    for (metric, labels), columns in buckets.items():
        columns.sort()
        assert columns[-1][0] == math.inf
        for i in range(len(columns[0][1])):
            counts = [column[i] for _, column in columns]
            assert counts == sorted(counts), (metric, labels)
        assert columns[-1][1] == [v for _, v in series[(f"{metric}_count", labels)]]


def test_runner_pods_map_to_their_runner_type_with_the_packs_pattern() -> None:
    text, _ = _text(_small())
    pods = set(re.findall(r'pod="([^"]+)"', text))
    names = runner_type_names(4)
    owners = [re.fullmatch(POD_PATTERN, pod) for pod in pods]
    assert all(owners)
    assert sorted(match.group(1) for match in owners if match) == sorted(names * 3)


@pytest.mark.parametrize("scenario", list(Scenario))
def test_the_truth_names_the_staged_problem(scenario: Scenario) -> None:
    spec = SimulationSpec(scenario, hours=4, runner_types=TYPES, seed=SEED, end=END)
    truth = simulate(spec, io.StringIO())
    assert truth.scenario is scenario
    if scenario is Scenario.HEALTHY:
        assert truth == Truth(scenario, "none", {}, None)
        return
    assert truth.problem_start is not None
    assert END - timedelta(hours=3) <= truth.problem_start <= END - timedelta(hours=1)
    assert set(truth.affected) <= set(runner_type_names(TYPES))
    assert truth.primary_cause in truth.affected.values()
    if scenario is Scenario.MIX:
        assert len(truth.affected) == 2 and len(set(truth.affected.values())) == 2
    else:
        assert 1 <= len(truth.affected) <= 3
        assert set(truth.affected.values()) == {CAUSES[scenario]}


@pytest.mark.parametrize(
    "spec",
    [
        SimulationSpec(Scenario.HEALTHY, 4, 2, 1, END.replace(tzinfo=None)),
        SimulationSpec(Scenario.HEALTHY, 0, 2, 1, END),
        SimulationSpec(Scenario.HEALTHY, MAX_HOURS + 1, 2, 1, END),
        SimulationSpec(Scenario.HEALTHY, 4, 2, 1, END, step_seconds=0),
        SimulationSpec(Scenario.MIX, 4, 1, 1, END),
    ],
    ids=["naive end", "no hours", "beyond retention", "no step", "mix of one type"],
)
def test_impossible_specs_are_refused(spec: SimulationSpec) -> None:
    with pytest.raises(ValueError):
        simulate(spec, io.StringIO())


def test_run_cli_writes_the_file_and_says_what_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fleet.om"
    assert run_cli("surge", 2, 3, 5, out, END, 120) == 0
    line = capsys.readouterr().out
    assert line.count("\n") == 1
    assert "series" in line and "samples" in line and "increased_workload" in line
    assert out.read_text().endswith("# EOF\n")

    assert run_cli("surge", 1, 1, 5, out, None, 300) == 0  # ends now
    assert "no runner type" not in capsys.readouterr().out
    assert run_cli("meltdown", 2, 3, 5, out, END, 120) == 2
    assert "meltdown" in capsys.readouterr().err
    assert run_cli("mix", 2, 1, 5, out, END, 120) == 2


# -- through a real Prometheus -----------------------------------------------------------------


@dataclass
class Fleet:
    """One scenario's history in a running Prometheus, and the pack's answers, read once."""

    prometheus: Prometheus
    truth: Truth
    names: list[str]
    answers: dict[tuple[Signal, datetime], list[tuple[dict[str, str], float]]] = field(
        default_factory=dict
    )

    async def read(self, signal: Signal, at: datetime = END) -> list[tuple[dict[str, str], float]]:
        if (signal, at) not in self.answers:
            result = await self.prometheus.query(PACK.query(signal), at)
            self.answers[(signal, at)] = [(s["metric"], float(s["value"][1])) for s in result]
        return self.answers[(signal, at)]

    async def by_type(self, signal: Signal, at: datetime = END) -> dict[str, float]:
        values: dict[str, float] = {}
        for labels, value in await self.read(signal, at):
            assert labels["name"] not in values, f"{signal}: two series for {labels['name']}"
            values[labels["name"]] = value
        return values


async def _fleet(fleets: Fleets, scenario: Scenario) -> Fleet:
    prometheus, truth = await fleets(scenario)
    return Fleet(prometheus, truth, runner_type_names(TYPES))


@pytest.mark.integration
async def test_promtool_reads_a_whole_file_as_written(tmp_path: Path) -> None:
    """Not split into blocks first: the file itself is what promtool accepts, every sample."""
    promtool = require_binary("promtool", "apt-get install -y prometheus")
    path = tmp_path / "fleet.om"
    write_file(SimulationSpec(Scenario.SURGE, 5, 3, SEED, END, 120), path)
    lines = sum(1 for line in path.read_text().splitlines() if not line.startswith("#"))
    process = await asyncio.create_subprocess_exec(
        promtool,
        "tsdb",
        "create-blocks-from",
        "openmetrics",
        str(path),
        str(tmp_path / "data"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    async with asyncio.timeout(60):
        output, _ = await process.communicate()
    assert process.returncode == 0, output.decode()
    assert stored_samples(output.decode()) == lines


@pytest.mark.integration
async def test_prometheus_for_serves_a_fleet_whose_last_sample_is_at_the_end(
    prometheus_for: PrometheusFactory,
) -> None:
    spec = SimulationSpec(Scenario.HEALTHY, hours=5, runner_types=3, seed=SEED, end=END)
    prometheus, truth = await prometheus_for(spec)
    assert truth.scenario is Scenario.HEALTHY and truth.affected == {}
    answer = await prometheus.query("timestamp(gha_registered_runners)", END)
    assert sorted(s["metric"]["name"] for s in answer) == sorted(runner_type_names(3))
    assert {float(s["value"][1]) for s in answer} == {END.timestamp()}


@pytest.mark.integration
@in_session_loop
@pytest.mark.parametrize("scenario", list(Scenario))
async def test_every_query_of_the_pack_answers_for_every_runner_type(
    fleets: Fleets, scenario: Scenario
) -> None:
    fleet = await _fleet(fleets, scenario)
    pairs = await fleet.prometheus.query(
        "count by (actions_github_com_scale_set_name, job_workflow_ref) (gha_started_jobs_total)",
        END,
    )
    workflows = {
        (
            s["metric"]["actions_github_com_scale_set_name"],
            workflow_of(s["metric"]["job_workflow_ref"]),
        )
        for s in pairs
    }
    assert {name for name, _ in workflows} == set(fleet.names)
    unbounded = fleet.names[UNBOUNDED_TYPE]
    for signal in DEFAULT_QUERIES:
        answer = await fleet.read(signal)
        if signal in BY_WORKFLOW:
            keys = {(labels["name"], labels["workflow"]) for labels, _ in answer}
            assert keys <= workflows and len(answer) == len(keys), signal
            if signal is Signal.STARTED_BY_WORKFLOW:
                assert keys == workflows
            assert all(math.isfinite(v) for _, v in answer) or signal in {
                Signal.DURATION_MEAN_BY_WORKFLOW  # a workflow with no job ended: 0 / 0
            }
            continue
        values = await fleet.by_type(signal)
        if signal is Signal.MAX_RUNNERS:
            assert set(values) == set(fleet.names) - {unbounded}
        elif signal in QUANTILES:
            assert set(values) <= set(fleet.names), signal
        else:
            assert set(values) == set(fleet.names), signal
        assert all(math.isfinite(v) for v in values.values()), (signal, values)


@dataclass
class Readings:
    """The pack's answers about one runner type, now and at the same time a day earlier."""

    now: dict[Signal, float]
    day_before: dict[Signal, float]

    def grew(self, signal: Signal) -> float:
        return self.now[signal] / max(self.day_before[signal], 1e-9)


async def _readings(fleet: Fleet, name: str) -> Readings:
    now = {
        signal: value
        for signal in DEFAULT_QUERIES
        if signal not in BY_WORKFLOW
        and (value := (await fleet.by_type(signal)).get(name)) is not None
    }
    before = {
        signal: (await fleet.by_type(signal, END - DAY))[name]
        for signal in (Signal.STARTED_PER_MINUTE, Signal.DURATION_MEAN)
    }
    return Readings(now, before)


def _healthy(r: Readings) -> list[str]:
    now = r.now
    return [
        claim
        for claim, holds in (
            ("jobs started within 5 minutes", now[Signal.QUEUE_TIME_MEAN] < 300),
            ("next to no queue", now[Signal.QUEUED] <= max(5, 0.05 * now[Signal.REGISTERED])),
            (
                "desired well below max",
                now[Signal.DESIRED] < 0.5 * now.get(Signal.MAX_RUNNERS, math.inf),
            ),
            ("no failed runners", now[Signal.FAILED_RUNNERS] == 0),
            ("little throttling", now[Signal.CPU_THROTTLED] < 0.2),
            ("no OOM kills", now[Signal.OOM_KILLS] == 0),
        )
        if not holds
    ]


def _queueing(r: Readings) -> list[tuple[str, bool]]:
    now = r.now
    return [
        ("jobs queue", now[Signal.QUEUED] > 0),
        ("and those started waited more than 5 minutes", now[Signal.QUEUE_TIME_MEAN] >= 300),
    ]


def _signature(cause: str, r: Readings) -> list[str]:
    now = r.now
    below_max = (
        "desired below max",
        now[Signal.DESIRED] < now.get(Signal.MAX_RUNNERS, math.inf),
    )
    no_failures = ("no failed runners", now[Signal.FAILED_RUNNERS] == 0)
    not_starved = ("little throttling", now[Signal.CPU_THROTTLED] < 0.2)
    claims = {
        "increased_workload": [
            ("starts at least 2.5x a day earlier", r.grew(Signal.STARTED_PER_MINUTE) >= 2.5),
            ("mean job time as usual", r.grew(Signal.DURATION_MEAN) < 1.5),
            below_max,
            no_failures,
            not_starved,
        ],
        "autoscaling_limits": [
            ("desired at max", now[Signal.DESIRED] == now[Signal.MAX_RUNNERS]),
            ("registered at max", now[Signal.REGISTERED] == now[Signal.MAX_RUNNERS]),
            ("no idle runner", now[Signal.IDLE] == 0),
            ("starts not up", r.grew(Signal.STARTED_PER_MINUTE) < 1.5),
        ],
        "long_running_jobs": [
            ("mean job time at least 2x a day earlier", r.grew(Signal.DURATION_MEAN) >= 2),
            ("starts not way up", r.grew(Signal.STARTED_PER_MINUTE) < 2),
            below_max,
            no_failures,
            not_starved,
        ],
        "infrastructure": [
            (
                "registered far below desired",
                now[Signal.DESIRED] - now[Signal.REGISTERED] >= 0.5 * now[Signal.DESIRED],
            ),
            ("failed runners", now[Signal.FAILED_RUNNERS] >= 3),
            ("pending runners", now[Signal.PENDING_RUNNERS] >= 5),
            ("starts not up", r.grew(Signal.STARTED_PER_MINUTE) < 1.5),
            below_max,
        ],
        "resource_constraints": [
            ("at least half the CPU periods throttled", now[Signal.CPU_THROTTLED] >= 0.5),
            ("OOM kills", now[Signal.OOM_KILLS] > 0),
            ("starts not way up", r.grew(Signal.STARTED_PER_MINUTE) < 2),
            below_max,
            no_failures,
        ],
    }[cause]
    return [claim for claim, holds in [*_queueing(r), *claims] if not holds]


@pytest.mark.integration
@in_session_loop
@pytest.mark.parametrize("scenario", list(Scenario))
async def test_each_scenario_shows_its_signature_and_nothing_else(
    fleets: Fleets, scenario: Scenario
) -> None:
    """Through the pack's queries: the affected types show their cause; the rest look healthy."""
    fleet = await _fleet(fleets, scenario)
    failures = {}
    for name in fleet.names:
        readings = await _readings(fleet, name)
        cause = fleet.truth.affected.get(name)
        wrong = _healthy(readings) if cause is None else _signature(cause, readings)
        if wrong:
            failures[name] = (cause or "healthy", wrong, readings.now, readings.day_before)
    assert not failures


@pytest.mark.integration
@in_session_loop
async def test_a_mix_is_led_by_the_type_that_queues_worst(fleets: Fleets) -> None:
    fleet = await _fleet(fleets, Scenario.MIX)
    queued = await fleet.by_type(Signal.QUEUED)
    worst = max(fleet.truth.affected, key=lambda name: queued[name])
    assert fleet.truth.primary_cause == fleet.truth.affected[worst]
