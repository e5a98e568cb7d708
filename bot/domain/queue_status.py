"""What `/queue-status` shows: the fleet's queue per runner type now, the open incidents and
their silences. Pure data, read by `bot.status` and rendered by `bot.render`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.domain.diagnosis import RunnerTypeState
from bot.domain.incidents import Incident


@dataclass(frozen=True)
class Compared:
    """A value now and its usual value (median of the same time on previous days)."""

    now: float | None
    usual: float | None


@dataclass(frozen=True)
class TypeDetail:
    state: RunnerTypeState
    running: float | None
    wait: Compared
    #: Jobs started per minute.
    arrivals: Compared
    duration_p50: Compared
    duration_p90: Compared

    @property
    def utilisation(self) -> float | None:
        busy, registered = self.state.busy, self.state.registered
        if busy is None or not registered:
            return None
        return busy / registered


@dataclass(frozen=True)
class FleetView:
    """Every runner type now, or why the fleet could not be read."""

    types: tuple[RunnerTypeState, ...] = ()
    #: Why the metrics are missing (Prometheus down, slow, or without runner types).
    error: str | None = None
    #: False when no metrics source is configured at all.
    configured: bool = True
    window: str = ""
    #: Signals whose query failed although others answered.
    missing: tuple[str, ...] = ()

    @property
    def waiting(self) -> list[RunnerTypeState]:
        """Runner types with jobs waiting, the longest wait first."""
        queued = [t for t in self.types if (t.queued or 0.0) > 0]
        return sorted(
            queued, key=lambda t: (-(t.max_wait_seconds or 0.0), -(t.queued or 0.0), t.name)
        )


@dataclass(frozen=True)
class OpenIncident:
    incident: Incident
    #: The permalink of its thread (or of the storm digest listing it), when Slack gave one.
    link: str | None


@dataclass(frozen=True)
class QueueStatus:
    at: datetime
    fleet: FleetView
    #: The most recently started firing incidents, at most MAX_INCIDENTS.
    incidents: tuple[OpenIncident, ...]
    firing_total: int
    #: Firing incidents under a silence that has not ended, the soonest to end first.
    silenced: tuple[OpenIncident, ...]
    #: The runner type or prefix asked about; None for the summary.
    query: str | None = None
    details: tuple[TypeDetail, ...] = ()
    #: How many runner types matched `query` (more than are detailed, when many match).
    matched: int = 0
    #: The incidents and silences are every channel's (the fleet-wide view), not only those of
    #: the channel asked in.
    every_channel: bool = False
    #: Jobs whose state reconciliation corrected from GitHub's REST API in the last hour (told
    #: in the detail).
    corrected: int = 0
