"""Fitting lines into Slack's section limits: whole lines, then a count of the rest."""

from __future__ import annotations

from bot.slack import limits


def fit_lines(lines: list[str], limit: int) -> list[str]:
    """As many whole lines as fit in `limit` characters, then a count of the rest."""
    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        rest = len(lines) - index - 1
        room = limit - used - (len(f"\n…and {rest} more lines") if rest else 0)
        if len(line) + 1 > room:
            kept.append(f"…and {len(lines) - index} more lines")
            return kept
        kept.append(line)
        used += len(line) + 1
    return kept


def chunks_text(lines: list[str]) -> list[str | None]:
    return ["\n".join(chunk) for chunk in chunks(lines)]


def chunks(lines: list[str]) -> list[list[str]]:
    """Lines in sections of at most Slack's section length."""
    chunks: list[list[str]] = [[]]
    for line in lines:
        if sum(len(x) + 1 for x in chunks[-1]) + len(line) > limits.MAX_SECTION_TEXT - 10:
            chunks.append([])
        chunks[-1].append(line)
    return [c for c in chunks if c]
