"""A reply in the incident's thread: what changed, resolved, fired again, or its silence.

Each line has its own budget and the lines are kept whole within one section, so a reply
fits a message; should it not, its first line (what happened) goes alone.
"""

from __future__ import annotations

from datetime import timedelta

from bot.domain.incidents import ThreadEvent, ThreadEventKind
from bot.domain.silences import Silence
from bot.render.alert_lines import MAX_LINE_CHARS, MAX_LISTED_ALERTS, alert_line, common_shown
from bot.render.layout import fit_lines
from bot.render.mrkdwn import clip, date_token, inert, oneline, who
from bot.render.templates import Templates
from bot.render.values import (
    DEFAULT_NAMING,
    ValueNaming,
    format_duration,
    format_number,
    unit_text,
    value_name,
    value_summary,
    with_unit,
)
from bot.slack import limits
from bot.slack.message import Message


def thread_event_message(
    templates: Templates, event: ThreadEvent, naming: ValueNaming = DEFAULT_NAMING
) -> Message:
    """A reply for the incident's thread; it says what changed and mentions nobody."""
    lines = fit_lines(_event_lines(event, naming), limits.MAX_SECTION_TEXT)
    fallback = clip(oneline(lines[0].replace("*", "")), 500)
    forms = (
        {"fallback": fallback, "lines": kept, "context_parts": []} for kept in (lines, lines[:1])
    )
    return templates.fitted("thread_reply.json.j2", forms)


def _event_lines(event: ThreadEvent, naming: ValueNaming) -> list[str]:
    group = event.group
    single = len(group.alerts) == 1
    if event.kind in (
        ThreadEventKind.SILENCED,
        ThreadEventKind.UNSILENCED,
        ThreadEventKind.SILENCE_ENDED,
    ):
        return _silence_lines(event)
    if event.kind is ThreadEventKind.RESOLVED:
        span = format_duration(event.duration or timedelta(0))
        lines = [f":large_green_circle: *Resolved* after {span}."]
        if event.note:
            lines.append(inert(event.note, MAX_LINE_CHARS))
        values = value_summary(group.lead, naming)
        if values and single:
            lines.append(f"Last firing values: {values}")
        return lines
    if event.kind is ThreadEventKind.FIRED_AGAIN:
        quiet = format_duration(event.quiet_for or timedelta(0))
        lines = [f":red_circle: *Fired again* {date_token(event.at)}, {quiet} after it resolved."]
        values = value_summary(group.lead, naming)
        if values and single:
            lines.append(values)
        return lines
    lines = [":arrows_counterclockwise: *Changed*"]
    changes = [c for c in event.changes if not naming.named(c.key).hidden]
    for change in changes[:MAX_LISTED_ALERTS]:
        named = naming.named(change.key)
        new = with_unit(change.new, unit_text(named.unit))
        who = "" if single else f"{inert(change.alert, 120)}: "
        lines.append(f"• {who}{value_name(named.label)}: {format_number(change.old)} → {new}")
    common = common_shown(group)
    for alert in event.joined[:MAX_LISTED_ALERTS]:
        lines.append(f"• Started firing: {alert_line(alert, common, naming=naming)}")
    for alert in event.left[:MAX_LISTED_ALERTS]:
        line = alert_line(alert, common, ":large_green_circle:", naming=naming)
        lines.append(f"• No longer firing: {line}")
    if event.summary:
        lines.append(f"• Summary: {inert(event.summary, MAX_LINE_CHARS)}")
    hidden = max(len(changes), len(event.joined), len(event.left)) - MAX_LISTED_ALERTS
    if hidden > 0:
        lines.append(f"…and more ({hidden} not shown)")
    if len(lines) == 1 and event.changes:
        lines.append("• Only values these messages leave out changed.")
    return lines


def _silence_lines(event: ThreadEvent) -> list[str]:
    silence = event.silence
    assert silence is not None
    until = date_token(silence.ends_at)
    if event.kind is ThreadEventKind.SILENCED and event.note:
        return [f":mute: *Silence {inert(event.note, MAX_LINE_CHARS)}*: now until {until}."]
    if event.kind is ThreadEventKind.SILENCED:
        # Whole minutes: the end was chosen a moment before the silence was made.
        minutes = round((silence.ends_at - silence.starts_at).total_seconds() / 60)
        span = format_duration(timedelta(minutes=minutes))
        lines = [f":mute: *Silenced* by {who(silence.by)} until {until} ({span})."]
        if silence.comment.strip():
            lines.append(f"“{inert(silence.comment, MAX_LINE_CHARS)}”")
        ids_text = ", ".join(f"`{inert(i, 80)}`" for i in silence.ids[:MAX_LISTED_ALERTS])
        if len(silence.ids) > MAX_LISTED_ALERTS:
            ids_text += f" and {len(silence.ids) - MAX_LISTED_ALERTS} more"
        lines.append(f"{_matchers_text(silence)} · Grafana silence {ids_text}")
        return lines
    if event.kind is ThreadEventKind.UNSILENCED:
        actor = who(event.actor) if event.actor else "someone"
        if event.actor is not None and event.actor.id == silence.by.id:
            whose = f"it was until {until}"
        else:
            whose = f"the silence by {who(silence.by)} was until {until}"
        return [f":bell: *Unsilenced* by {actor} ({whose}). Notifications resume."]
    if event.note:
        return [f":bell: *Silence {inert(event.note, MAX_LINE_CHARS)}*; notifications resume."]
    return [f":bell: *Silence ended* as planned ({until}); notifications resume."]


def _matchers_text(silence: Silence) -> str:
    shown = "; ".join(", ".join(str(m) for m in s) for s in silence.matchers)
    return "Matches `" + inert(shown, 400) + "`"
