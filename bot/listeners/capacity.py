"""`/queue-status report [days]`: the capacity report, for the asker or (`post report`) for the
channel, with the chart of the busiest runner types uploaded privately for its image block;
`/queue-status org NAME report`: one organization's.

Composing a week's report replays every job many times over (a few seconds for a busy fleet):
the command is acked first and the answer goes through its response_url, which Slack keeps for
30 minutes."""

from __future__ import annotations

import logging

from bot.capacity.report import CapacityReporter, ComposedReport
from bot.domain.capacity import CAPACITY_CHART_TITLE
from bot.listeners.answer import tell
from bot.render.renderer import Renderer
from bot.slack.contract import QUEUE_STATUS_COMMAND
from bot.slack.errors import SlackError, SlackRejected
from bot.slack.gateway import SlackGateway
from bot.slack.message import ChartFile
from bot.status.request import StatusRequest

log = logging.getLogger(__name__)

REPORT_FAILED = (
    f":warning: `{QUEUE_STATUS_COMMAND} report` failed because of an error on queuebot's side"
    " (logged)."
)


async def upload_chart(slack: SlackGateway, composed: ComposedReport) -> ChartFile | None:
    """The report's chart uploaded privately for an image block; None without one, or when
    Slack would not take it (the report goes without)."""
    if composed.chart is None:
        return None
    try:
        return await slack.private_image(
            composed.chart,
            filename="capacity.png",
            title=CAPACITY_CHART_TITLE,
            alt_text=composed.report.chart_alt(),
        )
    except SlackError as exc:
        log.warning("capacity chart not uploaded: %s", exc)
        return None


class ReportAnswers:
    def __init__(self, reporter: CapacityReporter, slack: SlackGateway, renderer: Renderer) -> None:
        self._reporter = reporter
        self._slack = slack
        self._renderer = renderer

    async def answer(
        self,
        days: int,
        *,
        public: bool,
        user: str,
        channel: str | None,
        response_url: str | None,
        org: str | None = None,
    ) -> bool:
        """Compose, render and send the report (of organization `org`, or of those the
        settings name); whether it reached Slack (when it failed on our side, the asker is
        told so)."""
        if not response_url:
            return False
        try:
            composed = await self._reporter.compose(days or None, orgs=(org,) if org else None)
        except Exception:
            log.exception("capacity report failed (user=%s)", user)
            await tell(
                self._slack,
                self._renderer,
                REPORT_FAILED,
                user=user,
                response_url=response_url,
                channel=channel,
            )
            return False
        chart = await upload_chart(self._slack, composed)
        words = StatusRequest(report_days=days, org=org).words
        for shown in (chart, None) if chart else (None,):
            message = self._renderer.capacity_report(
                composed.report,
                chart=shown,
                share_value=None if public else words,
                shared_by=user if public else None,
            )
            try:
                await self._slack.respond(response_url, message, public=public)
                return True
            except SlackRejected as exc:
                # The chart is the one part Slack may refuse for reasons of its own (a file
                # not processed yet): the words go without it.
                log.warning("Slack refused the capacity report: %s", exc)
            except SlackError as exc:
                log.warning("the capacity report did not reach %s: %s", user, exc)
                return False
        return False
