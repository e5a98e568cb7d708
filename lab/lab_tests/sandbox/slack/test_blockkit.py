"""The local Slack API's Block Kit check (queuebot_lab.sandbox.slack.blockkit): what Slack refuses,
with the error it answers and the problem in Slack's words."""

from typing import Any

import pytest

from queuebot_lab.sandbox.slack.blockkit import (
    BLOCKS_FORMAT,
    BLOCKS_SCHEMA,
    BLOCKS_TOO_LONG,
    cut_text,
    error_of,
    message_problems,
    texts,
    view_problems,
)


def text(kind: str, value: str) -> dict[str, str]:
    return {"type": kind, "text": value}


def button(action_id: str = "go", **fields: Any) -> dict[str, Any]:
    return {"type": "button", "text": text("plain_text", "Go"), "action_id": action_id, **fields}


def section(value: str = "hello") -> dict[str, Any]:
    return {"type": "section", "text": text("mrkdwn", value)}


ALERT = [
    {"type": "header", "text": text("plain_text", "Queueing P2")},
    {**section("*Max queue time* 114 min"), "fields": [text("mrkdwn", "a"), text("mrkdwn", "b")]},
    {"type": "context", "elements": [text("mrkdwn", "<!date^1700000000^{date_short}|Nov 14>")]},
    {"type": "divider"},
    {
        "type": "actions",
        "elements": [
            button("run", style="primary", value="incident-1"),
            button("runbook", url="https://example.com/runbook"),
        ],
    },
    {"type": "image", "image_url": "https://example.com/q.png", "alt_text": "queue depth"},
    {"type": "image", "slack_file": {"id": "F1"}, "alt_text": "chart"},
    {"type": "rich_text", "elements": []},
    {"type": "markdown", "text": "**bold**"},
]


def test_every_block_kind_within_its_limits_is_taken() -> None:
    assert message_problems(ALERT) == []
    assert message_problems(None) == []


@pytest.mark.parametrize(
    ("blocks", "problem"),
    [
        ([{"type": "divider"}] * 51, "no more than 50 items allowed [json-pointer:/blocks]"),
        ([{"type": "table"}], "failed to match all allowed schemas [json-pointer:/blocks/0]"),
        (
            [{"type": "input", "label": text("plain_text", "x"), "element": {}}],
            "failed to match all allowed schemas [json-pointer:/blocks/0]",
        ),
        (
            [{"type": "header", "text": text("plain_text", "h" * 151)}],
            "must be less than 151 characters [json-pointer:/blocks/0/text/text]",
        ),
        (
            [{"type": "header", "text": text("mrkdwn", "h")}],
            "must be one of: plain_text [json-pointer:/blocks/0/text/type]",
        ),
        (
            [section("s" * 3001)],
            "must be less than 3001 characters [json-pointer:/blocks/0/text/text]",
        ),
        ([section("")], "must be a non-empty string [json-pointer:/blocks/0/text/text]"),
        ([{"type": "section"}], "must provide text or fields [json-pointer:/blocks/0]"),
        (
            [{"type": "section", "fields": [text("mrkdwn", "f")] * 11}],
            "no more than 10 items allowed [json-pointer:/blocks/0/fields]",
        ),
        (
            [{"type": "section", "fields": [text("mrkdwn", "f" * 2001)]}],
            "must be less than 2001 characters [json-pointer:/blocks/0/fields/0/text]",
        ),
        (
            [{"type": "context", "elements": [text("mrkdwn", "c")] * 11}],
            "no more than 10 items allowed [json-pointer:/blocks/0/elements]",
        ),
        (
            [{"type": "context", "elements": []}],
            "must provide at least 1 items [json-pointer:/blocks/0/elements]",
        ),
        (
            [{"type": "actions", "elements": [button(f"b{i}") for i in range(26)]}],
            "no more than 25 items allowed [json-pointer:/blocks/0/elements]",
        ),
        (
            [{"type": "actions", "elements": [{**button(), "text": text("plain_text", "t" * 76)}]}],
            "must be less than 76 characters [json-pointer:/blocks/0/elements/0/text/text]",
        ),
        (
            [{"type": "actions", "elements": [button(value="v" * 2001)]}],
            "must be less than 2001 characters [json-pointer:/blocks/0/elements/0/value]",
        ),
        (
            [{"type": "actions", "elements": [button(url="ftp://example.com")]}],
            "must be a valid http(s) URL [json-pointer:/blocks/0/elements/0/url]",
        ),
        (
            [{"type": "actions", "elements": [button(style="secondary")]}],
            "must be one of: danger, primary [json-pointer:/blocks/0/elements/0/style]",
        ),
        (
            [{"type": "actions", "elements": [button("a" * 256)]}],
            "must be less than 256 characters [json-pointer:/blocks/0/elements/0/action_id]",
        ),
        (
            [{"type": "actions", "elements": [button("x"), button("x")]}],
            "action_id must be unique [json-pointer:/blocks/0/elements/1/action_id]",
        ),
        (
            [{"type": "divider", "block_id": "b" * 256}],
            "must be less than 256 characters [json-pointer:/blocks/0/block_id]",
        ),
        (
            [{"type": "divider", "block_id": "d"}, {"type": "divider", "block_id": "d"}],
            "block_id must be unique [json-pointer:/blocks/1/block_id]",
        ),
        (
            [{"type": "image", "image_url": "https://example.com/a.png"}],
            "missing required field: alt_text [json-pointer:/blocks/0]",
        ),
        (
            [{"type": "image", "alt_text": "chart"}],
            "must provide exactly one of image_url, slack_file [json-pointer:/blocks/0]",
        ),
        (
            [{"type": "image", "alt_text": "chart", "slack_file": {"id": "F1", "url": "u"}}],
            "must provide exactly one of id, url [json-pointer:/blocks/0/slack_file]",
        ),
    ],
)
def test_slack_refuses(blocks: list[dict[str, Any]], problem: str) -> None:
    """Each broken rule is one problem, in Slack's words, with its JSON pointer."""
    problems = message_problems(blocks)
    assert texts(problems) == [problem]
    assert error_of(problems) == BLOCKS_SCHEMA


def test_the_same_action_id_in_two_blocks_is_taken() -> None:
    """Slack wants action_ids unique within their block, not across a message."""
    blocks = [
        {"type": "actions", "elements": [button("x")]},
        {"type": "actions", "elements": [button("x")]},
    ]
    assert message_problems(blocks) == []


def test_blocks_that_are_not_an_array_of_objects_are_invalid_blocks_format() -> None:
    assert error_of(message_problems(["divider"])) == BLOCKS_FORMAT
    assert error_of(message_problems({"type": "divider"})) == BLOCKS_FORMAT


def test_blocks_too_long_in_all_are_msg_blocks_too_long() -> None:
    """Blocks within each limit but about 13.2k characters in all are refused."""
    blocks = [section("x" * 2900) for _ in range(5)]
    problems = message_problems(blocks)
    assert error_of(problems) == BLOCKS_TOO_LONG and len(problems) == 1
    assert message_problems([section("x" * 2900) for _ in range(4)]) == []


def test_a_schema_problem_outranks_the_length() -> None:
    blocks = [section("x" * 2900) for _ in range(5)] + [{"type": "table"}]
    assert error_of(message_problems(blocks)) == BLOCKS_SCHEMA


def test_text_over_forty_thousand_is_cut_not_refused() -> None:
    assert cut_text("a" * 40_001) == ("a" * 40_000, True)
    assert cut_text("short") == ("short", False)


MODAL: dict[str, Any] = {
    "type": "modal",
    "callback_id": "silence",
    "title": text("plain_text", "Silence alert"),
    "submit": text("plain_text", "Silence"),
    "close": text("plain_text", "Cancel"),
    "private_metadata": "incident-1",
    "blocks": [
        {
            "type": "input",
            "block_id": "duration",
            "label": text("plain_text", "Minutes"),
            "element": {"type": "plain_text_input", "action_id": "minutes"},
        }
    ],
}


def test_a_modal_with_an_input_is_taken() -> None:
    assert view_problems(MODAL) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"type": "home"}, "must be one of: modal [json-pointer:/view/type]"),
        (
            {"title": text("plain_text", "t" * 25)},
            "must be less than 25 characters [json-pointer:/view/title/text]",
        ),
        (
            {"submit": text("mrkdwn", "Go")},
            "must be one of: plain_text [json-pointer:/view/submit/type]",
        ),
        ({"submit": None}, "missing required field: submit [json-pointer:/view]"),
        (
            {"callback_id": "c" * 256},
            "must be less than 256 characters [json-pointer:/view/callback_id]",
        ),
        (
            {"private_metadata": "m" * 3001},
            "must be less than 3001 characters [json-pointer:/view/private_metadata]",
        ),
        (
            {"blocks": [{"type": "divider"}] * 101},
            "no more than 100 items allowed [json-pointer:/view/blocks]",
        ),
        (
            {"blocks": [{"type": "input", "element": {"type": "plain_text_input"}}]},
            "missing required field: label [json-pointer:/view/blocks/0]",
        ),
        (
            {"blocks": [{"type": "input", "label": text("plain_text", "x")}]},
            "missing required field: element [json-pointer:/view/blocks/0]",
        ),
        (
            {"blocks": [{"type": "markdown", "text": "x"}]},
            "failed to match all allowed schemas [json-pointer:/view/blocks/0]",
        ),
    ],
)
def test_slack_refuses_the_modal(change: dict[str, Any], problem: str) -> None:
    assert texts(view_problems({**MODAL, **change})) == [problem]
