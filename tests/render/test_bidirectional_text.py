"""An alert cannot make Slack show text that reads backwards or hides its end: bidirectional
overrides and isolates in titles, labels and annotations reach no message (over HTTP, as the
local Slack workspace receives it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit.harness import running_stack
from testkit.payloads import reference

OVERRIDES = ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200f", "\u202a"]


@pytest.mark.parametrize("mark", OVERRIDES, ids=lambda m: f"U+{ord(m):04X}")
async def test_no_bidirectional_control_reaches_slack(tmp_path: Path, mark: str) -> None:
    body = reference()
    alert = body["alerts"][0]
    alert["labels"]["alertname"] = f"Jobs are queueing {mark}gnitset ylno{mark}"
    alert["labels"]["type"] = f"alerting{mark}-infra"
    alert["annotations"]["summary"] = f"summary {mark}txet neddih"
    body["commonLabels"] = alert["labels"]
    body["commonAnnotations"] = alert["annotations"]
    async with running_stack(tmp_path) as stack:
        assert (await stack.webhook(body)).status == 202
        (parent,) = await stack.parents(1)
        shown = json.dumps({"text": parent.text, "blocks": parent.blocks}, ensure_ascii=False)
        assert mark not in shown
        assert "gnitset ylno" in shown  # the words stay, without the control
