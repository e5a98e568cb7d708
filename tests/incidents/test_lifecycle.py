"""The incident lifecycle rules (bot.state.decide), as pure functions."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta

from bot.domain.incidents import Incident, IncidentStatus, ThreadEventKind
from bot.domain.notifications import parse_webhook
from bot.incidents.lifecycle import Action, decide
from testkit.payloads import encoded, reference, refired, with_values

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
        assert decision.event is not None and decision.event.kind is ThreadEventKind.CHANGED
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
        assert decision.event is not None and decision.event.kind is ThreadEventKind.FIRED_AGAIN

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

    def test_late_resolution_does_not_resolve_a_refiring(self) -> None:
        """A resolution resent after the incident fired again is history, not a resolution."""
        refire_at = datetime(2024, 12, 1, 4, 15, tzinfo=UTC)
        group = parse_webhook(encoded(refired(reference(), refire_at)))
        incident = _incident(fired_count=2).model_copy(update={"group": group})
        decision = decide(incident, parse_webhook(encoded(reference("resolved"))), NOW)
        assert decision.action is Action.IGNORE

    def test_alert_leaving_the_group_is_a_change(self) -> None:
        """An alert that stops firing while others fire is reported as having left."""
        body = reference()
        second = copy.deepcopy(body["alerts"][0])
        second["fingerprint"] = "0000000000000002"
        second["labels"]["machine_type"] = "linux.4xlarge"
        body["alerts"].append(second)
        incident = _incident().model_copy(update={"group": parse_webhook(encoded(body))})
        shrunk = copy.deepcopy(body)
        shrunk["alerts"][1]["status"] = "resolved"
        shrunk["alerts"][1]["endsAt"] = "2024-12-01T03:00:00Z"
        decision = decide(incident, parse_webhook(encoded(shrunk)), NOW)
        assert decision.event is not None
        assert [a.fingerprint for a in decision.event.left] == ["0000000000000002"]
        assert decision.event.joined == ()

    def test_event_keeps_the_values_of_its_moment(self) -> None:
        """A resolution's reply carries the values that fired, whatever happens after."""
        changed = parse_webhook(encoded(with_values(reference(), max_queue_time_mins=130)))
        incident = _incident().model_copy(update={"group": changed})
        decision = decide(incident, parse_webhook(encoded(reference("resolved"))), NOW)
        assert decision.event is not None
        assert decision.event.group.lead.values["max_queue_time_mins"] == 130

    def test_refire_after_unseen_resolution(self) -> None:
        """An incident first seen resolved reopens when the alert fires again soon after."""
        resolved = parse_webhook(encoded(reference("resolved")))
        incident = _incident(
            IncidentStatus.RESOLVED, resolved_at=datetime(2024, 12, 1, 4, 5, tzinfo=UTC)
        ).model_copy(update={"group": resolved})
        body = refired(reference(), datetime(2024, 12, 1, 4, 20, tzinfo=UTC))
        decision = decide(incident, parse_webhook(encoded(body)), NOW)
        assert decision.action is Action.UPDATE
        assert decision.status is IncidentStatus.FIRING
