"""Runners failing across the fleet: which types queueing are counted with those where runners
fail, and when the fleet has too few of them for one cause across it."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.diagnostics.inference import Guess, across_fleet
from bot.diagnostics.runner_checks import Check
from bot.domain.diagnosis import Cause, Confidence, Evidence, RunnerTypeState, Verdict
from bot.fleet.measures import Signal
from bot.fleet.signals import FleetSignals

AT = datetime(2026, 11, 26, 22, 7, tzinfo=UTC)
FAILING = (Verdict.LIKELY, (Evidence(runner_type="", measure="busy runners", now=1.0),))
RULED_OUT: Check = (Verdict.RULED_OUT, ())


def _fleet(busy: dict[str, tuple[float, float]]) -> FleetSignals:
    """Busy runners held at a level (now and half an hour before), against a usual."""
    fleet = FleetSignals(at=AT, window="10m")
    fleet.now = {Signal.RUNNING: {name: level for name, (level, _) in busy.items()}}
    fleet.earlier = {
        Signal.RUNNING: [{name: level for name, (level, _) in busy.items()}] * 2,
        Signal.QUEUED: [{name: 20.0 for name in busy}] * 2,
    }
    fleet.baseline = {Signal.RUNNING: {name: usual for name, (_, usual) in busy.items()}}
    return fleet


def _state(name: str) -> RunnerTypeState:
    return RunnerTypeState(
        name=name, queued=40.0, max_wait_seconds=3000.0, busy=None, registered=None, affected=True
    )


def _verdicts(likely: dict[str, list[Cause]]) -> dict[Cause, dict[str, Check]]:
    verdicts: dict[Cause, dict[str, Check]] = {cause: {} for cause in Cause}
    for name, causes in likely.items():
        for cause in Cause:
            verdicts[cause][name] = FAILING if cause in causes else RULED_OUT
    return verdicts


def _run(
    likely: dict[str, list[Cause]],
    busy: dict[str, tuple[float, float]],
    guessed: dict[str, Guess] | None = None,
) -> tuple[dict[str, Guess], dict[Cause, dict[str, Check]]]:
    verdicts = _verdicts(likely)
    counted = across_fleet(verdicts, _fleet(busy), [_state(n) for n in likely], guessed or {})
    return counted, verdicts


INFRA, LIMITS = [Cause.INFRASTRUCTURE], [Cause.AUTOSCALING_LIMITS]
OWN = [Cause.LONG_RUNNING_JOBS]


def test_a_type_held_below_its_usual_counts_where_half_the_types_are_short_of_runners() -> None:
    likely = {"a": INFRA, "b": INFRA, "held": LIMITS, "x": OWN, "y": OWN, "z": OWN}
    busy = {name: (10.0, 10.0) for name in likely} | {"held": (9.0, 30.0)}
    counted, verdicts = _run(likely, busy)
    assert counted == {"held": (Cause.INFRASTRUCTURE, Confidence.LOW)}
    verdict, evidence = verdicts[Cause.INFRASTRUCTURE]["held"]
    assert verdict is Verdict.LIKELY
    assert evidence[0].measure == "runner types short of runners" and evidence[0].now == 3.0
    assert "3 of the 6 types queueing" in evidence[0].why
    for own in ("x", "y", "z"):
        assert verdicts[Cause.INFRASTRUCTURE][own][0] is Verdict.RULED_OUT


def test_fewer_than_half_the_types_short_of_runners_count_no_other() -> None:
    likely = {"a": INFRA, "b": INFRA, "held": LIMITS, "w": OWN, "x": OWN, "y": OWN, "z": OWN}
    busy = {name: (10.0, 10.0) for name in likely} | {"held": (9.0, 30.0)}
    counted, verdicts = _run(likely, busy)
    assert counted == {}
    assert verdicts[Cause.INFRASTRUCTURE]["held"][0] is Verdict.RULED_OUT


def test_a_ceiling_at_the_usual_level_is_no_runners_short() -> None:
    likely = {"a": INFRA, "b": INFRA, "ceiling": LIMITS, "x": OWN, "y": OWN}
    busy = {name: (10.0, 10.0) for name in likely} | {"ceiling": (30.0, 30.0)}
    counted, verdicts = _run(likely, busy)
    assert counted == {}
    assert verdicts[Cause.INFRASTRUCTURE]["ceiling"][0] is Verdict.RULED_OUT
    # Held below its usual level, the same type is short of runners: 3 of the 5.
    counted, verdicts = _run(likely, busy | {"ceiling": (9.0, 30.0)})
    assert counted == {"ceiling": (Cause.INFRASTRUCTURE, Confidence.LOW)}


def test_two_types_failing_of_three_count_a_ceiling_at_any_level() -> None:
    likely = {"a": INFRA, "b": INFRA, "ceiling": LIMITS}
    busy = {name: (10.0, 10.0) for name in likely} | {"ceiling": (12.0, 7.0)}
    counted, verdicts = _run(likely, busy)
    assert counted == {"ceiling": (Cause.INFRASTRUCTURE, Confidence.LOW)}
    assert "2 of the 3 types queueing" in verdicts[Cause.INFRASTRUCTURE]["ceiling"][1][0].why
    # One type failing beside a ceiling is two causes, not one across the fleet.
    counted, _ = _run({"a": INFRA, "ceiling": LIMITS}, busy)
    assert counted == {}


def test_a_cause_of_its_own_is_kept_and_a_guess_or_none_is_counted() -> None:
    likely = {
        "a": INFRA,
        "b": INFRA,
        "c": INFRA,
        "starved": [Cause.RESOURCE_CONSTRAINTS, Cause.INCREASED_WORKLOAD],
        "guessed": [Cause.INCREASED_WORKLOAD],
        "none": [],
    }
    busy = {name: (10.0, 10.0) for name in likely}
    guessed: dict[str, Guess] = {
        "starved": (Cause.INCREASED_WORKLOAD, Confidence.MEDIUM),
        "guessed": (Cause.INCREASED_WORKLOAD, Confidence.MEDIUM),
    }
    counted, verdicts = _run(likely, busy, guessed)
    assert set(counted) == {"guessed", "none"}
    assert verdicts[Cause.INFRASTRUCTURE]["starved"][0] is Verdict.RULED_OUT


def test_no_cause_with_evidence_against_runners_failing_is_not_counted() -> None:
    likely: dict[str, list[Cause]] = {"a": INFRA, "b": INFRA, "c": INFRA, "starting": []}
    verdicts = _verdicts(likely)
    starting = Evidence(runner_type="starting", measure="runners offline", now=40.0)
    verdicts[Cause.INFRASTRUCTURE]["starting"] = (Verdict.RULED_OUT, (starting,))
    fleet = _fleet({name: (10.0, 10.0) for name in likely})
    counted = across_fleet(verdicts, fleet, [_state(n) for n in likely], {})
    assert counted == {}
    assert verdicts[Cause.INFRASTRUCTURE]["starting"] == (Verdict.RULED_OUT, (starting,))


def test_no_cause_where_started_jobs_waited_as_usual_is_not_counted() -> None:
    likely: dict[str, list[Cause]] = {"a": INFRA, "b": INFRA, "c": INFRA, "quick": []}
    verdicts = _verdicts(likely)
    fleet = _fleet({name: (10.0, 10.0) for name in likely})
    fleet.now[Signal.QUEUE_TIME_P50] = {"quick": 200.0}
    fleet.baseline[Signal.QUEUE_TIME_P50] = {"quick": 180.0}
    assert across_fleet(verdicts, fleet, [_state(n) for n in likely], {}) == {}
    fleet.now[Signal.QUEUE_TIME_P50] = {"quick": 1800.0}
    assert set(across_fleet(verdicts, fleet, [_state(n) for n in likely], {})) == {"quick"}


def test_three_queues_begun_together_count_a_ceiling_beside_one_failing_and_one_short() -> None:
    # One type with runners failing, one held below its usual level, one held above it: alone,
    # two limits and a failure. Queues begun within half an hour of each other on every type
    # are one cause across the fleet; begun hours apart, each type keeps its own.
    likely = {"a": INFRA, "held": LIMITS, "ceiling": LIMITS}
    busy = {"a": (10.0, 10.0), "held": (5.0, 20.0), "ceiling": (30.0, 20.0)}
    start = AT.timestamp() - 3 * 3600

    def counted_with(began: dict[str, float]) -> dict[str, Guess]:
        verdicts = _verdicts(likely)
        states = [_state(n).model_copy(update={"since": began[n]}) for n in likely]
        return across_fleet(verdicts, _fleet(busy), states, {})

    together = counted_with({"a": start, "held": start + 600, "ceiling": start + 1500})
    assert together == {
        "held": (Cause.INFRASTRUCTURE, Confidence.LOW),
        "ceiling": (Cause.INFRASTRUCTURE, Confidence.LOW),
    }
    assert counted_with({"a": start, "held": start + 600, "ceiling": start + 7200}) == {}
