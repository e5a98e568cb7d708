"""Pieces of message text made safe: escaping, shortening, links and dates in mrkdwn.

Pure functions shared by the renderers and their templates. Alert-supplied text goes through
`escape_mrkdwn` before it reaches mrkdwn (https://docs.slack.dev/messaging/formatting-message-text/#escaping):
only `&`, `<` and `>` are markup, and escaping them makes `<!channel>` and `<url|label>` inert.

Lengths are Slack's (`bot.slack.limits.slack_len`: an emoji outside the BMP counts two), and
text is shortened after it is escaped, since escaping makes it longer (`&` becomes `&amp;`):
`inert` does both in that order. Shortening never leaves half an entity or half of one of our
own `<…>` tokens (a link, a date) behind.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import urlsplit

from bot.domain.silences import Person
from bot.slack import limits
from bot.slack.limits import slack_len

ELLIPSIS = "…"

#: Control characters, the line and paragraph separators, and the bidirectional controls (an
#: override such as U+202E makes a title read backwards, hiding what it says).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")
#: An unclosed token at the end of a cut (`<!date^…`, `<https:…`): in escaped mrkdwn every `<`
#: opens one of ours.
_PARTIAL_TOKEN = re.compile(r"<[^>]*$")
#: Left at the end of a cut, these would join the "…" to what came before (an emoji sequence).
_JOINERS = "\u200d\ufe0e\ufe0f"


def escape_mrkdwn(text: str) -> str:
    """Make alert text inert in mrkdwn: no mentions, no links, no control characters."""
    text = _CONTROL.sub(" ", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int) -> str:
    """mrkdwn `text` shortened to `limit` characters with a visible "…", never splitting an
    entity (`&amp;`) or a `<…>` token (a link, a date, a mention of our own)."""
    if slack_len(text) <= limit:
        return text
    cut = _PARTIAL_TOKEN.sub("", _PARTIAL_ENTITY.sub("", _prefix(text, limit - 1)))
    return cut.rstrip().rstrip(_JOINERS) + ELLIPSIS


def clip_plain(text: str, limit: int) -> str:
    """plain_text shortened to `limit` characters with a visible "…" (no markup to keep whole)."""
    if slack_len(text) <= limit:
        return text
    return _prefix(text, limit - 1).rstrip().rstrip(_JOINERS) + ELLIPSIS


def _prefix(text: str, room: int) -> str:
    """The longest start of `text` of at most `room` characters as Slack counts them."""
    cut = text[: max(room, 0)]
    while (over := slack_len(cut) - room) > 0:
        # Each character over the room counts at most two, so half of `over` always goes.
        cut = cut[: len(cut) - max(1, over // 2)]
    return cut


def inert(text: str, limit: int) -> str:
    """Alert text as mrkdwn: on one line, escaped, then shortened to `limit`."""
    return clip(escape_mrkdwn(oneline(text)), limit)


def oneline(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def safe_url(url: str) -> str | None:
    """`url` if Slack will take it as a button or link target (http or https), else None."""
    url = url.strip()
    if not url or slack_len(url) > limits.MAX_BUTTON_URL or any(c.isspace() for c in url):
        return None
    if _CONTROL.search(url) or any(c in url for c in "<>|"):
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return None
    return url if parts.scheme in ("http", "https") and parts.hostname else None


def link(url: str, label: str) -> str:
    """An mrkdwn link, or the escaped label alone when the URL is not safe."""
    target = safe_url(url)
    if target is None:
        return escape_mrkdwn(label)
    return f"<{target.replace('&', '&amp;')}|{escape_mrkdwn(oneline(label))}>"


def date_token(when: datetime) -> str:
    """Slack's date token: each reader sees their own time zone; the fallback is UTC."""
    when = when.astimezone(UTC)
    fallback = when.strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(when.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"


def who(person: Person) -> str:
    """A person by name, as plain text: "@alice" (never a mention, so nobody is pinged)."""
    return "@" + inert(person.name, 80)
