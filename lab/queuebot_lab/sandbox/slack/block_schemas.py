"""Slack's Block Kit reference, as a table: each block, element and composition object, its
fields, which are required, and their documented limits.

Read from Slack's reference pages (https://docs.slack.dev/reference/block-kit/blocks,
https://docs.slack.dev/reference/block-kit/block-elements,
https://docs.slack.dev/reference/block-kit/composition-objects,
https://docs.slack.dev/reference/views). `queuebot_lab.sandbox.slack.blockkit` walks a message or a
view against it. Fields Slack documents but the table leaves out are let through unchecked.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto


class Kind(Enum):
    PLAIN = auto()  # a text object that must be plain_text
    TEXT = auto()  # a text object, plain_text or mrkdwn
    STRING = auto()
    URL = auto()  # an http(s) URL
    ID = auto()  # a block_id or action_id
    CHOICE = auto()  # one of `choices`
    ELEMENT = auto()  # one element whose type is in `choices`
    ELEMENTS = auto()  # a list of elements whose types are in `choices`
    TEXTS = auto()  # a list of text objects
    MIXED = auto()  # a context block's list: text objects and image elements
    OPTIONS = auto()  # a list of option objects
    CONFIRM = auto()
    FILE = auto()  # a slack_file object
    LIST = auto()  # any list (its content is not checked)


@dataclass(frozen=True)
class Field:
    kind: Kind
    required: bool = False
    #: Most characters (strings, text objects' text) or most items (lists); 0: no limit.
    most: int = 0
    #: Fewest items of a list.
    fewest: int = 0
    #: Each item's most characters, for lists of texts and options' text.
    each: int = 0
    choices: frozenset[str] = frozenset()


def _choices(*names: str) -> frozenset[str]:
    return frozenset(names)


BUTTON_STYLES = _choices("primary", "danger")
SELECTS = _choices(
    "static_select", "external_select", "users_select", "conversations_select",
    "channels_select", "multi_static_select", "multi_external_select", "multi_users_select",
    "multi_conversations_select", "multi_channels_select",
)  # fmt: skip
INTERACTIVE = SELECTS | _choices(
    "button", "checkboxes", "datepicker", "datetimepicker", "timepicker", "overflow",
    "radio_buttons", "workflow_button",
)  # fmt: skip
INPUTS = (INTERACTIVE - _choices("button", "overflow", "workflow_button")) | _choices(
    "plain_text_input", "number_input", "email_text_input", "url_text_input", "rich_text_input",
    "file_input",
)  # fmt: skip
ACCESSORIES = INTERACTIVE | _choices("image")

_BLOCK_ID = Field(Kind.ID, most=255)
_ACTION_ID = Field(Kind.ID, most=255)
_PLACEHOLDER = Field(Kind.PLAIN, most=150)

#: Blocks that may appear in messages, and (with `input`) in modals.
BLOCKS: dict[str, dict[str, Field]] = {
    "header": {"text": Field(Kind.PLAIN, required=True, most=150), "block_id": _BLOCK_ID},
    "section": {
        "text": Field(Kind.TEXT, most=3000),
        "fields": Field(Kind.TEXTS, most=10, each=2000),
        "accessory": Field(Kind.ELEMENT, choices=ACCESSORIES),
        "block_id": _BLOCK_ID,
    },
    "context": {
        "elements": Field(Kind.MIXED, required=True, most=10, fewest=1),
        "block_id": _BLOCK_ID,
    },
    "actions": {
        "elements": Field(Kind.ELEMENTS, required=True, most=25, fewest=1, choices=INTERACTIVE),
        "block_id": _BLOCK_ID,
    },
    "divider": {"block_id": _BLOCK_ID},
    "image": {
        "image_url": Field(Kind.URL, most=3000),
        "slack_file": Field(Kind.FILE),
        "alt_text": Field(Kind.STRING, required=True, most=2000),
        "title": Field(Kind.PLAIN, most=2000),
        "block_id": _BLOCK_ID,
    },
    "rich_text": {"elements": Field(Kind.LIST, required=True), "block_id": _BLOCK_ID},
    "markdown": {"text": Field(Kind.STRING, required=True, most=12000), "block_id": _BLOCK_ID},
    "input": {
        "label": Field(Kind.PLAIN, required=True, most=2000),
        "element": Field(Kind.ELEMENT, required=True, choices=INPUTS),
        "hint": Field(Kind.PLAIN, most=2000),
        "block_id": _BLOCK_ID,
    },
}
#: Blocks a message may hold (`input` belongs to modals).
MESSAGE_BLOCKS = frozenset(BLOCKS) - {"input"}
VIEW_BLOCKS = frozenset(BLOCKS) - {"markdown"}

_SELECT = {"action_id": _ACTION_ID, "placeholder": _PLACEHOLDER, "confirm": Field(Kind.CONFIRM)}
ELEMENTS: dict[str, dict[str, Field]] = {
    "button": {
        "text": Field(Kind.PLAIN, required=True, most=75),
        "action_id": _ACTION_ID,
        "value": Field(Kind.STRING, most=2000),
        "url": Field(Kind.URL, most=3000),
        "style": Field(Kind.CHOICE, choices=BUTTON_STYLES),
        "confirm": Field(Kind.CONFIRM),
        "accessibility_label": Field(Kind.STRING, most=75),
    },
    "image": {
        "image_url": Field(Kind.URL, most=3000),
        "slack_file": Field(Kind.FILE),
        "alt_text": Field(Kind.STRING, required=True, most=2000),
    },
    "static_select": {**_SELECT, "options": Field(Kind.OPTIONS, most=100, each=75)},
    "multi_static_select": {**_SELECT, "options": Field(Kind.OPTIONS, most=100, each=75)},
    "overflow": {
        "action_id": _ACTION_ID,
        "options": Field(Kind.OPTIONS, required=True, most=5, fewest=1, each=75),
        "confirm": Field(Kind.CONFIRM),
    },
    "checkboxes": {"action_id": _ACTION_ID, "options": Field(Kind.OPTIONS, most=10, each=75)},
    "radio_buttons": {"action_id": _ACTION_ID, "options": Field(Kind.OPTIONS, most=10, each=75)},
    "plain_text_input": {"action_id": _ACTION_ID, "placeholder": _PLACEHOLDER},
    "datepicker": {"action_id": _ACTION_ID, "placeholder": _PLACEHOLDER},
    "timepicker": {"action_id": _ACTION_ID, "placeholder": _PLACEHOLDER},
    "datetimepicker": {"action_id": _ACTION_ID},
}
#: Elements the table has no fields for still get their action_id checked.
DEFAULT_ELEMENT = {"action_id": _ACTION_ID, "confirm": Field(Kind.CONFIRM)}

CONFIRM: dict[str, Field] = {
    "title": Field(Kind.PLAIN, required=True, most=100),
    "text": Field(Kind.TEXT, required=True, most=300),
    "confirm": Field(Kind.PLAIN, required=True, most=30),
    "deny": Field(Kind.PLAIN, required=True, most=30),
    "style": Field(Kind.CHOICE, choices=BUTTON_STYLES),
}
OPTION_VALUE = 150

VIEW: dict[str, Field] = {
    "type": Field(Kind.CHOICE, required=True, choices=_choices("modal")),
    "title": Field(Kind.PLAIN, required=True, most=24),
    "submit": Field(Kind.PLAIN, most=24),
    "close": Field(Kind.PLAIN, most=24),
    "callback_id": Field(Kind.STRING, most=255),
    "external_id": Field(Kind.STRING, most=255),
    "private_metadata": Field(Kind.STRING, most=3000),
}
MESSAGE_BLOCKS_MOST = 50
VIEW_BLOCKS_MOST = 100
#: Slack refuses blocks longer than this in all (`msg_blocks_too_long`) though every block keeps
#: its own limits; undocumented, observed at about 13.2k characters of the blocks' JSON
#: (slackapi/bolt-js#2509).
BLOCKS_TOTAL_MOST = 13_200
#: Longer message text is cut, not refused (warning `message_truncated`).
MESSAGE_TEXT_MOST = 40_000
