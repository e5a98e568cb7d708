"""What Slack refuses in a message's blocks or a modal, and the error it answers with.

The walker checks blocks against the reference table of `queuebot_lab.sandbox.slack.block_schemas`.
Each problem is Slack's kind of refusal and its text in Slack's form,
`<problem> [json-pointer:/blocks/0/text/text]`, as Slack lists them in `errors` and
`response_metadata.messages` when it answers `invalid_blocks`. A message's blocks must be an
array of objects (else `invalid_blocks_format`); blocks within every limit can still be too long
in all (`msg_blocks_too_long`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from queuebot_lab.sandbox.slack.block_schemas import (
    BLOCKS,
    BLOCKS_TOTAL_MOST,
    CONFIRM,
    DEFAULT_ELEMENT,
    ELEMENTS,
    MESSAGE_BLOCKS,
    MESSAGE_BLOCKS_MOST,
    MESSAGE_TEXT_MOST,
    OPTION_VALUE,
    VIEW,
    VIEW_BLOCKS,
    VIEW_BLOCKS_MOST,
    Field,
    Kind,
)

BLOCKS_FORMAT = "invalid_blocks_format"
BLOCKS_SCHEMA = "invalid_blocks"
BLOCKS_TOO_LONG = "msg_blocks_too_long"
#: When several kinds of problem occur, Slack answers with the first of these.
_PRECEDENCE = (BLOCKS_FORMAT, BLOCKS_SCHEMA, BLOCKS_TOO_LONG)


@dataclass(frozen=True)
class Problem:
    error: str
    text: str


def error_of(problems: list[Problem]) -> str | None:
    """The error Slack answers for these problems, or None when there are none."""
    kinds = {p.error for p in problems}
    return next((kind for kind in _PRECEDENCE if kind in kinds), None)


def texts(problems: list[Problem]) -> list[str]:
    return [p.text for p in problems]


def cut_text(text: str) -> tuple[str, bool]:
    """A message's `text` as Slack keeps it: cut past 40,000 characters, with a warning
    (https://api.slack.com/changelog/2018-04-truncating-really-long-messages)."""
    return text[:MESSAGE_TEXT_MOST], len(text) > MESSAGE_TEXT_MOST


def message_problems(blocks: Any) -> list[Problem]:
    """Why Slack would refuse a message with these `blocks` (None: a text-only message)."""
    if blocks is None:
        return []
    if not isinstance(blocks, list) or any(not isinstance(b, dict) for b in blocks):
        return [Problem(BLOCKS_FORMAT, "must be an array of objects [json-pointer:/blocks]")]
    walk = _Walk(MESSAGE_BLOCKS)
    walk.blocks(blocks, "/blocks", MESSAGE_BLOCKS_MOST)
    size = len(json.dumps(blocks, separators=(",", ":"), ensure_ascii=False))
    if not walk.problems and size > BLOCKS_TOTAL_MOST:
        in_all = f"{size} characters in all [json-pointer:/blocks]"
        walk.problems.append(Problem(BLOCKS_TOO_LONG, in_all))
    return walk.problems


def view_problems(view: Mapping[str, Any]) -> list[Problem]:
    """Why Slack would refuse to open this modal."""
    walk = _Walk(VIEW_BLOCKS)
    walk.fields(view, VIEW, "/view")
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or any(not isinstance(b, dict) for b in blocks):
        walk.refuse("must be an array of objects", "/view/blocks")
        return walk.problems
    walk.blocks(blocks, "/view/blocks", VIEW_BLOCKS_MOST)
    # "submit: Required if an input block is within the blocks array" (views reference).
    if any(b.get("type") == "input" for b in blocks) and not view.get("submit"):
        walk.refuse("missing required field: submit", "/view")
    return walk.problems


@dataclass
class _Walk:
    block_types: frozenset[str]
    problems: list[Problem] = field(default_factory=list)
    block_ids: set[str] = field(default_factory=set)

    def refuse(self, what: str, pointer: str) -> None:
        self.problems.append(Problem(BLOCKS_SCHEMA, f"{what} [json-pointer:{pointer}]"))

    def blocks(self, blocks: list[dict[str, Any]], pointer: str, most: int) -> None:
        if len(blocks) > most:
            self.refuse(f"no more than {most} items allowed", pointer)
        for index, block in enumerate(blocks):
            where = f"{pointer}/{index}"
            kind = block.get("type")
            if kind not in self.block_types:
                self.refuse("failed to match all allowed schemas", where)
                continue
            self.fields(block, BLOCKS[str(kind)], where, unique=self.block_ids)
            self.block_rules(block, where)

    def block_rules(self, block: dict[str, Any], where: str) -> None:
        """What a block needs beyond its fields one by one."""
        kind = block["type"]
        if kind == "section" and "text" not in block and "fields" not in block:
            self.refuse("must provide text or fields", where)
        elif kind == "image":
            self.image_source(block, where)
        elif kind == "actions":
            # action_id: "unique among all other action_ids in the containing block".
            seen: set[str] = set()
            for index, element in enumerate(block.get("elements") or []):
                if isinstance(element, dict) and "action_id" in element:
                    self.unique(element["action_id"], seen, f"{where}/elements/{index}/action_id")

    def image_source(self, image: dict[str, Any], where: str) -> None:
        if ("image_url" in image) == ("slack_file" in image):
            self.refuse("must provide exactly one of image_url, slack_file", where)

    def unique(self, value: Any, seen: set[str], pointer: str) -> None:
        name = pointer.rsplit("/", 1)[-1]
        if str(value) in seen:
            self.refuse(f"{name} must be unique", pointer)
        seen.add(str(value))

    def fields(
        self,
        obj: Mapping[str, Any],
        schema: Mapping[str, Field],
        pointer: str,
        *,
        unique: set[str] | None = None,
    ) -> None:
        for name, rule in schema.items():
            where = f"{pointer}/{name}"
            if name not in obj or obj[name] is None:
                if rule.required:
                    self.refuse(f"missing required field: {name}", pointer)
                continue
            self.value(obj[name], rule, where)
            if name == "block_id" and unique is not None:
                self.unique(obj[name], unique, where)

    def value(self, value: Any, rule: Field, where: str) -> None:
        match rule.kind:
            case Kind.PLAIN | Kind.TEXT:
                self.text(value, rule, where)
            case Kind.STRING | Kind.ID:
                self.string(value, rule.most, where)
            case Kind.URL:
                self.string(value, rule.most, where)
                parts = urlsplit(value) if isinstance(value, str) else None
                if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
                    self.refuse("must be a valid http(s) URL", where)
            case Kind.CHOICE:
                if value not in rule.choices:
                    self.refuse(f"must be one of: {', '.join(sorted(rule.choices))}", where)
            case Kind.ELEMENT:
                self.element(value, rule.choices, where)
            case Kind.ELEMENTS | Kind.TEXTS | Kind.MIXED | Kind.OPTIONS | Kind.LIST:
                self.items(value, rule, where)
            case Kind.CONFIRM:
                if not isinstance(value, dict):
                    self.refuse("must be a confirmation dialog object", where)
                else:
                    self.fields(value, CONFIRM, where)
            case Kind.FILE:
                if not isinstance(value, dict) or ("id" in value) == ("url" in value):
                    self.refuse("must provide exactly one of id, url", where)

    def items(self, value: Any, rule: Field, where: str) -> None:
        if not isinstance(value, list):
            self.refuse("must be an array", where)
            return
        if rule.most and len(value) > rule.most:
            self.refuse(f"no more than {rule.most} items allowed", where)
        if len(value) < rule.fewest:
            self.refuse(f"must provide at least {rule.fewest} items", where)
        for index, item in enumerate(value):
            at = f"{where}/{index}"
            if rule.kind is Kind.TEXTS:
                self.text(item, Field(Kind.TEXT, most=rule.each), at)
            elif rule.kind is Kind.ELEMENTS:
                self.element(item, rule.choices, at)
            elif rule.kind is Kind.MIXED:
                is_image = isinstance(item, dict) and item.get("type") == "image"
                if is_image:
                    self.element(item, frozenset({"image"}), at)
                else:
                    self.text(item, Field(Kind.TEXT, most=3000), at)
            elif rule.kind is Kind.OPTIONS:
                self.option(item, rule.each, at)

    def option(self, option: Any, most: int, where: str) -> None:
        if not isinstance(option, dict):
            self.refuse("must be an option object", where)
            return
        self.fields(
            option,
            {
                "text": Field(Kind.TEXT, required=True, most=most),
                "value": Field(Kind.STRING, required=True, most=OPTION_VALUE),
            },
            where,
        )

    def element(self, element: Any, allowed: frozenset[str], where: str) -> None:
        kind = element.get("type") if isinstance(element, dict) else None
        if not isinstance(element, dict) or kind not in allowed:
            self.refuse("failed to match all allowed schemas", where)
            return
        self.fields(element, ELEMENTS.get(str(kind), DEFAULT_ELEMENT), where)
        if kind == "image":
            self.image_source(element, where)

    def text(self, obj: Any, rule: Field, where: str) -> None:
        if not isinstance(obj, dict):
            self.refuse("must be a text object", where)
            return
        kinds = ("plain_text",) if rule.kind is Kind.PLAIN else ("plain_text", "mrkdwn")
        if obj.get("type") not in kinds:
            self.refuse(f"must be one of: {', '.join(kinds)}", f"{where}/type")
        value = obj.get("text")
        if not isinstance(value, str) or not value:
            self.refuse("must be a non-empty string", f"{where}/text")
        else:
            self.string(value, rule.most, f"{where}/text")

    def string(self, value: Any, most: int, where: str) -> None:
        if not isinstance(value, str):
            self.refuse("must be a string", where)
        elif most and len(value) > most:
            self.refuse(f"must be less than {most + 1} characters", where)
