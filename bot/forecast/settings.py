"""The early warning's part of the YAML file: which channels get heads-ups, for which runner
types, and the alert rule's threshold they warn of."""

from __future__ import annotations

import fnmatch

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field

from bot.forecast.projection import Threshold


class EarlyWarning(BaseModel):
    """Heads-ups in one channel before the alert fires (`early_warning:` in the YAML file)."""

    model_config = ConfigDict(extra="forbid")

    channel: str = Field(min_length=1)
    #: The alert rule's threshold: more than `queued` jobs queueing, the longest waiting
    #: `wait_minutes` or more (jobs count as queueing as `jobs.queued_after_seconds` says).
    wait_minutes: float = Field(60.0, ge=5, le=24 * 60)
    queued: int = Field(5, ge=0)
    #: How far ahead the queue is projected: a heads-up comes at most this long before.
    horizon_minutes: float = Field(30.0, ge=5, le=120)
    #: Runner types watched (`*` patterns, any case); none listed: every type that counts.
    runner_types: tuple[str, ...] = ()
    #: Shown as an Open runbook button on each heads-up.
    runbook_url: AnyHttpUrl | None = None
    #: New heads-ups posted at one check, at most; the others that start then are named in
    #: one line of the last one (a burst of new runner-type labels posts no flood).
    max_new_heads_ups: int = Field(5, ge=1, le=50)

    def threshold(self, queued_after: float) -> Threshold:
        return Threshold(self.wait_minutes * 60.0, self.queued, queued_after)

    def watches(self, runner_type: str) -> bool:
        name = runner_type.lower()
        return not self.runner_types or any(
            fnmatch.fnmatchcase(name, pattern.lower()) for pattern in self.runner_types
        )
