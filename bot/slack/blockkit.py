"""Slack's Block Kit rules as pure functions: what Slack refuses in a message or a modal.

Problems are strings in Slack's own form, `<what is wrong> [json-pointer:/blocks/0/text/text]`,
the same text Slack puts into `errors` when it answers `invalid_blocks`
(https://docs.slack.dev/reference/block-kit/blocks). `slack_error` names the error Slack gives.
Lengths are counted by `bot.slack.limits.slack_len`, which counts an emoji as two: never less
than Slack counts, so what passes here Slack takes.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from bot.slack.limits import (
    MAX_ACTION_ID,
    MAX_ACTIONS_ELEMENTS,
    MAX_ALT_TEXT,
    MAX_BLOCK_ID,
    MAX_BLOCKS_PER_MESSAGE,
    MAX_BLOCKS_PER_VIEW,
    MAX_BUTTON_TEXT,
    MAX_BUTTON_URL,
    MAX_BUTTON_VALUE,
    MAX_CALLBACK_ID,
    MAX_CONFIRM_BUTTON,
    MAX_CONFIRM_TEXT,
    MAX_CONFIRM_TITLE,
    MAX_CONTEXT_ELEMENTS,
    MAX_EXTERNAL_ID,
    MAX_FIELD_TEXT,
    MAX_HEADER_TEXT,
    MAX_IMAGE_URL,
    MAX_INPUT_LABEL,
    MAX_MARKDOWN_BLOCK,
    MAX_MESSAGE_TEXT,
    MAX_PRIVATE_METADATA,
    MAX_SECTION_FIELDS,
    MAX_SECTION_TEXT,
    MAX_TEXT_OBJECT,
    MAX_TOTAL_BLOCK_CHARS,
    MAX_VIEW_TITLE,
    json_len,
    slack_len,
)

MESSAGE_BLOCK_TYPES = frozenset(
    {"header", "section", "context", "actions", "divider", "image", "rich_text", "markdown"}
)
VIEW_BLOCK_TYPES = frozenset(
    {"header", "section", "context", "actions", "divider", "image", "rich_text", "input"}
)
INTERACTIVE_ELEMENTS = frozenset(
    {
        "button", "checkboxes", "datepicker", "datetimepicker", "timepicker", "overflow",
        "radio_buttons", "static_select", "external_select", "users_select",
        "conversations_select", "channels_select", "multi_static_select",
        "multi_external_select", "multi_users_select", "multi_conversations_select",
        "multi_channels_select",
    }
)  # fmt: skip
INPUT_ELEMENTS = INTERACTIVE_ELEMENTS - {"button", "overflow"} | {
    "plain_text_input", "number_input", "email_text_input", "url_text_input", "rich_text_input",
    "file_input",
}  # fmt: skip

ACCESSORY_ELEMENTS = INTERACTIVE_ELEMENTS | {"image"}

#: Marks the one problem Slack answers with `msg_blocks_too_long` instead of `invalid_blocks`.
TOO_LONG = "blocks are too long"
#: Marks problems Slack answers with `invalid_blocks_format` (not an array of objects).
NOT_AN_ARRAY = "must be an array of objects"


def blocks_char_count(blocks: Sequence[Any]) -> int:
    """Characters of the blocks as serialised JSON: the budget `msg_blocks_too_long` spends.

    Slack does not document the measure; slackapi/bolt-js#2509 shows structure counts too (a
    divider lowers the limit), so the compact serialisation is the conservative reading.
    """
    return json_len(list(blocks))


def truncate_text(text: str) -> tuple[str, bool]:
    """Slack cuts `text` beyond 40,000 characters and warns `message_truncated` (not an error).

    https://api.slack.com/changelog/2018-04-truncating-really-long-messages
    """
    if len(text) <= MAX_MESSAGE_TEXT:
        return text, False
    return text[:MAX_MESSAGE_TEXT], True


def slack_error_for(problem: str) -> str:
    """The Slack error name a single problem string is answered with."""
    if problem.startswith(TOO_LONG):
        return "msg_blocks_too_long"
    if problem.startswith(NOT_AN_ARRAY):
        return "invalid_blocks_format"
    return "invalid_blocks"


def slack_error(problems: Iterable[str]) -> str | None:
    """The error Slack answers for a set of problems: format before schema before length."""
    names = {slack_error_for(p) for p in problems}
    for name in ("invalid_blocks_format", "invalid_blocks", "msg_blocks_too_long"):
        if name in names:
            return name
    return None


def validate_message(text: str | None, blocks: Sequence[Any] | None) -> list[str]:
    """Problems Slack would refuse a message for; empty when it would be accepted."""
    del text  # a long `text` is truncated by Slack, not refused
    if blocks is None:
        return []
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        return [f"{NOT_AN_ARRAY} [json-pointer:/blocks]"]
    checker = _Checker(MESSAGE_BLOCK_TYPES)
    checker.blocks(blocks, "/blocks", MAX_BLOCKS_PER_MESSAGE)
    if not checker.problems and (total := blocks_char_count(blocks)) > MAX_TOTAL_BLOCK_CHARS:
        checker.add(f"{TOO_LONG}: {total} characters, at most {MAX_TOTAL_BLOCK_CHARS}", "/blocks")
    return checker.problems


def validate_view(view: Mapping[str, Any]) -> list[str]:
    """Problems Slack would refuse a modal for (https://docs.slack.dev/reference/views)."""
    checker = _Checker(VIEW_BLOCK_TYPES)
    if view.get("type") != "modal":
        checker.add("must be one of: modal", "/view/type")
    checker.text(view.get("title"), "/view/title", MAX_VIEW_TITLE, plain=True)
    for key in ("submit", "close"):
        if key in view and view[key] is not None:
            checker.text(view[key], f"/view/{key}", MAX_VIEW_TITLE, plain=True)
    checker.length(view.get("callback_id"), "/view/callback_id", MAX_CALLBACK_ID)
    checker.length(view.get("external_id"), "/view/external_id", MAX_EXTERNAL_ID)
    checker.length(view.get("private_metadata"), "/view/private_metadata", MAX_PRIVATE_METADATA)
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or not all(isinstance(b, dict) for b in blocks):
        checker.add(NOT_AN_ARRAY, "/view/blocks")
        return checker.problems
    checker.blocks(blocks, "/view/blocks", MAX_BLOCKS_PER_VIEW)
    # Slack: "submit ... Required if an input block is within the blocks array".
    if any(b.get("type") == "input" for b in blocks) and not view.get("submit"):
        checker.add("missing required field: submit", "/view")
    return checker.problems


class _Checker:
    """Walks blocks and collects problems; one instance per message or view."""

    def __init__(self, block_types: frozenset[str]) -> None:
        self.block_types = block_types
        self.problems: list[str] = []
        self.block_ids: set[str] = set()
        self.action_ids: set[str] = set()

    def add(self, what: str, pointer: str) -> None:
        self.problems.append(f"{what} [json-pointer:{pointer}]")

    def length(self, value: Any, pointer: str, limit: int) -> None:
        if value is None:
            return
        if not isinstance(value, str):
            self.add("must be a string", pointer)
        elif slack_len(value) > limit:
            self.add(f"must be less than {limit + 1} characters", pointer)

    def text(
        self, obj: Any, pointer: str, limit: int = MAX_TEXT_OBJECT, plain: bool = False
    ) -> None:
        if not isinstance(obj, dict):
            self.add("must be a text object", pointer)
            return
        allowed = ("plain_text",) if plain else ("plain_text", "mrkdwn")
        if obj.get("type") not in allowed:
            self.add(f"must be one of: {', '.join(allowed)}", f"{pointer}/type")
        value = obj.get("text")
        if not isinstance(value, str) or not value:
            self.add("must be a non-empty string", f"{pointer}/text")
        else:
            self.length(value, f"{pointer}/text", limit)

    def url(self, value: Any, pointer: str, limit: int) -> None:
        self.length(value, pointer, limit)
        parts = urlsplit(value) if isinstance(value, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            self.add("must be a valid http(s) URL", pointer)

    def blocks(self, blocks: list[dict[str, Any]], pointer: str, limit: int) -> None:
        if len(blocks) > limit:
            self.add(f"no more than {limit} items allowed", pointer)
        for index, block in enumerate(blocks):
            self.block(block, f"{pointer}/{index}")

    def block(self, block: dict[str, Any], pointer: str) -> None:
        kind = block.get("type")
        if kind not in self.block_types:
            self.add("failed to match all allowed schemas", pointer)
            return
        block_id = block.get("block_id")
        if block_id is not None:
            self.identifier(block_id, f"{pointer}/block_id", MAX_BLOCK_ID, self.block_ids)
        getattr(self, f"block_{kind}", lambda _b, _p: None)(block, pointer)

    def block_header(self, block: dict[str, Any], pointer: str) -> None:
        self.text(block.get("text"), f"{pointer}/text", MAX_HEADER_TEXT, plain=True)

    def block_section(self, block: dict[str, Any], pointer: str) -> None:
        if "text" not in block and "fields" not in block:
            self.add("must provide text or fields", pointer)
        if "text" in block:
            self.text(block["text"], f"{pointer}/text", MAX_SECTION_TEXT)
        fields = block.get("fields")
        if fields is not None:
            if not isinstance(fields, list) or len(fields) > MAX_SECTION_FIELDS:
                self.add(f"no more than {MAX_SECTION_FIELDS} items allowed", f"{pointer}/fields")
            else:
                for i, field in enumerate(fields):
                    self.text(field, f"{pointer}/fields/{i}", MAX_FIELD_TEXT)
        if "accessory" in block:
            self.element(block["accessory"], f"{pointer}/accessory", ACCESSORY_ELEMENTS)

    def identifier(self, value: Any, pointer: str, limit: int, seen: set[str]) -> None:
        """A block_id or action_id: not too long, and not used before in the message."""
        self.length(value, pointer, limit)
        name = pointer.rsplit("/", 1)[-1]
        if str(value) in seen:
            self.add(f"{name} must be unique", pointer)
        seen.add(str(value))

    def elements(self, block: dict[str, Any], pointer: str, limit: int) -> list[Any]:
        """A block's `elements`, with their count checked; empty when missing."""
        elements = block.get("elements")
        if not isinstance(elements, list) or not elements:
            self.add("missing required field: elements", pointer)
            return []
        if len(elements) > limit:
            self.add(f"no more than {limit} items allowed", f"{pointer}/elements")
        return elements

    def block_context(self, block: dict[str, Any], pointer: str) -> None:
        for i, element in enumerate(self.elements(block, pointer, MAX_CONTEXT_ELEMENTS)):
            where = f"{pointer}/elements/{i}"
            if isinstance(element, dict) and element.get("type") == "image":
                self.image(element, where)
            else:
                self.text(element, where)

    def block_actions(self, block: dict[str, Any], pointer: str) -> None:
        for i, element in enumerate(self.elements(block, pointer, MAX_ACTIONS_ELEMENTS)):
            self.element(element, f"{pointer}/elements/{i}", INTERACTIVE_ELEMENTS)

    def block_image(self, block: dict[str, Any], pointer: str) -> None:
        self.image(block, pointer)
        if "title" in block:
            self.text(block["title"], f"{pointer}/title", MAX_ALT_TEXT, plain=True)

    def block_rich_text(self, block: dict[str, Any], pointer: str) -> None:
        if not isinstance(block.get("elements"), list):
            self.add("missing required field: elements", pointer)

    def block_markdown(self, block: dict[str, Any], pointer: str) -> None:
        text = block.get("text")
        if not isinstance(text, str) or not text:
            self.add("must be a non-empty string", f"{pointer}/text")
        else:
            self.length(text, f"{pointer}/text", MAX_MARKDOWN_BLOCK)

    def block_input(self, block: dict[str, Any], pointer: str) -> None:
        self.text(block.get("label"), f"{pointer}/label", MAX_INPUT_LABEL, plain=True)
        if "hint" in block:
            self.text(block["hint"], f"{pointer}/hint", MAX_INPUT_LABEL, plain=True)
        if "element" not in block:
            self.add("missing required field: element", pointer)
        else:
            self.element(block["element"], f"{pointer}/element", INPUT_ELEMENTS)

    def image(self, image: dict[str, Any], pointer: str) -> None:
        if "image_url" in image:
            self.url(image["image_url"], f"{pointer}/image_url", MAX_IMAGE_URL)
        elif not isinstance(image.get("slack_file"), dict):
            self.add("missing required field: image_url or slack_file", pointer)
        alt = image.get("alt_text")
        if not isinstance(alt, str) or not alt:
            self.add("missing required field: alt_text", pointer)
        else:
            self.length(alt, f"{pointer}/alt_text", MAX_ALT_TEXT)

    def element(self, element: Any, pointer: str, allowed: frozenset[str]) -> None:
        kind = element.get("type") if isinstance(element, dict) else None
        if kind not in allowed or not isinstance(element, dict):
            self.add("failed to match all allowed schemas", pointer)
            return
        if kind == "image":
            self.image(element, pointer)
            return
        action_id = element.get("action_id")
        if action_id is not None:
            # Slack wants action_id unique per block; clicks here resolve by action_id alone,
            # so a message may not repeat one anywhere.
            self.identifier(action_id, f"{pointer}/action_id", MAX_ACTION_ID, self.action_ids)
        if "confirm" in element:
            self.confirm(element["confirm"], f"{pointer}/confirm")
        if kind == "button":
            self.button(element, pointer)

    def button(self, button: dict[str, Any], pointer: str) -> None:
        # https://docs.slack.dev/reference/block-kit/block-elements/button-element
        self.text(button.get("text"), f"{pointer}/text", MAX_BUTTON_TEXT, plain=True)
        self.length(button.get("value"), f"{pointer}/value", MAX_BUTTON_VALUE)
        if "url" in button:
            self.url(button["url"], f"{pointer}/url", MAX_BUTTON_URL)
        if "style" in button and button["style"] not in ("primary", "danger"):
            self.add("must be one of: primary, danger", f"{pointer}/style")

    def confirm(self, confirm: Any, pointer: str) -> None:
        if not isinstance(confirm, dict):
            self.add("must be a confirmation dialog object", pointer)
            return
        self.text(confirm.get("title"), f"{pointer}/title", MAX_CONFIRM_TITLE, plain=True)
        self.text(confirm.get("text"), f"{pointer}/text", MAX_CONFIRM_TEXT)
        for key in ("confirm", "deny"):
            self.text(confirm.get(key), f"{pointer}/{key}", MAX_CONFIRM_BUTTON, plain=True)
