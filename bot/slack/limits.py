"""Slack's documented limits on messages, blocks and views, written down once, and how their
characters are counted."""

import json
from typing import Any

#: Slack's Block Kit and message limits (https://docs.slack.dev/reference/block-kit/blocks).
MAX_BLOCKS_PER_MESSAGE = 50
MAX_BLOCKS_PER_VIEW = 100
MAX_SECTION_TEXT = 3000
MAX_SECTION_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_BUTTON_URL = 3000
MAX_ACTION_ID = 255
MAX_BLOCK_ID = 255
MAX_MESSAGE_TEXT = 40000
#: Not documented: Slack answers `msg_blocks_too_long` at roughly 13.2k characters over all
#: blocks (slackapi/bolt-js#2509); stay under 12,000.
MAX_TOTAL_BLOCK_CHARS = 12000

#: Views and composition objects (https://docs.slack.dev/reference/views,
#: https://docs.slack.dev/reference/block-kit/composition-objects).
MAX_TEXT_OBJECT = 3000
MAX_MARKDOWN_BLOCK = 12000
MAX_IMAGE_URL = 3000
MAX_ALT_TEXT = 2000
MAX_VIEW_TITLE = 24
MAX_CALLBACK_ID = 255
MAX_EXTERNAL_ID = 255
MAX_PRIVATE_METADATA = 3000
MAX_INPUT_LABEL = 2000
MAX_CONFIRM_TITLE = 100
MAX_CONFIRM_TEXT = 300
MAX_CONFIRM_BUTTON = 30


def slack_len(text: str) -> int:
    """`text`'s length as Slack's limits count it, taken the safe way: UTF-16 code units.

    Slack documents its limits in "characters" without saying how it counts them: JSON
    Schema's maxLength counts code points, JavaScript (Slack's clients) counts UTF-16 code
    units, in which an emoji outside the Basic Multilingual Plane (🚨) is two. Code units are
    never fewer than code points, so a text within this count is within Slack's under either
    reading; accented or CJK text, one unit a character, is not cut short as a count of bytes
    would cut it.
    """
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def json_len(value: Any) -> int:
    """What `value` adds to a message's blocks once serialised, counted as `slack_len` counts:
    a quote, a backslash or a newline in a text costs two, a control character six. The
    undocumented total Slack holds blocks to is spent this way (see MAX_TOTAL_BLOCK_CHARS)."""
    return slack_len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
