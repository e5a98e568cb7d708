"""The incident lifecycle rules (bot.state.decide), as pure functions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.models import parse_webhook
from bot.state import Action, EventKind, Incident, IncidentStatus, decide
from tests.payloads import encoded, reference, refired, with_values

NOW = datetime(2024, 12, 1, 3, 0, tzinfo=UTC)


def _incident(status: IncidentStatus = IncidentStatus.FIRING, **extra: object) -> Incident:
    group = parse_webhook(encoded(reference()))
    return Incident(
        id=1,
        group_key=group.group_key,
        channel="C1",
        status=status,
        group=group,
        started_at=group.started_at,
        **extra,  # type: ignore[arg-type]
    )


class TestDecide:
    def test_first_firing_opens(self) -> None:
        """A group key never seen before opens an incident."""
        decision = decide(None, parse_webhook(encoded(reference())), NOW)
        assert decision.action is Action.OPEN
        assert decision.status is IncidentStatus.FIRING
        assert decision.event is None

    def test_identical_repeat_is_ignored(self) -> None:
        """Grafana's repeat notification with nothing new makes no message."""
        decision = decide(_incident(), parse_webhook(encoded(reference())), NOW)
        assert decision.action is Action.IGNORE

    def test_changed_values_are_reported(self) -> None:
        """A repeat whose values moved updates the incident with the change."""
        body = with_values(reference(), max_queue_time_mins=130)
        decision = decide(_incident(), parse_webhook(encoded(body)), NOW)
        assert decision.action is Action.UPDATE
        assert decision.event is not None and decision.event.kind is EventKind.CHANGED
        (change,) = decision.event.changes
        assert (change.key, change.old, change.new) == ("max_queue_time_mins", 114, 130)

    def test_resolution_keeps_firing_values(self) -> None:
        """Resolving keeps the firing snapshot and measures the duration from the start."""
        decision = decide(_incident(), parse_webhook(encoded(reference("resolved"))), NOW)
        assert decision.status is IncidentStatus.RESOLVED
        assert decision.group is not None
        assert decision.group.lead.values["max_queue_time_mins"] == 114
        assert decision.event is not None
        assert decision.event.duration == timedelta(hours=1, minutes=42)

    def test_refire_within_window_reopens(self) -> None:
        """Firing 20 minutes after resolving reopens the same incident."""
        resolved_at = datetime(2024, 12, 1, 4, 5, tzinfo=UTC)
        incident = _incident(IncidentStatus.RESOLVED, resolved_at=resolved_at)
        body = refired(reference(), resolved_at + timedelta(minutes=20))
        decision = decide(incident, parse_webhook(encoded(body)), NOW)
        assert decision.action is Action.UPDATE
        assert decision.fired_count == 2
        assert decision.event is not None and decision.event.kind is EventKind.FIRED_AGAIN

    def test_refire_after_window_opens_new(self) -> None:
        """Firing 2 hours after resolving is a new incident."""
        resolved_at = datetime(2024, 12, 1, 4, 5, tzinfo=UTC)
        incident = _incident(IncidentStatus.RESOLVED, resolved_at=resolved_at)
        body = refired(reference(), resolved_at + timedelta(hours=2))
        assert decide(incident, parse_webhook(encoded(body)), NOW).action is Action.OPEN

    def test_stale_firing_after_resolution_is_ignored(self) -> None:
        """A late retry of the original firing does not reopen a resolved incident."""
        resolved_at = datetime(2024, 12, 1, 4, 5, tzinfo=UTC)
        incident = _incident(IncidentStatus.RESOLVED, resolved_at=resolved_at)
        decision = decide(incident, parse_webhook(encoded(reference())), NOW)
        assert decision.action is Action.IGNORE

    def test_unseen_resolution_opens_resolved(self) -> None:
        """A resolution for an incident never seen firing is still recorded, as resolved."""
        decision = decide(None, parse_webhook(encoded(reference("resolved"))), NOW)
        assert decision.action is Action.OPEN
        assert decision.status is IncidentStatus.RESOLVED
