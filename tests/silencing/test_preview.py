"""The Silence… modal shows exactly what Grafana gets: its preview, read back as matchers, is
what the real Alertmanager then stores; label text in it is inert in mrkdwn; and when the
incident's alerts change while the modal is open, nothing is sent."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.slack.contract import ActionId, SilenceInput
from queuebot_lab.sandbox.slack import ONCALL_USER, PostedMessage
from queuebot_lab.sandbox.slack.models import OpenView
from testkit.alertmanager import Alertmanager
from testkit.harness import Stack, running_stack
from testkit.payloads import reference

pytestmark = pytest.mark.integration

_QUOTED = r'"(?:[^"\\]|\\.)*"'
_LINE = re.compile(
    rf"(?P<name>[A-Za-z_][A-Za-z0-9_]*|{_QUOTED})(?P<op>=~|!=|!~|=)(?P<value>{_QUOTED})"
)
_OPERATORS = {"=": (False, True), "!=": (False, False), "=~": (True, True), "!~": (True, False)}
HOSTILE_LABELS = {
    "zone": "<!channel> eu-1, region=us-east-1",
    "team": '<https://evil.example|click> `x` ``` "q" \\ *b* _i_ &amp;',
    "note": "line\u2028separated",
}


@pytest.fixture
async def stack(tmp_path: Path, alertmanager: Alertmanager) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path, GRAFANA_URL=alertmanager.url, GRAFANA_TOKEN="glsa_test_token"
    ) as running:
        yield running


def _body(*extra: dict[str, str]) -> dict[str, Any]:
    """The reference alert without its silenceURL, once per label set in `extra`."""
    body = reference()
    template = body["alerts"][0]
    template["silenceURL"] = ""
    body["alerts"] = []
    for number, labels in enumerate(extra):
        alert = copy.deepcopy(template)
        alert["labels"].update(labels)
        alert["fingerprint"] = f"{number:016x}"
        body["alerts"].append(alert)
    return body


def _previews(view: OpenView) -> list[str]:
    return [
        b["text"]["text"]
        for b in view.view["blocks"]
        if b["type"] == "section" and b["text"]["text"].count("```") == 2
    ]


def _read_back(preview: str) -> list[dict[str, Any]]:
    """The matchers a preview lists, as Alertmanager's API spells them."""
    code = preview.split("```")[1]
    code = code.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    matchers = []
    for line in code.split("\n"):
        found = _LINE.fullmatch(line)
        assert found is not None, f"not one matcher: {line!r}"
        name = found["name"]
        regex, equal = _OPERATORS[found["op"]]
        matchers.append(
            {
                "name": json.loads(name) if name.startswith('"') else name,
                "value": json.loads(found["value"]),
                "isRegex": regex,
                "isEqual": equal,
            }
        )
    return matchers


async def _open(stack: Stack, parent: PostedMessage) -> OpenView:
    opened = len(stack.sandbox.views)
    await stack.sandbox.click(stack.sandbox.channel_id, parent.ts, ActionId.SILENCE.value)
    return await stack.sandbox.wait_for(
        lambda: stack.sandbox.views[opened] if len(stack.sandbox.views) > opened else None
    )


async def _submit(stack: Stack, view: OpenView) -> None:
    form = {SilenceInput.DURATION.value: {SilenceInput.DURATION.value: "2h"}}
    assert (await stack.sandbox.submit_view(view.id, form, ONCALL_USER)).status == 200


def _shows(stack: Stack, parent: PostedMessage, text: str) -> bool:
    message = stack.sandbox.message(None, parent.ts)
    return message is not None and text in stack.text(message)


async def test_the_preview_lists_exactly_what_alertmanager_stores(
    stack: Stack, alertmanager: Alertmanager
) -> None:
    """Labels with mentions, links, commas, quotes and backticks: the modal's preview, read
    back, is the silence Alertmanager holds, and none of it is markup in Slack."""
    assert (await stack.webhook(_body(HOSTILE_LABELS))).status == 202
    (parent,) = await stack.parents(1)
    view = await _open(stack, parent)
    (preview,) = _previews(view)
    assert "<!channel>" not in preview and "<https://" not in preview
    assert "&lt;!channel&gt;" in preview and "&amp;amp;" in preview
    sections = [b["text"] for b in view.view["blocks"] if b["type"] == "section"]
    assert all(t["type"] == "mrkdwn" and t["verbatim"] for t in sections)
    await _submit(stack, view)
    await stack.sandbox.wait_for(lambda: _shows(stack, parent, "Silenced until"), timeout=10)
    (silence,) = await alertmanager.active_silences()
    assert _read_back(preview) == silence["matchers"]
    assert {m["name"] for m in silence["matchers"]} == {
        "__alert_rule_uid__",
        "type",
        *HOSTILE_LABELS,
    }


async def test_alerts_that_change_while_the_modal_is_open_silence_nothing(
    stack: Stack, alertmanager: Alertmanager
) -> None:
    """A second runner type joins after the modal opened, so the shared silence would be wider
    than the one shown: nothing is created and the clicker is told; opened again, the modal
    shows the wider silence, and that is what is made."""
    assert (await stack.webhook(_body({"machine_type": "linux.a"}))).status == 202
    (parent,) = await stack.parents(1)
    view = await _open(stack, parent)
    assert "linux.a" in json.dumps(view.view)
    joined = _body({"machine_type": "linux.a"}, {"machine_type": "linux.b"})
    assert (await stack.webhook(joined)).status == 202
    await stack.replies(parent, 1)  # the thread says a second alert joined
    await _submit(stack, view)
    await stack.sandbox.wait_for(
        lambda: stack.sandbox.ephemerals(ONCALL_USER) or _shows(stack, parent, "Silenced until"),
        timeout=10,
    )
    assert await alertmanager.silences() == []
    (notice,) = stack.sandbox.ephemerals(ONCALL_USER)
    assert "changed after the silence dialog opened" in notice.text
    assert "Nothing was silenced" in notice.text

    again = await _open(stack, parent)
    (preview,) = _previews(again)
    assert "machine_type" not in preview
    await _submit(stack, again)
    await stack.sandbox.wait_for(lambda: _shows(stack, parent, "Silenced until"), timeout=10)
    (silence,) = await alertmanager.active_silences()
    assert _read_back(preview) == silence["matchers"]


async def test_a_silence_link_aimed_at_another_rule_silences_the_alerts_own(
    stack: Stack, alertmanager: Alertmanager
) -> None:
    """An alert whose View alert link names its rule and whose silence link names another:
    the modal offers, and Alertmanager gets, the alert's own rule and labels; the other rule's
    UID appears nowhere, and the modal offers no link to that silence page."""
    body = _body({})
    body["alerts"][0]["silenceURL"] = (
        "https://grafana.example/alerting/silence/new?alertmanager=grafana"
        "&matcher=__alert_rule_uid__%3Dvictim-rule"
    )
    assert (await stack.webhook(body)).status == 202
    (parent,) = await stack.parents(1)
    view = await _open(stack, parent)
    assert "victim-rule" not in json.dumps(view.view)
    (preview,) = _previews(view)
    await _submit(stack, view)
    await stack.sandbox.wait_for(lambda: _shows(stack, parent, "Silenced until"), timeout=10)
    (silence,) = await alertmanager.active_silences()
    assert _read_back(preview) == silence["matchers"]
    assert {"name": "__alert_rule_uid__", "value": "dez2aomgvru2oe"}.items() <= silence["matchers"][
        0
    ].items()
    assert "victim-rule" not in json.dumps(silence)
