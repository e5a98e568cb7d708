"""An alert's values in words: naming only what a message shows gives what naming all gave."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.domain.alerts import Alert, AlertStatus
from bot.render.mrkdwn import clip
from bot.render.values import MAX_VALUE_SUMMARY, key_values, value_summary


def _alert(values: dict[str, float | None]) -> Alert:
    return Alert(
        status=AlertStatus.FIRING,
        fingerprint="f",
        labels={"alertname": "Jobs are queueing"},
        annotations={},
        starts_at=datetime(2026, 11, 24, 3, tzinfo=UTC),
        values=values,
    )


ALERTS = [
    _alert({}),
    _alert({"max_queue_time_mins": 114.0, "max_queue_size": 14.0, "B": 1.0}),
    # Hundreds of long names that grow when escaped, and emoji Slack counts twice.
    _alert({f"value_{n}_{'&<' * 300}": float(n) for n in range(500)}),
    _alert({f"🚨{n:03d}{'x' * (n % 40)}": n / 3 for n in range(120)}),
    # Names that end a cut inside an entity or a token, wherever the line fills.
    _alert({f"{n:03d}" + "&" * (n % 7): None for n in range(300)}),
]


@pytest.mark.parametrize("alert", ALERTS)
def test_the_summary_of_the_values_that_fit_is_the_summary_of_them_all(alert: Alert) -> None:
    everything = ", ".join(item.replace("*", "") for item in key_values(alert))
    assert value_summary(alert) == clip(everything, MAX_VALUE_SUMMARY)


@pytest.mark.parametrize("alert", ALERTS)
@pytest.mark.parametrize("most", [0, 1, 10, 1000])
def test_at_most_so_many_values_are_the_first_of_them_all(alert: Alert, most: int) -> None:
    assert key_values(alert, most=most) == key_values(alert)[:most]
