"""What a silence is (bot.silences), how it reads in Slack (bot.render), and how Grafana's
failures are explained (bot.silencing.explain): pure functions, no servers."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.domain.alerts import AlertGroup
from bot.domain.incidents import Incident, IncidentStatus, ThreadEvent, ThreadEventKind
from bot.domain.notifications import parse_webhook
from bot.domain.silences import Duration, Matcher, Person, Silence
from bot.listeners.payloads import BadSilenceInput, SilenceForm, ViewSubmission, silence_end
from bot.render.renderer import Renderer
from bot.render.silence_modal import MatchersTooLong
from bot.silencing.grafana import GrafanaDenied, GrafanaRejected, GrafanaUnavailable
from bot.silencing.matchers import silence_matchers
from bot.silencing.service import explain
from bot.slack import blockkit
from bot.slack.contract import ActionId, SilenceInput
from testkit.payloads import encoded, load, reference

NOW = datetime(2026, 11, 21, 3, 0, tzinfo=UTC)
ALICE = Person(id="U0ONCALL", name="alice")


def _group(body: dict[str, Any]) -> AlertGroup:
    return parse_webhook(encoded(body))


def _texts(sets: tuple[tuple[Matcher, ...], ...]) -> list[list[str]]:
    return [[str(m) for m in s] for s in sets]


def _silence(**changes: Any) -> Silence:
    fields: dict[str, Any] = {
        "ids": ("0f1e",),
        "matchers": silence_matchers(_group(reference())),
        "starts_at": NOW,
        "ends_at": NOW + timedelta(hours=2),
        "by": ALICE,
        "comment": "Scaling up",
    }
    return Silence.model_validate(fields | changes)


def _incident(**changes: Any) -> Incident:
    group = _group(reference())
    fields: dict[str, Any] = {
        "id": 3,
        "group_key": group.group_key,
        "channel": "C1",
        "status": IncidentStatus.FIRING,
        "group": group,
        "started_at": group.started_at,
    }
    return Incident.model_validate(fields | changes)


class TestMatchers:
    def test_reference_alert_uses_the_rule_uid_and_its_one_label(self) -> None:
        """The reference alert silences on __alert_rule_uid__ and type, as its silenceURL does."""
        assert _texts(silence_matchers(_group(reference()))) == [
            ["__alert_rule_uid__=dez2aomgvru2oe", "type=alerting-infra"]
        ]

    def test_silence_url_matchers_are_taken_only_where_the_alert_vouches(self) -> None:
        """silenceURL cannot widen the silence: its regex and negative matcher are left out;
        its equality on one of the alert's labels narrows it."""
        body = reference()
        body["alerts"][0]["silenceURL"] = (
            "https://grafana.example/alerting/silence/new?alertmanager=grafana"
            "&matcher=__alert_rule_uid__%3Ddez2aomgvru2oe&matcher=zone%21%3Deu"
            "&matcher=name%3D~linux.%2A&matcher=alertname%3DJobs+are+queueing"
        )
        body["alerts"][0]["labels"]["alertname"] = "Jobs are queueing"
        (only,) = silence_matchers(_group(body))
        assert _texts((only,)) == [
            [
                "__alert_rule_uid__=dez2aomgvru2oe",
                "alertname=Jobs are queueing",
                "type=alerting-infra",
            ]
        ]

    def test_a_silence_url_naming_another_rule_is_ignored(self) -> None:
        """The View alert link names the alert's own rule and the silence link another: the
        silence is the alert's own rule's, and nothing of that silenceURL gets in."""
        body = reference()
        alert = body["alerts"][0]
        alert["silenceURL"] = (
            "https://grafana.example/alerting/silence/new?alertmanager=grafana"
            "&matcher=__alert_rule_uid__%3Dother-rule&matcher=type%3Dalerting-infra"
        )
        group = _group(body)
        assert group.lead.rule_uid == "dez2aomgvru2oe"
        assert group.lead.foreign_silence_rule == "other-rule"
        assert group.lead.usable_silence_url == ""
        assert _texts(silence_matchers(group)) == [
            ["__alert_rule_uid__=dez2aomgvru2oe", "type=alerting-infra"]
        ]

    def test_a_rule_uid_only_the_silence_url_names_leaves_the_alert_unpinned(self) -> None:
        """No rule UID of its own (no ruleUID, no label, no rule in generatorURL): the UID a
        silenceURL names is not taken, and the silence keeps every label, alertname too."""
        body = reference()
        alert = body["alerts"][0]
        alert["generatorURL"] = "https://grafana.example/explore"
        alert["silenceURL"] = (
            "https://grafana.example/alerting/silence/new?matcher=__alert_rule_uid__%3Dother"
        )
        alert["labels"]["alertname"] = "Jobs are queueing"
        group = _group(body)
        assert group.lead.rule_uid == ""
        (only,) = silence_matchers(group)
        assert all(m.name != "__alert_rule_uid__" for m in only)
        assert "alertname=Jobs are queueing" in _texts((only,))[0]

    def test_alertmanager_alert_with_private_rule_label(self) -> None:
        """An Alertmanager v4 alert carrying __alert_rule_uid__ silences like Grafana's."""
        group = _group(load("alertmanager_0.25_webhook_v4_firing.json"))
        assert _texts(silence_matchers(group)) == [
            [
                "__alert_rule_uid__=dez2aomgvru2oe",
                "machine_type=linux.2xlarge",
                "type=alerting-infra",
            ]
        ]

    def test_alert_without_a_rule_uid_silences_on_all_its_labels(self) -> None:
        """No rule UID anywhere: every label, alertname included, so nothing else is caught."""
        group = _group(load("grafana_cloud_webhook_test_notification.json"))
        assert _texts(silence_matchers(group)) == [["alertname=TestAlert", "instance=Grafana"]]

    def test_alerts_of_one_rule_share_one_silence(self) -> None:
        """Two runner types firing under one rule: one silence on what they have in common."""
        body = load("alertmanager_0.25_webhook_v4_firing.json")
        second = copy.deepcopy(body["alerts"][0])
        second["labels"]["machine_type"] = "linux.g5.4xlarge.nvidia.gpu"
        second["fingerprint"] = "other"
        body["alerts"].append(second)
        assert _texts(silence_matchers(_group(body))) == [
            ["__alert_rule_uid__=dez2aomgvru2oe", "type=alerting-infra"]
        ]

    def test_alerts_of_different_rules_get_a_silence_each(self) -> None:
        """Alerts without a shared rule are never widened into one loose silence."""
        group = _group(load("grafana_docs_webhook_example.json"))
        assert _texts(silence_matchers(group)) == [
            ["alertname=High memory usage", "team=blue", "zone=us-1"],
            ["alertname=High CPU usage", "team=blue", "zone=eu-1"],
        ]

    def test_filter_syntax_escapes_quotes(self) -> None:
        """A value with quotes and backslashes stays one value in Alertmanager's filter."""
        matcher = Matcher(name="summary", value='say "hi" \\ bye')
        assert matcher.filter() == 'summary="say \\"hi\\" \\\\ bye"'


class TestSilenceEnd:
    @pytest.mark.parametrize(("choice", "span"), [("30m", 30), ("1h", 60), ("24h", 1440)])
    def test_fixed_durations(self, choice: str, span: int) -> None:
        assert silence_end(Duration(choice), None, NOW) == NOW + timedelta(minutes=span)

    def test_until_a_picked_time(self) -> None:
        until = NOW + timedelta(days=2)
        assert silence_end(Duration.UNTIL, until, NOW) == until

    @pytest.mark.parametrize(
        ("choice", "until", "block", "words"),
        [
            (Duration.UNTIL, None, SilenceInput.UNTIL, "Pick the date"),
            (Duration.UNTIL, NOW - timedelta(minutes=1), SilenceInput.UNTIL, "future"),
            (Duration.UNTIL, NOW + timedelta(days=40), SilenceInput.UNTIL, "31 days"),
            (Duration.HOUR_1, NOW + timedelta(days=1), SilenceInput.DURATION, "Until a date"),
        ],
    )
    def test_bad_choices_name_the_input(
        self, choice: Duration, until: datetime | None, block: SilenceInput, words: str
    ) -> None:
        """Each refusal points at the input to fix, in words the person understands."""
        with pytest.raises(BadSilenceInput) as raised:
            silence_end(choice, until, NOW)
        assert raised.value.block is block and words in str(raised.value)


class TestModalInput:
    def _submission(self, values: dict[str, Any]) -> ViewSubmission:
        return ViewSubmission.model_validate(
            {
                "user": {"id": "U0ONCALL", "username": "alice"},
                "view": {
                    "id": "V1",
                    "callback_id": "queuebot_silence_modal",
                    "private_metadata": '{"v":1,"incident":3}',
                    "state": {"values": values},
                },
            }
        )

    def test_state_values_become_a_form(self) -> None:
        """The select, the picker and the comment are read from Slack's view state."""
        submission = self._submission(
            {
                "silence_duration": {
                    "silence_duration": {
                        "type": "static_select",
                        "selected_option": {"value": "until"},
                    }
                },
                "silence_until": {
                    "silence_until": {"type": "datetimepicker", "selected_date_time": 1795300000}
                },
                "silence_comment": {
                    "silence_comment": {"type": "plain_text_input", "value": "on it"}
                },
            }
        )
        form = SilenceForm.from_view(submission)
        assert form.duration is Duration.UNTIL
        assert form.until == datetime.fromtimestamp(1795300000, UTC)
        assert form.comment == "on it"
        assert submission.context().incident == 3

    def test_no_duration_is_an_error_on_the_duration_input(self) -> None:
        with pytest.raises(BadSilenceInput) as raised:
            SilenceForm.from_view(self._submission({}))
        assert raised.value.block is SilenceInput.DURATION


class TestRendering:
    def test_silenced_parent_says_until_when_and_by_whom(self) -> None:
        """The parent shows the silence and offers Unsilence instead of Silence…."""
        message = Renderer().incident(_incident(silence=_silence()))
        text = json.dumps(message.blocks)
        assert "Silenced until <!date^" in text and "by @alice" in text
        actions = [
            e["action_id"] for b in message.blocks if b["type"] == "actions" for e in b["elements"]
        ]
        assert ActionId.UNSILENCE.value in actions and ActionId.SILENCE.value not in actions

    def test_a_silencers_name_cannot_ping_anyone(self) -> None:
        """A display name like "<!channel>" is shown as text."""
        hostile = _silence(by=Person(id="U1", name="<!channel> <https://x.example|me>"))
        text = json.dumps(Renderer().incident(_incident(silence=hostile)).blocks)
        assert "<!channel>" not in text and "&lt;!channel&gt;" in text

    def test_thread_line_for_a_new_silence(self) -> None:
        """Who, until when, for how long, the comment, and what it matches."""
        event = ThreadEvent(
            kind=ThreadEventKind.SILENCED, at=NOW, group=_group(reference()), silence=_silence()
        )
        text = json.dumps(Renderer().thread_event(event).blocks, ensure_ascii=False)
        assert "*Silenced* by @alice until <!date^" in text and "(2h)" in text
        assert "“Scaling up”" in text
        assert "__alert_rule_uid__=dez2aomgvru2oe, type=alerting-infra" in text

    @pytest.mark.parametrize(
        ("kind", "note", "words"),
        [
            (ThreadEventKind.UNSILENCED, None, "*Unsilenced* by @bob"),
            (ThreadEventKind.SILENCE_ENDED, None, "*Silence ended* as planned"),
            (
                ThreadEventKind.SILENCE_ENDED,
                "was expired in Grafana",
                "*Silence was expired in Grafana*",
            ),
            (
                ThreadEventKind.SILENCED,
                "was changed in Grafana",
                "*Silence was changed in Grafana*",
            ),
        ],
    )
    def test_thread_lines_for_silence_changes(
        self, kind: ThreadEventKind, note: str | None, words: str
    ) -> None:
        event = ThreadEvent(
            kind=kind,
            at=NOW,
            group=_group(reference()),
            silence=_silence(),
            actor=Person(id="U0SECOND", name="bob"),
            note=note,
        )
        assert words in json.dumps(Renderer().thread_event(event).blocks)

    def test_modal_is_a_valid_view_previewing_every_matcher(self) -> None:
        """The modal passes Slack's view rules; the matchers are in a code block, values quoted,
        in mrkdwn that Slack does not turn into links."""
        incident = _incident()
        view = Renderer().silence_modal(
            incident, silence_matchers(incident.group), '{"v":1,"incident":3}'
        )
        assert blockkit.validate_view(view) == []
        preview = view["blocks"][-1]["text"]
        assert preview == {
            "type": "mrkdwn",
            "text": '```__alert_rule_uid__="dez2aomgvru2oe"\ntype="alerting-infra"```',
            "verbatim": True,
        }
        assert view["blocks"][1]["element"]["initial_option"]["value"] == "1h"

    def test_matchers_too_long_for_a_modal_are_refused_not_shortened(self) -> None:
        """What cannot all be shown is not shown in part: the modal is refused."""
        incident = _incident()
        sets = (tuple(Matcher(name=f"l{n}", value="v" * 2990) for n in range(2)),) * 60
        with pytest.raises(MatchersTooLong):
            Renderer().silence_modal(incident, sets, '{"v":1,"incident":3}')


class TestExplain:
    def test_forbidden_names_the_missing_permission_and_the_rule(self) -> None:
        text = explain(GrafanaDenied("permission denied", 403), "silence", _incident())
        assert "`alert.silences:create`" in text and "`dez2aomgvru2oe`" in text
        assert "Nothing was silenced" in text and "silence it in Grafana" in text

    def test_unsilence_forbidden_names_the_write_permission(self) -> None:
        text = explain(GrafanaDenied("denied", 403), "unsilence", _incident())
        assert "`alert.silences:write`" in text and "unchanged" in text

    def test_a_bad_token_points_at_grafana_token(self) -> None:
        assert "`GRAFANA_TOKEN`" in explain(GrafanaDenied("invalid API key", 401), "silence")

    def test_grafanas_own_message_is_shown_escaped(self) -> None:
        text = explain(GrafanaRejected("bad <!here> matcher", 400), "silence")
        assert "HTTP 400" in text and "bad &lt;!here&gt; matcher" in text

    def test_unreachable_says_try_again(self) -> None:
        text = explain(GrafanaUnavailable("cannot reach http://grafana:3000"), "silence")
        assert "could not be reached" in text and "Try again" in text
