"""The answer to /queue-status, and how to use it.

Should the answer not fit one message (many runner types waiting, many silences, long names),
it is rendered again listing at most a few of each, then counting them only, then as its
first line alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from bot.domain.queue_status import QueueStatus
from bot.render import status_lines
from bot.render.layout import chunks_text
from bot.render.mrkdwn import clip, inert, oneline
from bot.render.templates import Templates
from bot.slack import contract, limits
from bot.slack.contract import ActionId
from bot.slack.limits import slack_len
from bot.slack.message import ChartFile, Message

#: A Slack user id as it may appear in a mention.
SLACK_USER = re.compile(r"[UW][A-Z0-9]{2,20}")
#: Entries of each list (runner types waiting, incidents, silences) when all do not fit.
FEW_LISTED = 5


def queue_status_message(
    templates: Templates,
    status: QueueStatus,
    *,
    shared_by: str | None = None,
    chart: ChartFile | None = None,
    note: str | None = None,
    asked: str | None = None,
) -> Message:
    """The answer to /queue-status: ephemeral with a Share in channel button, or (with
    `shared_by`, the Slack id of whoever shared it) for everyone in the channel. `note`
    (plain text) is added to the context line; `asked`, the words the button asks again (the
    runner type asked about by default)."""
    if status.query is None:
        title = ":bar_chart: CI queue now"
        lead = status_lines.fleet_line(status.fleet)
    else:
        title = f":bar_chart: CI queue: {oneline(status.query)}"
        lead = status_lines.detail_intro(status)
    share = None
    query = (status.query or "") if asked is None else asked
    shareable = shared_by is None and (status.query is None or bool(status.details))
    # A query too long for a button's value gets no Share button rather than a cut query.
    if shareable and slack_len(query) <= limits.MAX_BUTTON_VALUE:
        share = {"action_id": ActionId.SHARE_STATUS.value, "value": query}
    person = shared_by if shared_by and SLACK_USER.fullmatch(shared_by) else None
    shown_note = inert(note or "", 300)
    context = {
        "title": title,
        "fallback": clip(f"Queue status: {oneline(lead.replace('*', ''))}", 300),
        "image": chart,
        "context_parts": [status_lines.read_line(status, person)]
        + ([shown_note] if shown_note else []),
        "share": share,
    }
    forms = ({**context, "sections": sections} for sections in _sections(status, lead))
    return templates.fitted("queue_status.json.j2", forms)


def _sections(status: QueueStatus, lead: str) -> Iterator[list[str | None]]:
    """The sections of each form of the answer, fullest first."""
    if status.query is not None:
        details = [status_lines.detail_text(d) for d in status.details]
        yield [lead, *details, *_corrected(status), *_counts(status)]
        yield [lead, *details[:2], *_corrected(status), *_counts(status)]
    else:
        for most in (None, FEW_LISTED):
            waiting = status_lines.waiting_lines(
                status.fleet, most or status_lines.MAX_WAITING_LISTED
            )
            sections: list[str | None] = [lead, *chunks_text(waiting), None]
            sections += chunks_text(status_lines.incident_lines(status, most))
            sections += chunks_text(status_lines.silence_lines(status, most))
            yield sections
        yield [lead, None, *_counts(status)]
    yield [lead]


def _corrected(status: QueueStatus) -> list[str | None]:
    if not status.corrected:
        return []
    jobs = "1 job" if status.corrected == 1 else f"{status.corrected:,} jobs"
    return [
        f":wrench: {jobs} corrected from GitHub in the last hour: deliveries GitHub had lost"
        " (a job taken or ended, or one never told of) read from its API."
    ]


def _counts(status: QueueStatus) -> list[str | None]:
    if not (status.silenced or status.firing_total):
        return []
    return [
        f"{status.firing_total} open incident{'' if status.firing_total == 1 else 's'},"
        f" {len(status.silenced)} silenced:"
        f" `{contract.QUEUE_STATUS_COMMAND}` lists them."
    ]
