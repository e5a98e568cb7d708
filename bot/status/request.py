"""What `/queue-status` is asked: its grammar (`""`, `post`, a runner type or prefix, `report
[days]`, `help`; each after `org NAME` too, for one organization's jobs and runners), and the
answer to someone asking too often. Pure."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from bot.render.mrkdwn import clip, escape_mrkdwn, oneline
from bot.slack.contract import QUEUE_STATUS_COMMAND
from bot.status.rate_limit import PER_WINDOW
from bot.status.reader import RUNNER_TYPE_PATTERN

HELP_WORDS = {"help", "-h", "--help", "?", "usage"}
POST_WORD = "post"
REPORT_WORD = "report"
ORG_WORD = "org"
#: An organization's name on GitHub: letters, digits and hyphens.
ORG_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,98}[A-Za-z0-9])?")
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
    #: Only this organization's jobs and runners; None: the whole fleet.
    org: str | None = None

    @property
    def words(self) -> str:
        """The request as it would be typed, without `post` (what Share in channel repeats)."""
        parts = [ORG_WORD, self.org] if self.org else []
        if self.report_days is not None:
            parts += [REPORT_WORD, str(self.report_days)] if self.report_days else [REPORT_WORD]
        elif self.query:
            parts.append(self.query)
        return " ".join(parts)


@dataclass(frozen=True)
class NotUnderstood:
    """Help was asked for (`problem` None) or the text made no sense (`problem` says why)."""

    problem: str | None = None


def parse_request(text: str) -> StatusRequest | NotUnderstood:
    """`""`, `post`, `<prefix>`, `post <prefix>`, `report [days]`, `post report [days]`, and
    each with `org NAME` after `post` (`org pytorch-labs linux.g5`); `help` or anything else
    asks for the usage."""
    words = text.split()
    if not words:
        return StatusRequest()
    if len(words) == 1 and words[0].casefold() in HELP_WORDS:
        return NotUnderstood()
    public = words[0].casefold() == POST_WORD
    rest = words[1:] if public else words
    org = None
    if rest and rest[0].casefold() == ORG_WORD:
        if len(rest) < 2 or not ORG_NAME.fullmatch(rest[1]):
            return NotUnderstood(
                f"`{QUEUE_STATUS_COMMAND} {ORG_WORD}` takes an organization's name, like"
                f" `{QUEUE_STATUS_COMMAND} {ORG_WORD} pytorch`."
            )
        org, rest = rest[1], rest[2:]
    understood = _rest(rest, public)
    if isinstance(understood, StatusRequest) and org is not None:
        return replace(understood, org=org)
    if isinstance(understood, NotUnderstood) and understood.problem is None:
        return NotUnderstood(
            f"`{QUEUE_STATUS_COMMAND} {quoted(text)}` is not something I understand."
        )
    return understood


def _rest(rest: list[str], public: bool) -> StatusRequest | NotUnderstood:
    """What follows `post` and `org NAME`."""
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
    return NotUnderstood()


def known_org(
    request: StatusRequest | NotUnderstood, orgs: tuple[str, ...]
) -> StatusRequest | NotUnderstood:
    """`request` with its organization as `orgs` (those queuebot watches) spell it; why not,
    for another."""
    if not isinstance(request, StatusRequest) or request.org is None:
        return request
    for org in orgs:
        if org.casefold() == request.org.casefold():
            return replace(request, org=org)
    asked = f"`{QUEUE_STATUS_COMMAND} {ORG_WORD} {quoted(request.org)}`"
    if not orgs:
        return NotUnderstood(
            f"{asked}: queuebot watches no organizations by name here (GITHUB_ORG is not set),"
            " so it shows the whole fleet only."
        )
    known = ", ".join(f"`{escape_mrkdwn(org)}`" for org in orgs)
    return NotUnderstood(f"{asked}: queuebot watches no such organization; it watches {known}.")


def org_note(org: str | None, note: str | None) -> str | None:
    """An answer's note, saying whose jobs and runners it counts (plain text)."""
    if org is None:
        return note
    only = f"Organization {org} only: its repositories' jobs and its runners."
    return f"{only} {note}" if note else only


def quoted(text: str) -> str:
    """What someone typed, shown inside inline code: one line, escaped, shortened."""
    return clip(escape_mrkdwn(oneline(text)), 100).replace("`", "'")


def too_often(wait: float) -> str:
    return (
        f":hourglass: You have asked for `{QUEUE_STATUS_COMMAND}` {PER_WINDOW} times in the"
        f" last minute; ask again in {max(1, math.ceil(wait))} s."
    )
