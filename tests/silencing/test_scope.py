"""What a silence may match: the alert's own rule UID and labels, never more than its alerts.

The webhook's sender writes silenceURL, ruleUID and generatorURL, so none of them may widen a
silence: pure tests of the matchers derived from hostile notifications, and the same through
Slack against a real Alertmanager holding another rule's alert that must stay unsilenced."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from bot.domain.alerts import AlertGroup
from bot.domain.notifications import parse_webhook
from bot.domain.silences import RULE_UID_LABEL
from bot.silencing.matchers import silence_matchers
from bot.slack.contract import ActionId, SilenceInput
from queuebot_lab.sandbox.slack import ONCALL_USER, PostedMessage
from testkit.alertmanager import Alertmanager
from testkit.harness import Stack, running_stack
from testkit.payloads import encoded, load, reference

RULE_UID = "dez2aomgvru2oe"
SILENCE_PAGE = "https://pytorchci.grafana.net/alerting/silence/new?alertmanager=grafana"
OWN = [
    {"name": RULE_UID_LABEL, "value": RULE_UID, "isRegex": False, "isEqual": True},
    {"name": "type", "value": "alerting-infra", "isRegex": False, "isEqual": True},
]


def _url(*matchers: str) -> str:
    return SILENCE_PAGE + "".join(f"&matcher={quote(m, safe='')}" for m in matchers) + "&orgId=1"


def _with(body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    for alert in changed["alerts"]:
        alert.update(fields)
    return changed


def _group(body: dict[str, Any]) -> AlertGroup:
    return parse_webhook(encoded(body))


def _dumped(body: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [[m.model_dump(by_alias=True) for m in s] for s in silence_matchers(_group(body))]


class TestSilenceUrl:
    @pytest.mark.parametrize(
        "hostile",
        [
            "__alert_rule_uid__=~.+",
            "__alert_rule_uid__!=nothing",
            "__alert_rule_uid__=another-rule",
            "type=~.*",
            "type!=storage",
            "type=another-value",
            "zone=eu-1",
            "alertname!~x",
        ],
    )
    def test_a_matcher_the_alert_does_not_vouch_for_is_left_out(self, hostile: str) -> None:
        """A regex, a negative matcher, another value or a label the alert lacks, written into
        silenceURL beside Grafana's own matchers, never reaches the silence."""
        body = _with(
            reference(),
            silenceURL=_url(f"{RULE_UID_LABEL}={RULE_UID}", "type=alerting-infra", hostile),
        )
        assert _dumped(body) == [OWN]

    def test_a_regex_rule_uid_alone_falls_back_to_the_alerts_own(self) -> None:
        """`__alert_rule_uid__=~.+` as the only matcher: the UID comes from generatorURL."""
        body = _with(reference(), silenceURL=_url("__alert_rule_uid__=~.+"))
        assert _group(body).lead.rule_uid == RULE_UID
        assert _dumped(body) == [OWN]

    def test_an_equality_the_alert_satisfies_may_narrow_the_silence(self) -> None:
        """An older Grafana also listed alertname: the alert has it, so it stays (narrower)."""
        name = "Jobs are queueing in autoscaled machines"
        body = _with(
            reference(), silenceURL=_url(f"{RULE_UID_LABEL}={RULE_UID}", f"alertname={name}")
        )
        assert _dumped(body) == [
            [
                OWN[0],
                {"name": "alertname", "value": name, "isRegex": False, "isEqual": True},
                OWN[1],
            ]
        ]


class TestRuleUid:
    @pytest.mark.parametrize("smuggled", [".*", "~.+", "a|b", "x\ny"])
    def test_a_rule_uid_that_is_no_uid_is_not_taken(self, smuggled: str) -> None:
        """ruleUID carrying a pattern is not a UID: the alert's generatorURL names the rule, and
        the silence matches that UID literally."""
        body = _with(reference(), ruleUID=smuggled)
        assert _group(body).lead.rule_uid == RULE_UID
        assert _dumped(body) == [OWN]

    def test_no_uid_anywhere_silences_on_every_label_literally(self) -> None:
        """Only a regex where the UID would be: no rule UID, so every label, each an equality."""
        body = _with(reference(), silenceURL=_url("__alert_rule_uid__=~.+"), generatorURL="")
        assert _group(body).lead.rule_uid == ""
        ((*matchers,),) = _dumped(body)
        assert [m["name"] for m in matchers] == ["alertname", "grafana_folder", "type"]
        assert all(not m["isRegex"] and m["isEqual"] and m["value"] for m in matchers)


class TestGroups:
    def _two_of_one_rule(self, first: dict[str, str], second: dict[str, str]) -> dict[str, Any]:
        """Two alerts of the v4 fixture with these labels, and no generatorURL to name a rule."""
        body = load("alertmanager_0.25_webhook_v4_firing.json")
        body["alerts"][0]["generatorURL"] = ""
        other = copy.deepcopy(body["alerts"][0])
        body["alerts"][0]["labels"] = first
        other["labels"], other["fingerprint"] = second, "other"
        body["alerts"].append(other)
        return body

    def test_alerts_of_one_rule_sharing_only_the_rule_get_the_rule_uid(self) -> None:
        """Nothing in common but the rule: the shared silence is the rule UID, an equality."""
        body = self._two_of_one_rule(
            {RULE_UID_LABEL: RULE_UID, "machine_type": "a"},
            {RULE_UID_LABEL: RULE_UID, "zone": "b"},
        )
        assert _dumped(body) == [[OWN[0]]]

    def test_alerts_without_a_rule_sharing_nothing_get_a_silence_each(self) -> None:
        """Same alert name but no rule UID, and the name empty: nothing to share, so each alert
        keeps its own set instead of an empty one."""
        body = self._two_of_one_rule({"alertname": "", "zone": "a"}, {"alertname": "", "zone": "b"})
        assert _dumped(body) == [
            [{"name": "zone", "value": "a", "isRegex": False, "isEqual": True}],
            [{"name": "zone", "value": "b", "isRegex": False, "isEqual": True}],
        ]

    def test_an_alert_with_nothing_to_match_makes_no_silence(self) -> None:
        """One alert with no rule UID and no labels: no silence at all, rather than one that
        leaves it out (or an empty one that would match every alert)."""
        body = self._two_of_one_rule({RULE_UID_LABEL: RULE_UID, "zone": "a"}, {"alertname": ""})
        assert silence_matchers(_group(body)) == ()


# -- through Slack, against a real Alertmanager -------------------------------------------------

#: Another rule's alert in the same Grafana: no silence made for the reference alert may touch it.
BYSTANDER = {RULE_UID_LABEL: "another-rule", "alertname": "Disk full", "type": "storage"}
REFERENCE_LABELS = {
    RULE_UID_LABEL: RULE_UID,
    "alertname": "Jobs are queueing in autoscaled machines",
    "grafana_folder": "dev-infra",
    "type": "alerting-infra",
}


@pytest.fixture
async def stack(tmp_path: Path, alertmanager: Alertmanager) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path, GRAFANA_URL=alertmanager.url, GRAFANA_TOKEN="glsa_test_token"
    ) as running:
        yield running


async def _click_silence(stack: Stack, body: dict[str, Any]) -> PostedMessage:
    assert (await stack.webhook(body)).status == 202
    (parent,) = await stack.parents(1)
    result = await stack.sandbox.click(stack.sandbox.channel_id, parent.ts, ActionId.SILENCE.value)
    assert result.status == 200
    return parent


def _shows(stack: Stack, parent: PostedMessage, text: str) -> bool:
    message = stack.sandbox.message(None, parent.ts)
    return message is not None and text in stack.text(message)


@pytest.mark.integration
async def test_a_hostile_silence_url_silences_only_the_alert(
    stack: Stack, alertmanager: Alertmanager
) -> None:
    """A notification whose silenceURL says `__alert_rule_uid__=~.+`: the silence made from
    Slack holds the alert's own rule UID and label, and another rule's alert still fires."""
    await alertmanager.push_alert(REFERENCE_LABELS)
    await alertmanager.push_alert(BYSTANDER)
    body = _with(reference(), silenceURL=_url("__alert_rule_uid__=~.+"))
    parent = await _click_silence(stack, body)
    view = await stack.sandbox.wait_for(lambda: next(iter(stack.sandbox.views), None))
    form = {SilenceInput.DURATION.value: {SilenceInput.DURATION.value: "1h"}}
    assert (await stack.sandbox.submit_view(view.id, form, ONCALL_USER)).status == 200
    await stack.sandbox.wait_for(lambda: _shows(stack, parent, "Silenced until"), timeout=10)
    (silence,) = await alertmanager.active_silences()
    assert silence["matchers"] == OWN
    states = {
        a["labels"][RULE_UID_LABEL]: a["status"]["state"] for a in await alertmanager.alerts()
    }
    assert states == {RULE_UID: "suppressed", "another-rule": "active"}


@pytest.mark.integration
async def test_an_incident_with_an_unmatchable_alert_is_refused_in_slack(
    stack: Stack, alertmanager: Alertmanager
) -> None:
    """One of the incident's alerts carries nothing a silence could match: the clicker is told
    why, no dialog opens and Grafana gets nothing."""
    body = load("alertmanager_0.25_webhook_v4_firing.json")
    bare = copy.deepcopy(body["alerts"][0])
    bare["labels"], bare["fingerprint"], bare["generatorURL"] = {}, "bare", ""
    body["alerts"].append(bare)
    await _click_silence(stack, body)
    await stack.sandbox.wait_for(
        lambda: stack.sandbox.ephemerals(ONCALL_USER) or stack.sandbox.calls("views.open")
    )
    assert stack.sandbox.calls("views.open") == []
    (notice,) = stack.sandbox.ephemerals(ONCALL_USER)
    assert "carry nothing a silence could match" in notice.text
    assert "Nothing was silenced" in notice.text
    assert await alertmanager.silences() == []
