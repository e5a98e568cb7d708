"""What `/queue-status` is asked: its grammar (`""`, `post`, a runner type or prefix, `report
[days]`, `help`), and the answer to someone asking too often. Pure."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bot.render.mrkdwn import clip, escape_mrkdwn, oneline
from bot.slack.contract import QUEUE_STATUS_COMMAND
from bot.status.rate_limit import PER_WINDOW
from bot.status.reader import RUNNER_TYPE_PATTERN

HELP_WORDS = {"help", "-h", "--help", "?", "usage"}
POST_WORD = "post"
REPORT_WORD = "report"
#: The longest window `report N` may ask for (what the job events keep by default, and more).
MAX_REPORT_DAYS = 30
_DAYS = re.compile(r"[0-9]{1,3}")


@dataclass(frozen=True)
class StatusRequest:
    #: A runner type or prefix to show in detail; None for the summary.
    query: str | None = None
    #: For everyone in the channel rather than only for the asker.
    public: bool = False
    #: The capacity report of the last this many days (0: the configured window), not the
    #: queue now.
    report_days: int | None = None


@dataclass(frozen=True)
class NotUnderstood:
    """Help was asked for (`problem` None) or the text made no sense (`problem` says why)."""

    problem: str | None = None


def parse_request(text: str) -> StatusRequest | NotUnderstood:
    """`""`, `post`, `<prefix>`, `post <prefix>`, `report [days]`, `post report [days]`; `help`
    or anything else asks for the usage."""
    words = text.split()
    if not words:
        return StatusRequest()
    if len(words) == 1 and words[0].casefold() in HELP_WORDS:
        return NotUnderstood()
    public = words[0].casefold() == POST_WORD
    rest = words[1:] if public else words
    if not rest:
        return StatusRequest(public=public)
    if rest[0].casefold() == REPORT_WORD:
        days = rest[1] if len(rest) == 2 else "0"
        # ASCII digits only, and few: "²" is a digit to str.isdigit() but not to int(), and
        # int() refuses more than 4,300 of them.
        if _DAYS.fullmatch(days) and int(days) <= MAX_REPORT_DAYS and (len(rest) == 1 or int(days)):
            return StatusRequest(public=public, report_days=int(days))
        return NotUnderstood(
            f"`{QUEUE_STATUS_COMMAND} {REPORT_WORD}` takes a number of days from 1 to"
            f" {MAX_REPORT_DAYS} (default: the configured window)."
        )
    if len(rest) == 1 and RUNNER_TYPE_PATTERN.fullmatch(rest[0]):
        return StatusRequest(query=rest[0], public=public)
    return NotUnderstood(f"`{QUEUE_STATUS_COMMAND} {quoted(text)}` is not something I understand.")


def quoted(text: str) -> str:
    """What someone typed, shown inside inline code: one line, escaped, shortened."""
    return clip(escape_mrkdwn(oneline(text)), 100).replace("`", "'")


def too_often(wait: float) -> str:
    return (
        f":hourglass: You have asked for `{QUEUE_STATUS_COMMAND}` {PER_WINDOW} times in the"
        f" last minute; ask again in {max(1, math.ceil(wait))} s."
    )
