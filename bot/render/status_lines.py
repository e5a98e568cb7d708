"""`/queue-status` in words: the lines of the summary and of the detail, as escaped mrkdwn.

Pure functions. Runner types come from metric labels and titles from alerts, so both are
escaped before they reach mrkdwn; people are named as plain text, never mentioned.
"""

from __future__ import annotations

from bot.domain.diagnosis import RunnerTypeState
from bot.domain.incidents import Incident, is_channel_id
from bot.domain.queue_status import Compared, FleetView, OpenIncident, QueueStatus, TypeDetail
from bot.render.diagnosis_text import amount, since_text
from bot.render.mrkdwn import clip_plain, date_token, escape_mrkdwn, inert, link, oneline, who
from bot.render.values import headline
from bot.slack.contract import QUEUE_STATUS_COMMAND

#: Runner types with jobs waiting listed in the summary; the rest are counted.
MAX_WAITING_LISTED = 15
#: Runner types named when a prefix matches none.
MAX_NAMES_SUGGESTED = 20

USAGE = (
    f"*{QUEUE_STATUS_COMMAND}* shows the CI runner fleet now, only to you:\n"
    f"• `{QUEUE_STATUS_COMMAND}`: runner types with jobs waiting, and this channel's open"
    " incidents and silences\n"
    f"• `{QUEUE_STATUS_COMMAND} linux.g5`: the runner types starting with `linux.g5` in detail,"
    " with a chart of the last 6 hours\n"
    f"• `{QUEUE_STATUS_COMMAND} post` (or `post linux.g5`): the same, for everyone in the channel\n"
    f"• `{QUEUE_STATUS_COMMAND} report` (or `report 14`): capacity per runner type over the last"
    " days, with the sizes that would have kept the p95 queue time under the target\n"
    f"• `{QUEUE_STATUS_COMMAND} help`: this text"
)


def org_usage(orgs: tuple[str, ...]) -> str:
    """The usage's line for `org NAME`, naming the organizations there are (GitHub's names:
    letters, digits and hyphens); none: nothing."""
    if not orgs:
        return ""
    first = escape_mrkdwn(orgs[0])
    return (
        f"\n• `{QUEUE_STATUS_COMMAND} org {first}` (or `org {first} linux.g5`, `org {first}"
        " report`): one organization's jobs and runners only, of "
        + ", ".join(f"`{escape_mrkdwn(org)}`" for org in orgs)
    )


NO_METRICS = (
    ":information_source: No source of fleet data is configured, so only incidents and"
    " silences are shown: send GitHub's workflow_job events to `/webhooks/github` (set"
    " `GITHUB_WEBHOOK_SECRET`), or set `PROMETHEUS_URL`, to see the queue per runner type."
)


def code(name: str, limit: int = 80) -> str:
    """A runner type as inline code, escaped and shortened."""
    return "`" + inert(name.replace("`", "'"), limit) + "`"


def fleet_line(fleet: FleetView) -> str:
    """The one-line fleet summary, or why there is none."""
    if not fleet.configured:
        return NO_METRICS
    if fleet.error is not None:
        return (
            ":warning: *The fleet's metrics could not be read:* "
            + inert(fleet.error, 400)
            + ". Incidents and silences below are current."
        )
    waiting = fleet.waiting
    total = len(fleet.types)
    if not waiting:
        return f":white_check_mark: *No jobs waiting* on any of {total} runner types."
    queued = round(sum(t.queued or 0.0 for t in waiting))
    jobs = "job" if queued == 1 else "jobs"
    parts = [
        f":hourglass_flowing_sand: *{queued} {jobs} waiting* on {len(waiting)} of {total}"
        " runner types"
    ]
    at_max = sum(t.at_max for t in waiting)
    if at_max:
        parts.append(f"{at_max} at the autoscaler maximum")
    return " · ".join(parts)


def waiting_line(state: RunnerTypeState) -> str:
    parts = [f"{amount(state.queued, '')} queued"]
    if state.max_wait_seconds is not None:
        since = since_text(state)
        wait = f"longest wait {amount(state.max_wait_seconds, 's')}"
        parts.append(f"{wait} ({since})" if since else wait)
    if state.busy is not None and state.registered is not None:
        parts.append(f"{amount(state.busy, '')}/{amount(state.registered, '')} busy")
    if state.at_max:
        parts.append(f":no_entry: at max ({amount(state.max, '')})")
    return f"{code(state.name)} " + " · ".join(parts)


def waiting_lines(fleet: FleetView, most: int = MAX_WAITING_LISTED) -> list[str]:
    waiting = fleet.waiting
    lines = [waiting_line(t) for t in waiting[:most]]
    if len(waiting) > most:
        more = len(waiting) - most
        lines.append(
            f"…and {more} more runner types with jobs waiting"
            # Escaped: Slack reads a bare <prefix> as a link.
            f" (`{QUEUE_STATUS_COMMAND} &lt;prefix&gt;` shows any of them)"
        )
    return lines


def _title(incident: Incident, url: str | None, limit: int = 150) -> str:
    text = clip_plain(oneline(headline(incident.group)), limit)
    return link(url, text) if url else escape_mrkdwn(text)


def incident_line(entry: OpenIncident, every_channel: bool = False) -> str:
    incident = entry.incident
    parts = [_title(incident, entry.link)]
    silence = incident.silence
    if silence is not None:
        parts.append(f":mute: silenced until {date_token(silence.ends_at)}")
    parts.append(f"firing since {date_token(incident.group.started_at)}")
    if incident.fired_count > 1:
        parts.append(f"fired {incident.fired_count} times")
    alerts = len(incident.group.alerts)
    if alerts > 1:
        parts.append(f"{alerts} alerts")
    if entry.link is None:
        parts.append("no thread link")
    return ":red_circle: " + " · ".join(parts) + (_where(incident) if every_channel else "")


def _where(incident: Incident) -> str:
    """The channel an incident went to, for the fleet-wide view (a link, never a ping)."""
    channel = incident.channel_id
    # A Slack channel id is the only thing put into a channel link.
    return f" · in <#{channel}>" if channel and is_channel_id(channel) else ""


def incident_lines(status: QueueStatus, most: int | None = None) -> list[str]:
    where = " in every channel" if status.every_channel else ""
    if not status.incidents:
        return [f"*Open incidents{where}:* none."]
    shown = status.incidents[:most]
    lines = [f"*Open incidents{where} ({status.firing_total}):*"]
    lines += [incident_line(entry, status.every_channel) for entry in shown]
    if status.firing_total > len(shown):
        lines.append(f"…and {status.firing_total - len(shown)} more")
    return lines


def silence_line(entry: OpenIncident, every_channel: bool = False) -> str:
    silence = entry.incident.silence
    assert silence is not None
    line = (
        f":mute: {_title(entry.incident, entry.link, 120)} · until {date_token(silence.ends_at)}"
        f" · by {who(silence.by)}"
    )
    if silence.comment.strip():
        line += f" · “{inert(silence.comment, 160)}”"
    return line + (_where(entry.incident) if every_channel else "")


def silence_lines(status: QueueStatus, most: int | None = None) -> list[str]:
    where = " in every channel" if status.every_channel else ""
    if not status.silenced:
        return [f"*Active silences{where}:* none set through queuebot."]
    shown = status.silenced[:most]
    lines = [f"*Active silences{where} ({len(status.silenced)}):*"]
    lines += [silence_line(entry, status.every_channel) for entry in shown]
    if len(status.silenced) > len(shown):
        lines.append(f"…and {len(status.silenced) - len(shown)} more")
    return lines


def _compared(value: Compared, unit: str, per: str = "") -> str:
    text = amount(value.now, unit) + per
    if value.now is not None and value.usual is not None:
        text += f" (usual {amount(value.usual, unit)}{per})"
    return text


def detail_text(detail: TypeDetail) -> str:
    state = detail.state
    head = f"*{code(state.name, 120)}*"
    if state.at_max:
        head += " :no_entry: at the autoscaler maximum"
    queue = f"*Queue:* {amount(state.queued, '')} waiting · longest wait"
    queue += " " + _compared(detail.wait, "s")
    runners = f"*Runners:* {amount(state.busy, '')}/{amount(state.registered, '')} busy"
    if detail.utilisation is not None:
        runners += f" ({detail.utilisation * 100:.0f}% utilised)"
    runners += f" · {amount(state.idle, '')} idle"
    # GitHub's runners list knows nothing of an autoscaler: say only what a source measured.
    if state.desired is not None:
        runners += f" · autoscaler wants {amount(state.desired, '')}"
    if state.max is not None:
        runners += " of" if state.desired is not None else " ·"
        runners += f" max {amount(state.max, '')}"
    arrivals = "*Arrivals:* " + _compared(detail.arrivals, "", " jobs/min")
    durations = (
        f"*Job duration:* p50 {_compared(detail.duration_p50, 's')}"
        f" · p90 {_compared(detail.duration_p90, 's')}"
    )
    return "\n".join((head, queue, runners, arrivals, durations))


def detail_intro(status: QueueStatus) -> str:
    asked = code(status.query or "", 100)
    if status.fleet.error is not None or not status.fleet.configured:
        return fleet_line(status.fleet)
    if not status.details:
        names = sorted(t.name for t in status.fleet.types)
        shown = ", ".join(code(n, 60) for n in names[:MAX_NAMES_SUGGESTED])
        if len(names) > MAX_NAMES_SUGGESTED:
            shown += f" and {len(names) - MAX_NAMES_SUGGESTED} more"
        return (
            f":grey_question: No runner type is named or starts with {asked}."
            f" Runner types with data: {shown}."
        )
    if status.matched > len(status.details):
        return (
            f"{status.matched} runner types match {asked}; the first {len(status.details)} are"
            " shown. A longer prefix narrows it down."
        )
    shown = "runner type matches" if status.matched == 1 else "runner types match"
    return f"{status.matched} {shown} {asked}."


def read_line(status: QueueStatus, shared_by: str | None) -> str:
    text = f"Read {date_token(status.at)}"
    if status.fleet.window and status.fleet.configured and status.fleet.error is None:
        text += f" · rates and waits over the last {inert(status.fleet.window, 40)}"
    if status.fleet.missing:
        text += " · no data for " + inert(", ".join(status.fleet.missing), 300)
    if shared_by:
        text += f" · shared by <@{shared_by}> with `{QUEUE_STATUS_COMMAND}`"
    return text
