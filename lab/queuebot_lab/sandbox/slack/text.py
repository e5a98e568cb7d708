"""A Slack message as readable terminal text, from its Block Kit.

Works on the message shape Slack returns (`text`, `blocks`, `ts`, ...), so it renders sandbox
messages and real payloads alike. mrkdwn tokens become plain text
(https://docs.slack.dev/messaging/formatting-message-text): `<url|label>` → `label (url)`,
`<!date^…|fallback>` → local time, `&amp; &lt; &gt;` unescaped.
"""

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any

TOKEN = re.compile(r"<([^<>]+)>")
#: Slack date formats (https://docs.slack.dev/messaging/formatting-message-text#date-formatting):
#: `{date_num}` 2014-02-18, `{date}` February 18th, 2014, `{date_short}` Feb 18, 2014,
#: `{date_long}` Tuesday, February 18th, 2014 (the day of the month never zero-padded); the
#: `_pretty` forms, which say today or yesterday where they apply, are shown here as the plain
#: ones. `{day}` and `{nth}` are filled in by `format_date`.
DATE_FORMATS: Mapping[str, str] = MappingProxyType(
    {
        "date_num": "%Y-%m-%d",
        "date": "%B {nth}, %Y",
        "date_short": "%b {day}, %Y",
        "date_long": "%A, %B {nth}, %Y",
        "date_pretty": "%B {nth}, %Y",
        "date_short_pretty": "%b {day}, %Y",
        "date_long_pretty": "%A, %B {nth}, %Y",
        "time": "%H:%M",
        "time_secs": "%H:%M:%S",
    }
)
RULE = "─" * 40
#: The emoji shortcodes alert messages use most; others stay as `:name:`.
EMOJI: Mapping[str, str] = MappingProxyType(
    {
        "red_circle": "🔴",
        "large_orange_circle": "🟠",
        "large_yellow_circle": "🟡",
        "large_green_circle": "🟢",
        "white_check_mark": "✅",
        "heavy_check_mark": "✔️",
        "x": "❌",
        "warning": "⚠️",
        "rotating_light": "🚨",
        "mute": "🔇",
        "bell": "🔔",
        "mag": "🔍",
        "hourglass_flowing_sand": "⏳",
        "hourglass": "⌛",
        "arrows_counterclockwise": "🔄",
        "chart_with_upwards_trend": "📈",
        "bar_chart": "📊",
        "no_entry": "⛔",
        "information_source": "ℹ️",
        "grey_question": "❔",
    }
)
SHORTCODE = re.compile(r":([a-z0-9_+-]+):")


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def emoji(text: str) -> str:
    return SHORTCODE.sub(lambda m: EMOJI.get(m.group(1), m.group(0)), text)


def format_date(epoch: int, pattern: str, now: datetime | None = None) -> str:
    when = datetime.fromtimestamp(epoch).astimezone()

    def field(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "ago":
            return ago((now or datetime.now().astimezone()) - when)
        if name not in DATE_FORMATS:
            return match.group(0)
        shown = when.strftime(DATE_FORMATS[name])
        return shown.replace("{day}", str(when.day)).replace("{nth}", ordinal(when.day))

    return re.sub(r"\{(\w+)\}", field, pattern)


def ordinal(day: int) -> str:
    """1st, 2nd, 3rd, 4th, …, 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def ago(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{minutes} minute{'s' * (minutes != 1)} ago"
    hours = minutes // 60
    return f"{hours} hour{'s' * (hours != 1)} ago"


def mrkdwn(text: str, users: Mapping[str, str] | None = None, now: datetime | None = None) -> str:
    """Slack markup tokens as plain text."""

    def token(match: re.Match[str]) -> str:
        inner = match.group(1)
        target, _, label = inner.partition("|")
        if target.startswith("!date^"):
            parts = target.split("^")
            try:
                return format_date(int(parts[1]), parts[2], now)
            except (IndexError, ValueError):
                return unescape(label)
        if target.startswith("@"):
            user_id = target[1:]
            return "@" + (label or (users or {}).get(user_id, user_id))
        if target.startswith("#"):
            return "#" + (label or target[1:])
        if target.startswith("!subteam^"):
            return label or "@" + target.split("^")[1]
        if target.startswith("!"):
            return "@" + target[1:]
        url = unescape(target)
        return f"{unescape(label)} ({url})" if label and label != url else url

    return emoji(unescape(TOKEN.sub(token, text)))


def text_of(obj: Any, users: Mapping[str, str] | None = None, now: datetime | None = None) -> str:
    """The readable text of a text object (plain_text literal, mrkdwn interpreted)."""
    if not isinstance(obj, Mapping):
        return ""
    text = str(obj.get("text", ""))
    if obj.get("type") == "plain_text":
        return emoji(text) if obj.get("emoji", True) else text
    return mrkdwn(text, users, now)


def button(element: Mapping[str, Any]) -> str:
    label = text_of(element.get("text"))
    return f"[{label} ↗ {element['url']}]" if element.get("url") else f"[{label}]"


def element_text(element: Any, users: Mapping[str, str] | None, now: datetime | None) -> str:
    if not isinstance(element, Mapping):
        return ""
    kind = element.get("type")
    if kind == "button":
        return button(element)
    if kind == "image":
        return f"[image: {element.get('alt_text', '')}]"
    if kind in ("plain_text", "mrkdwn"):
        return text_of(element, users, now)
    placeholder = text_of(element.get("placeholder")) or str(kind)
    return f"[{placeholder} ▾]"


def rich_text(node: Any) -> str:
    if isinstance(node, Mapping):
        if node.get("type") == "text":
            return str(node.get("text", ""))
        if node.get("type") == "link":
            return str(node.get("text") or node.get("url", ""))
        return "".join(rich_text(child) for child in node.get("elements", []))
    return ""


def block_lines(
    block: Mapping[str, Any], users: Mapping[str, str] | None, now: datetime | None
) -> list[str]:
    kind = block.get("type")
    if kind == "header":
        title = text_of(block.get("text"))
        return [title, "═" * min(len(title), 60)]
    if kind == "divider":
        return [RULE]
    if kind == "context":
        parts = [element_text(e, users, now) for e in block.get("elements", [])]
        return ["  " + " · ".join(p for p in parts if p)]
    if kind == "actions":
        return [" ".join(element_text(e, users, now) for e in block.get("elements", []))]
    if kind == "image":
        return [f"[image: {block.get('alt_text', '')}]"]
    if kind == "rich_text":
        return rich_text(block).splitlines()
    if kind == "markdown":
        return str(block.get("text", "")).splitlines()
    if kind == "section":
        lines = text_of(block.get("text"), users, now).splitlines()
        # A field's "title\nvalue" reads as one cell: "title value".
        fields = [" ".join(text_of(f, users, now).split("\n")) for f in block.get("fields", [])]
        for left, right in zip(fields[::2], [*fields[1::2], ""], strict=False):
            lines.append(f"  {left:<38} {right}".rstrip())
        if accessory := block.get("accessory"):
            lines.append("  " + element_text(accessory, users, now))
        return lines
    return [f"[{kind} block]"]


def render_message(
    message: Mapping[str, Any],
    users: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> str:
    """One message: its blocks when it has any, else its text."""
    blocks: Sequence[Any] = message.get("blocks") or []
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Mapping):
            lines.extend(block_lines(block, users, now))
    if not blocks:
        lines = mrkdwn(str(message.get("text", "")), users, now).splitlines()
    for file in message.get("files") or []:
        lines.append(f"[file {file.get('name') or file.get('title') or file.get('id')}]")
    if message.get("edited"):
        lines.append("  (edited)")
    return "\n".join(lines)


def render_thread(
    parent: Mapping[str, Any],
    replies: Sequence[Mapping[str, Any]] = (),
    users: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> str:
    """A message with its thread replies indented under it."""
    out = [render_message(parent, users, now)]
    for reply in replies:
        body = render_message(reply, users, now).splitlines() or [""]
        out.append("\n".join(f"    │ {line}" for line in body))
    return "\n".join(out)
