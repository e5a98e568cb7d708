"""The heads-up before the alert: one message per runner type, edited as the trend changes,
to back to normal when it reverses, or to say the threshold was crossed.

Runner type and workflow names come from job labels and workflow files, which anyone opening a
pull request may write: escaped like alert text (the header is plain text, never parsed), so
none can mention anyone or plant a link."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.domain.heads_up import HeadsUpView, Phase
from bot.render.mrkdwn import date_token, inert, safe_url
from bot.render.templates import Templates
from bot.slack.contract import QUEUE_STATUS_COMMAND, ActionId
from bot.slack.limits import MAX_BUTTON_VALUE, slack_len
from bot.slack.message import Message


def _minutes(seconds: float) -> str:
    return f"{max(0.0, seconds) / 60.0:.0f} min"


def _when(stamp: float) -> str:
    return date_token(datetime.fromtimestamp(stamp, UTC))


def _demand(view: HeadsUpView) -> str:
    if view.usual_arrivals:
        ratio = view.arrivals_per_minute / view.usual_arrivals
        text = f"Arrivals *{ratio:.1f}×* usual ({view.arrivals_per_minute:.1f} a minute)"
    else:
        text = f"Arrivals {view.arrivals_per_minute:.1f} a minute"
    if view.workflows:
        names = " and ".join(f"*{inert(w, 80)}*" for w in view.workflows)
        text += f", most from {names}"
    return text + f"; runners take {view.starts_per_minute:.1f} a minute."


#: Runner types named in a heads-up's line for those beyond the channel's cap.
MAX_OTHERS_NAMED = 10


def heads_up_message(templates: Templates, view: HeadsUpView) -> Message:
    name = inert(view.runner_type, 80)
    limit = _minutes(view.threshold_wait)
    rule = f"more than {view.threshold_queued} jobs queued, the longest {limit} or more"
    queued, longest = view.queued, _minutes(view.longest_wait)
    since = _when(view.started_at)
    if view.phase is Phase.WARNING:
        growth = view.growth_per_minute
        trend = f"growing *{growth:.1f} jobs/min*" if growth > 0 else "not draining fast enough"
        lines = [
            f"*{name}*: queue {trend}, longest wait *{longest}* ({queued} queued):"
            f" *{limit}* in about *{view.crossing_in or 0:.0f} min* at this rate.",
            _demand(view),
        ]
        if view.others:
            shown = ", ".join(f"*{inert(o, 60)}*" for o in view.others[:MAX_OTHERS_NAMED])
            more = len(view.others) - MAX_OTHERS_NAMED
            lines.append(
                f"And {len(view.others)} more runner types heading for the alert: {shown}"
                + (f" and {more} more" if more > 0 else "")
                + f" (`{QUEUE_STATUS_COMMAND}` shows them)."
            )
        title = f":hourglass_flowing_sand: Heads-up: {view.runner_type} heading for the alert"
        fallback = f"Heads-up: {name} queue heading for the alert ({longest} wait)"
    elif view.phase is Phase.FIRED:
        link = safe_url(view.alert_link or "")
        where = f" <{link}|The alert's message> takes it from here." if link else ""
        lines = [
            f"*{name}* crossed the alert's threshold at {_when(view.at)}: longest wait"
            f" *{longest}*, {queued} queued. Heads-up since {since}.{where}"
        ]
        title = f":rotating_light: {view.runner_type} crossed the queue alert's threshold"
        fallback = f"{name} crossed the queue alert's threshold"
    else:
        lines = [
            f"*{name}*: the queue stopped heading for the threshold (longest wait {longest},"
            f" {queued} queued). Heads-up from {since} to {_when(view.at)}."
        ]
        title = f":white_check_mark: Back to normal: {view.runner_type}"
        fallback = f"Back to normal: {name}"
    runbook = safe_url(view.runbook_url or "")
    return templates.message(
        "heads_up.json.j2",
        {
            "title": title,
            "fallback": fallback,
            "lines": lines,
            "note": (
                f"Projected from GitHub's job events at {_when(view.at)} for the alert rule"
                f" ({rule}); edited as the trend changes. `/queue-status` shows every runner type."
            ),
            "runbook": runbook if view.phase is Phase.WARNING else None,
            # The runner type's detail and chart, as `/queue-status <type>` shows it.
            "show_queue": (
                {"action_id": ActionId.SHOW_QUEUE.value, "value": view.runner_type}
                if view.phase is Phase.WARNING and slack_len(view.runner_type) <= MAX_BUTTON_VALUE
                else None
            ),
        },
    )
