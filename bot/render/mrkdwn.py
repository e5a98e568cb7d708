"""Pieces of message text made safe: escaping, shortening, links and dates in mrkdwn.

Pure functions shared by the renderers and their templates. Alert-supplied text goes through
`escape_mrkdwn` before it reaches mrkdwn (https://docs.slack.dev/messaging/formatting-message-text/#escaping):
only `&`, `<` and `>` are markup, and escaping them makes `<!channel>` and `<url|label>` inert.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import urlsplit

from bot.domain.silences import Person
from bot.slack import limits

ELLIPSIS = "…"

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u2028\u2029]")
_PARTIAL_ENTITY = re.compile(r"&[a-z]{0,3}$")


def escape_mrkdwn(text: str) -> str:
    """Make alert text inert in mrkdwn: no mentions, no links, no control characters."""
    text = _CONTROL.sub(" ", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int) -> str:
    """`text` shortened to `limit` characters with a visible "…", never splitting an entity."""
    if len(text) <= limit:
        return text
    cut = _PARTIAL_ENTITY.sub("", text[: limit - 1])
    return cut.rstrip() + ELLIPSIS


def oneline(text: str) -> str:
    return " ".join(_CONTROL.sub(" ", text).split())


def safe_url(url: str) -> str | None:
    """`url` if Slack will take it as a button or link target (http or https), else None."""
    url = url.strip()
    if not url or len(url) > limits.MAX_BUTTON_URL or any(c.isspace() for c in url):
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
    return "@" + escape_mrkdwn(clip(oneline(person.name), 80))
