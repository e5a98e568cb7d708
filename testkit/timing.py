"""The suite's timings: the product's leases, pacing and pollers a tenth as long as their
documented defaults (docs/settings.md, "Timings"), and the local Slack's message limit ten
times as high to match, so no test waits out a production interval."""

from __future__ import annotations

import dataclasses

from bot.config import TIMING_VARIABLES
from bot.domain.timings import Timings

#: How much faster the suite runs the product's clocks than production does.
SCALE = 10.0


#: The timings as the suite's bots run them.
FAST = Timings(
    **{
        field.name: getattr(Timings(), field.name) * SCALE
        if field.name == "posts_per_second"
        else getattr(Timings(), field.name) / SCALE
        for field in dataclasses.fields(Timings)
    }
)


#: Whether this process is the test suite (its plugin, `testkit.fixtures`, says so): the
#: benchmarks share the harness and measure the documented defaults.
_suite = False


def in_the_suite() -> None:
    global _suite
    _suite = True


def fast_environment() -> dict[str, str]:
    """`FAST` as the environment variables a bot reads, in the test suite; nothing (the
    defaults) elsewhere."""
    if not _suite:
        return {}
    return {variable: f"{getattr(FAST, name):g}" for name, variable in TIMING_VARIABLES.items()}


def slack_scale() -> float:
    """How much higher the local Slack's limits are for the bots of this process."""
    return SCALE if _suite else 1.0
