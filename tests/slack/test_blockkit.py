"""What the bot checks before it sends (bot.slack.blockkit): what Slack refuses, in its words."""

from typing import Any

import pytest

from bot.slack.blockkit import (
    blocks_char_count,
    slack_error,
    slack_error_for,
    truncate_text,
    validate_message,
    validate_view,
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
    {"type": "rich_text", "elements": []},
    {"type": "markdown", "text": "**bold**"},
]


def test_a_typical_alert_message_is_valid() -> None:
    """Every block type the bot uses, within limits, passes."""
    assert validate_message("Queueing P2", ALERT) == []


def test_no_blocks_is_valid() -> None:
    """A plain text message has nothing to check."""
    assert validate_message("hi", None) == []


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
        (
            [{"type": "section", "text": text("markdown", "x")}],
            "must be one of: plain_text, mrkdwn [json-pointer:/blocks/0/text/type]",
        ),
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
            "must be one of: primary, danger [json-pointer:/blocks/0/elements/0/style]",
        ),
        (
            [{"type": "actions", "elements": [button("a" * 256)]}],
            "must be less than 256 characters [json-pointer:/blocks/0/elements/0/action_id]",
        ),
        (
            [
                {"type": "actions", "elements": [button("x")]},
                {"type": "actions", "elements": [button("x")]},
            ],
            "action_id must be unique [json-pointer:/blocks/1/elements/0/action_id]",
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
            "missing required field: image_url or slack_file [json-pointer:/blocks/0]",
        ),
    ],
)
def test_slack_refuses(blocks: list[dict[str, Any]], problem: str) -> None:
    """Each broken rule is reported once, in Slack's words, with its JSON pointer."""
    assert validate_message("x", blocks) == [problem]
    assert slack_error_for(problem) == "invalid_blocks"


def test_image_from_a_slack_file_needs_no_url() -> None:
    """An image block may name a slack_file instead of an image_url."""
    image = {"type": "image", "slack_file": {"id": "F1"}, "alt_text": "chart"}
    assert validate_message("x", [image]) == []


def test_blocks_that_are_not_an_array_of_objects_are_invalid_blocks_format() -> None:
    """A blocks value that is not a list of objects maps to invalid_blocks_format."""
    problems = validate_message("x", ["divider"])
    assert slack_error(problems) == "invalid_blocks_format"


def test_long_blocks_in_total_are_msg_blocks_too_long() -> None:
    """Blocks within each limit but over the total budget map to msg_blocks_too_long."""
    blocks = [section("x" * 2900) for _ in range(5)]
    problems = validate_message("x", blocks)
    assert len(problems) == 1
    assert slack_error(problems) == "msg_blocks_too_long"


def test_schema_problems_outrank_length() -> None:
    """When both kinds occur, Slack's answer is the schema error."""
    assert slack_error(
        ["blocks are too long: 1 [json-pointer:/blocks]", "x [json-pointer:/a]"]
    ) == ("invalid_blocks")
    assert slack_error([]) is None


def test_char_count_is_the_compact_json_length() -> None:
    """blocks_char_count measures the serialised blocks."""
    assert blocks_char_count([{"type": "divider"}]) == len('[{"type":"divider"}]')


def test_text_over_forty_thousand_is_truncated_not_refused() -> None:
    """Top-level text is cut at 40,000 characters and is never a problem."""
    assert truncate_text("a" * 40_001) == ("a" * 40_000, True)
    assert truncate_text("short") == ("short", False)
    assert validate_message("a" * 50_000, None) == []


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


def test_a_silence_modal_is_valid() -> None:
    """A modal with title, submit, close and an input block passes."""
    assert validate_view(MODAL) == []


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
            "must be a text object [json-pointer:/view/blocks/0/label]",
        ),
        (
            {"blocks": [{"type": "input", "label": text("plain_text", "x")}]},
            "missing required field: element [json-pointer:/view/blocks/0]",
        ),
    ],
)
def test_slack_refuses_the_modal(change: dict[str, Any], problem: str) -> None:
    """Each broken modal rule is reported in Slack's words."""
    assert validate_view({**MODAL, **change}) == [problem]
