"""A workflow's usual jobs a minute from ARC's metrics: the mean over the usual days."""

from __future__ import annotations

from pytest import approx

from bot.fleet.signals import mean_by_group


def test_a_workflow_in_few_windows_of_the_usual_days_is_usual_there() -> None:
    # A job that comes a few times an hour is in two of seven ten-minute windows: the median
    # of the days would be none, and its jobs now would read as new to the type.
    days = [{"linux": {"pull": 0.1, "trunk": 0.5}} for _ in range(2)]
    days += [{"linux": {"trunk": 0.4}} for _ in range(5)]
    usual = mean_by_group(days)
    assert usual["linux"]["pull"] == approx(0.2 / 7)
    assert usual["linux"]["trunk"] == approx((2 * 0.5 + 5 * 0.4) / 7)


def test_days_without_the_type_are_not_counted() -> None:
    # Before the history began (or a type new since), a day has no series of the type at all:
    # no day of none.
    days: list[dict[str, dict[str, float]]] = [{"linux": {"pull": 0.3}}, {}, {}]
    days.append({"linux": {"pull": 0.1}, "windows": {"pull": 0.6}})
    usual = mean_by_group(days)
    assert usual["linux"] == {"pull": approx((0.3 + 0.1) / 2)}
    assert usual["windows"] == {"pull": 0.6}
