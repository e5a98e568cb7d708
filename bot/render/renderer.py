"""`Renderer`: the one object the rest of queuebot renders with, one method per message kind.

Each kind is made by its own module (incident, thread, digest, diagnostics, queue_status,
silence_modal) through the shared `Templates`; this class only holds them together so that a
renderer can be built once and passed in. Rendering is pure: no I/O, the same objects give the
same message.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import jinja2

from bot.domain.capacity import CapacityReport
from bot.domain.diagnosis import Report
from bot.domain.heads_up import HeadsUpView
from bot.domain.incidents import Incident, ThreadEvent
from bot.domain.queue_status import QueueStatus
from bot.domain.silences import MatcherSet
from bot.render import status_lines
from bot.render.capacity import capacity_message
from bot.render.diagnostics import diagnostics_message
from bot.render.digest import digest_pages
from bot.render.heads_up import heads_up_message
from bot.render.incident import incident_message
from bot.render.queue_status import queue_status_message
from bot.render.silence_modal import silence_modal_view
from bot.render.templates import RenderError, Templates
from bot.render.thread import thread_event_message
from bot.render.values import DEFAULT_NAMING, ValueNaming
from bot.slack.message import ChartFile, Message

__all__ = ["RenderError", "Renderer"]


class Renderer:
    """Turns domain objects into `Message`s (and the Silence… modal) using templates/; an
    alert's values are named by `naming` (queuebot's own names unless the YAML file's
    `alert_values` say otherwise)."""

    def __init__(
        self,
        templates: jinja2.BaseLoader | None = None,
        *,
        naming: ValueNaming = DEFAULT_NAMING,
    ) -> None:
        self._templates = Templates(templates)
        self._naming = naming

    def incident(self, incident: Incident) -> Message:
        """The incident's parent message in its current state."""
        return incident_message(self._templates, incident, self._naming)

    def thread_event(self, event: ThreadEvent) -> Message:
        """A reply for the incident's thread; it says what changed and mentions nobody."""
        return thread_event_message(self._templates, event, self._naming)

    def silence_modal(
        self, incident: Incident, sets: tuple[MatcherSet, ...], private_metadata: str
    ) -> dict[str, Any]:
        """The Silence… modal for `incident`, previewing exactly the matchers in `sets`."""
        return silence_modal_view(self._templates, incident, sets, private_metadata)

    def diagnostics(self, report: Report) -> Message:
        """The diagnostics report for the incident's thread."""
        return diagnostics_message(self._templates, report)

    def digest(self, opened_at: datetime, members: list[Incident]) -> list[Message]:
        """The storm digest's pages: the message, then the thread replies continuing it."""
        return digest_pages(self._templates, opened_at, members, self._naming)

    def queue_status(
        self,
        status: QueueStatus,
        *,
        shared_by: str | None = None,
        chart: ChartFile | None = None,
        note: str | None = None,
        asked: str | None = None,
    ) -> Message:
        """The answer to /queue-status (see `bot.render.queue_status`); `asked`: the words
        Share in channel asks again (the runner type asked about by default)."""
        return queue_status_message(
            self._templates, status, shared_by=shared_by, chart=chart, note=note, asked=asked
        )

    def queue_status_usage(
        self, problem: str | None = None, *, orgs: tuple[str, ...] = ()
    ) -> Message:
        """How to use /queue-status, after what was not understood (if anything); with the
        organizations `org NAME` may name, when there are some."""
        text = status_lines.USAGE + status_lines.org_usage(orgs)
        if problem:
            text = f":grey_question: {problem}\n\n{text}"
        return self.notice(text)

    def heads_up(self, view: HeadsUpView) -> Message:
        """A heads-up before the queue alert, as the trend stands now."""
        return heads_up_message(self._templates, view)

    def capacity_report(
        self,
        report: CapacityReport,
        *,
        chart: ChartFile | None = None,
        share_value: str | None = None,
        shared_by: str | None = None,
    ) -> Message:
        """The capacity report (see `bot.render.capacity`)."""
        return capacity_message(
            self._templates, report, chart=chart, share_value=share_value, shared_by=shared_by
        )

    def notice(self, text: str) -> Message:
        """A one-paragraph message (text is ours, already mrkdwn)."""
        return self._templates.message("notice.json.j2", {"text": text})
