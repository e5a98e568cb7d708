"""The storm digest: one message listing the incidents of an alert storm, continued in its
thread.

Pages are cut by what their lines cost in the message's JSON (a quote or a newline costs two),
so a page always fits Slack's total; should one still not, its incidents are listed by title
and state alone.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bot.domain.incidents import Incident, IncidentStatus
from bot.render.alert_lines import common_shown
from bot.render.layout import chunks
from bot.render.mrkdwn import clip, date_token, inert
from bot.render.templates import Templates
from bot.render.values import (
    DEFAULT_NAMING,
    ValueNaming,
    format_duration,
    headline,
    value_summary,
)
from bot.slack.limits import json_len
from bot.slack.message import Message

#: A storm digest lists this many incidents in its message, and this many per thread reply
#: (each line is at most ~500 characters, and a page's lines at most DIGEST_PAGE_CHARS of
#: JSON, so a page stays within Slack's ~12k total).
DIGEST_FIRST_PAGE = 15
DIGEST_PAGE = 20
DIGEST_PAGE_CHARS = 7000


def digest_pages(
    templates: Templates,
    opened_at: datetime,
    members: list[Incident],
    naming: ValueNaming = DEFAULT_NAMING,
) -> list[Message]:
    """The storm digest: the message (a summary and the first incidents), then thread
    replies continuing the list. Incidents keep their place (joining order), so a change
    edits one page."""
    firing = sum(i.status is IncidentStatus.FIRING for i in members)
    resolved = len(members) - firing
    lines = [_digest_line(i, naming) for i in members]
    first, *rest = _pages(lines, DIGEST_FIRST_PAGE) or [[]]
    head = {
        "title": f":rotating_light: Alert storm: {len(members)} incidents",
        "fallback": f"Alert storm: {len(members)} incidents ({firing} firing, {resolved} resolved)",
        "intro": (
            f"Since {date_token(opened_at)} alerts opened faster than one message"
            " each could be read, so queuebot lists them here and keeps the list up"
            f" to date. *{firing} firing* · {resolved} resolved."
            + (" The list continues in the thread." if rest else "")
        ),
    }
    pages = [_page(templates, head, members[: len(first)], first)]
    low = len(first) + 1
    for page in rest:
        span = f"incidents {low}–{low + len(page) - 1}"
        head = {
            "title": f"Alert storm, {span}",
            "fallback": f"Alert storm, {span}",
            "intro": f"{len(page)} incidents of the storm, in the order they opened.",
        }
        pages.append(_page(templates, head, members[low - 1 : low - 1 + len(page)], page))
        low += len(page)
    return pages


def _page(
    templates: Templates, head: dict[str, Any], members: list[Incident], lines: list[str]
) -> Message:
    short = [_short_line(i) for i in members]
    forms = ({**head, "chunks": chunks(shown)} for shown in (lines, short))
    return templates.fitted("digest.json.j2", forms)


def _pages(lines: list[str], first_size: int) -> list[list[str]]:
    """Lines in pages: the first of at most `first_size` lines, then DIGEST_PAGE each, every
    page's lines within DIGEST_PAGE_CHARS of JSON so it stays under Slack's total."""
    pages: list[list[str]] = []
    current: list[str] = []
    size = 0
    for line in lines:
        limit = first_size if not pages else DIGEST_PAGE
        cost = json_len(line)
        if current and (len(current) >= limit or size + cost > DIGEST_PAGE_CHARS):
            pages.append(current)
            current, size = [], 0
        current.append(line)
        size += cost
    if current:
        pages.append(current)
    return pages


def _short_line(incident: Incident) -> str:
    icon = ":large_green_circle:" if incident.status is IncidentStatus.RESOLVED else ":red_circle:"
    return f"{icon} *{inert(headline(incident.group), 120)}*"


def _digest_line(incident: Incident, naming: ValueNaming) -> str:
    group = incident.group
    labels = group.lead.shown_labels if len(group.alerts) == 1 else common_shown(group)
    parts = [f"*{inert(headline(group), 120)}*"]
    if labels:
        text = " ".join(f"{k}={v}" for k, v in labels.items())
        # A backquote in a label would end the code span early.
        parts.append("`" + inert(text.replace("`", "'"), 120) + "`")
    if incident.status is IncidentStatus.RESOLVED:
        span = format_duration(incident.duration or timedelta(0))
        parts.append(f"Resolved after {span}")
        return ":large_green_circle: " + " · ".join(parts)
    parts.append(f"firing since {date_token(group.started_at)}")
    values = value_summary(group.lead, naming) if len(group.alerts) == 1 else ""
    if values:
        parts.append(clip(values, 160))
    return ":red_circle: " + " · ".join(parts)
