"""The answer to /queue-status, and how to use it."""

from __future__ import annotations

import re

from bot.domain.queue_status import QueueStatus
from bot.render import status_lines
from bot.render.layout import chunks_text
from bot.render.mrkdwn import clip, escape_mrkdwn, oneline
from bot.render.templates import Templates
from bot.slack import contract
from bot.slack.contract import ActionId
from bot.slack.message import ChartFile, Message

#: A Slack user id as it may appear in a mention.
_SLACK_USER = re.compile(r"[UW][A-Z0-9]{2,20}")


def queue_status_message(
    templates: Templates,
    status: QueueStatus,
    *,
    shared_by: str | None = None,
    chart: ChartFile | None = None,
    note: str | None = None,
) -> Message:
    """The answer to /queue-status: ephemeral with a Share in channel button, or (with
    `shared_by`, the Slack id of whoever shared it) for everyone in the channel. `note`
    (plain text) is added to the context line."""
    if status.query is None:
        title = ":bar_chart: CI queue now"
        lead = status_lines.fleet_line(status.fleet)
        sections: list[str | None] = [lead]
        sections += chunks_text(status_lines.waiting_lines(status.fleet))
        sections.append(None)
        sections += chunks_text(status_lines.incident_lines(status))
        sections += chunks_text(status_lines.silence_lines(status))
    else:
        title = f":bar_chart: CI queue: {oneline(status.query)}"
        lead = status_lines.detail_intro(status)
        sections = [lead, *(status_lines.detail_text(d) for d in status.details)]
        if status.silenced or status.firing_total:
            sections.append(
                f"{status.firing_total} open incidents, {len(status.silenced)} silenced:"
                f" `{contract.QUEUE_STATUS_COMMAND}` lists them."
            )
    share = None
    if shared_by is None and (status.query is None or status.details):
        share = {"action_id": ActionId.SHARE_STATUS.value, "value": status.query or ""}
    person = shared_by if shared_by and _SLACK_USER.fullmatch(shared_by) else None
    context = {
        "title": title,
        "fallback": f"Queue status: {oneline(lead.replace('*', ''))}"[:300],
        "sections": sections,
        "image": chart,
        "context_parts": [status_lines.read_line(status, person)]
        + ([clip(escape_mrkdwn(oneline(note)), 300)] if note else []),
        "share": share,
    }
    return templates.message("queue_status.json.j2", context)
