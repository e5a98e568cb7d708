"""Fitting lines into Slack's section limits: whole lines, then a count of the rest."""

from __future__ import annotations

from bot.slack import limits
from bot.slack.limits import slack_len


def fit_lines(lines: list[str], limit: int) -> list[str]:
    """As many whole lines as fit in `limit` characters, then a count of the rest (a line is
    never cut, so neither is a link in it)."""
    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        rest = len(lines) - index - 1
        room = limit - used - (len(f"\n…and {rest} more lines") if rest else 0)
        size = slack_len(line)
        if size + 1 > room:
            kept.append(f"…and {len(lines) - index} more lines")
            return kept
        kept.append(line)
        used += size + 1
    return kept


def chunks_text(lines: list[str]) -> list[str | None]:
    return ["\n".join(chunk) for chunk in chunks(lines)]


def chunks(lines: list[str]) -> list[list[str]]:
    """Lines in sections of at most Slack's section length (a longer line is clipped by the
    section it is in)."""
    chunks: list[list[str]] = [[]]
    used = 0
    for line in lines:
        size = slack_len(line) + 1
        if used + size > limits.MAX_SECTION_TEXT - 10:
            chunks.append([])
            used = 0
        chunks[-1].append(line)
        used += size
    return [c for c in chunks if c]
