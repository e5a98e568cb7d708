"""The suite's timings: the product's leases, pacing and pollers a tenth as long as their
documented defaults (README "Timings"), and the local Slack's message limit ten times as high
to match, so no test waits out a production interval."""

from __future__ import annotations

import dataclasses

from bot.domain.timings import Timings

#: How much faster the suite runs the product's clocks than production does.
SCALE = 10.0

#: Each timing's variable, by its name in `Timings`.
VARIABLES = {
    "outbox_lease": "QUEUEBOT_OUTBOX_LEASE_SECONDS",
    "outbox_poll": "QUEUEBOT_OUTBOX_POLL_SECONDS",
    "posts_per_second": "QUEUEBOT_SLACK_POSTS_PER_SECOND",
    "digest_edit": "QUEUEBOT_DIGEST_EDIT_SECONDS",
    "digest_claim": "QUEUEBOT_DIGEST_CLAIM_SECONDS",
    "diagnosis_claim": "QUEUEBOT_DIAGNOSIS_CLAIM_SECONDS",
    "heads_up_poll": "QUEUEBOT_HEADS_UP_POLL_SECONDS",
    "report_poll": "QUEUEBOT_REPORT_POLL_SECONDS",
    "schedule_check": "QUEUEBOT_CAPACITY_SCHEDULE_CHECK_SECONDS",
    "prune_interval": "QUEUEBOT_PRUNE_SECONDS",
    "silence_check": "QUEUEBOT_SILENCE_CHECK_SECONDS",
    "forecast_check": "QUEUEBOT_FORECAST_CHECK_SECONDS",
}

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
    return {variable: f"{getattr(FAST, name):g}" for name, variable in VARIABLES.items()}


def slack_scale() -> float:
    """How much higher the local Slack's limits are for the bots of this process."""
    return SCALE if _suite else 1.0
