"""A heads-up before the queue alert as it should read: what the early warning (bot.forecast)
decided, in the plain values its message shows, stored until it is shown in Slack."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import StrEnum


class Phase(StrEnum):
    WARNING = "warning"  # the queue is projected to cross the threshold within the horizon
    FIRED = "fired"  # the threshold was crossed: the alert's own message takes over
    NORMAL = "normal"  # the trend reversed: back to normal


@dataclass(frozen=True)
class HeadsUpView:
    """Everything one heads-up message shows (times in Unix seconds, waits in seconds)."""

    runner_type: str
    phase: Phase
    started_at: float
    at: float
    queued: int
    longest_wait: float
    arrivals_per_minute: float
    starts_per_minute: float
    #: The alert rule's threshold.
    threshold_wait: float
    threshold_queued: int
    #: Minutes until the threshold is crossed at this rate (while the heads-up is out).
    crossing_in: float | None = None
    #: Arrivals a minute at this time on the usual days (None without history).
    usual_arrivals: float | None = None
    #: The workflows most of the arrivals now come from, most first.
    workflows: tuple[str, ...] = ()
    runbook_url: str | None = None
    #: The alert's message once the threshold was crossed: linked, and replied to.
    alert_link: str | None = None
    alert_channel_id: str | None = None
    alert_ts: str | None = None
    #: Other runner types that started heading for the alert at the same check, beyond the
    #: channel's cap of new heads-ups: named here in one line, not posted each.
    others: tuple[str, ...] = ()

    @property
    def growth_per_minute(self) -> float:
        return self.arrivals_per_minute - self.starts_per_minute

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> HeadsUpView:
        data = json.loads(text)
        data["phase"] = Phase(data["phase"])
        data["workflows"] = tuple(data["workflows"])
        data["others"] = tuple(data.get("others", ()))
        return cls(**data)
