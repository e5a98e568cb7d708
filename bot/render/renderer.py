"""Pure rendering: incidents and thread events become Block Kit messages, through templates/.

No I/O here. One jinja Environment with StrictUndefined; every value enters JSON through `tojson`,
and every piece of alert-supplied text is escaped for mrkdwn first (`&`, `<`, `>`; see
https://docs.slack.dev/messaging/formatting-message-text/#escaping), because `tojson` alone lets
`<!channel>` through. Long text is shortened with a visible "…" and the result is checked against
Slack's limits before anyone sends it.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import jinja2

from bot.domain.alerts import Alert, AlertGroup, AlertStatus
from bot.domain.diagnosis import Report
from bot.domain.incidents import Incident, IncidentStatus, ThreadEvent, ThreadEventKind
from bot.domain.queue_status import QueueStatus
from bot.domain.silences import Duration, MatcherSet, Person, Silence
from bot.render import diagnosis_text as present
from bot.render import status_lines
from bot.render.mrkdwn import clip, date_token, escape_mrkdwn, link, oneline, safe_url
from bot.render.values import (
    KNOWN_VALUES,
    format_duration,
    format_number,
    headline,
    key_values,
    value_summary,
    with_unit,
)
from bot.slack import blockkit, contract, limits
from bot.slack.contract import ActionId, ButtonValue
from bot.slack.message import ChartFile, Message

#: Alerts listed one per line in a message; the rest are counted.
MAX_LISTED_ALERTS = 10
#: Budgets that keep a message far below Slack's ~12,000-character total.
MAX_ABOUT_CHARS = 1500
MAX_LINE_CHARS = 280
#: Longer links are left out of alert lines (the View alert button still has the lead's).
MAX_LINE_LINK = 500
#: A storm digest lists this many incidents in its message, and this many per thread reply
#: (each line is at most ~500 characters, so a page stays within Slack's ~12k total).
DIGEST_FIRST_PAGE = 15
DIGEST_PAGE = 20
DIGEST_PAGE_CHARS = 7000
#: URL buttons longer than this are left out when a message would otherwise be too long.
MAX_COMPACT_URL = 500


#: A Slack user id as it may appear in a mention.
_SLACK_USER = re.compile(r"[UW][A-Z0-9]{2,20}")


class RenderError(Exception):
    """A rendered message breaks Slack's rules: a template bug, never the alert's fault."""


def template_dirs() -> list[Path]:
    """Where templates/ is: inside the installed package, or beside it in a source checkout."""
    here = Path(__file__).resolve().parent.parent  # the bot package
    found = [p for p in (here / "templates", here.parent / "templates") if p.is_dir()]
    if not found:
        raise RenderError("the templates/ directory is missing from this installation")
    return found


class Renderer:
    """Turns domain objects into `Message`s using the Block Kit templates."""

    def __init__(self, templates: jinja2.BaseLoader | None = None) -> None:
        loader = templates or jinja2.FileSystemLoader([str(p) for p in template_dirs()])
        self._env = jinja2.Environment(
            loader=loader,
            undefined=jinja2.StrictUndefined,
            autoescape=False,  # noqa: S701 - output is JSON built with tojson, not HTML
            keep_trailing_newline=False,
        )
        self._env.filters.update(clip=clip, oneline=oneline, mrkdwn=escape_mrkdwn)
        self._env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "sort_keys": False}
        self._env.globals["limits"] = {
            "header": limits.MAX_HEADER_TEXT,
            "section": limits.MAX_SECTION_TEXT,
            "field": limits.MAX_FIELD_TEXT,
            "context_elements": limits.MAX_CONTEXT_ELEMENTS,
            "button_text": limits.MAX_BUTTON_TEXT,
        }

    def incident(self, incident: Incident) -> Message:
        """The incident's parent message in its current state.

        Each part has its own length budget; should long URLs still push the message past
        Slack's total, it is rendered again without them rather than refused by Slack.
        """
        try:
            return self._incident(incident, compact=False)
        except RenderError:
            return self._incident(incident, compact=True)

    def _incident(self, incident: Incident, *, compact: bool) -> Message:
        group = incident.group
        single = len(group.alerts) == 1
        resolved = incident.status is IncidentStatus.RESOLVED
        context = {
            "headline": _status_icon(incident) + " " + headline(group),
            "fallback": self._fallback(incident),
            "status_line": self._status_line(incident),
            "key_values": key_values(group.lead)[: limits.MAX_SECTION_FIELDS] if single else [],
            "about": self._about(group),
            "alert_lines": [] if single else _alert_lines(group, resolved=resolved),
            "context_parts": self._context_parts(incident),
            "buttons": self._buttons(incident, compact=compact),
        }
        return self._render("incident.json.j2", context)

    def thread_event(self, event: ThreadEvent) -> Message:
        """A reply for the incident's thread; it says what changed and mentions nobody."""
        lines = fit_lines(_event_lines(event), limits.MAX_SECTION_TEXT)
        context = {
            "fallback": oneline(lines[0].replace("*", "")),
            "lines": lines,
            "context_parts": [],
        }
        return self._render("thread_reply.json.j2", context)

    def silence_modal(
        self, incident: Incident, sets: tuple[MatcherSet, ...], private_metadata: str
    ) -> dict[str, Any]:
        """The Silence… modal for `incident`, previewing the matchers in plain text."""
        count = "one silence" if len(sets) == 1 else f"{len(sets)} silences, one per rule"
        context = {
            "callback_id": contract.CallbackId.SILENCE_MODAL.value,
            "private_metadata": private_metadata,
            "about": (
                f"*{escape_mrkdwn(clip(oneline(headline(incident.group)), 200))}*\n"
                f"Firing since {date_token(incident.group.started_at)}."
                " The silence is created in Grafana and announced in the incident's thread."
            ),
            "blocks": {
                "duration": contract.SilenceInput.DURATION.value,
                "until": contract.SilenceInput.UNTIL.value,
                "comment": contract.SilenceInput.COMMENT.value,
            },
            "durations": [
                {"text": {"type": "plain_text", "text": d.label}, "value": d.value}
                for d in Duration
            ],
            "comment_limit": 2000,
            "matchers": f"Grafana will get {count}, matching:\n{matcher_preview(sets)}",
        }
        raw = self._env.get_template("silence_modal.json.j2").render(**context)
        try:
            view: dict[str, Any] = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise RenderError(f"silence_modal.json.j2 produced invalid JSON: {exc}") from exc
        problems = blockkit.validate_view(view)
        if problems:
            raise RenderError(f"silence_modal.json.j2 broke Slack's rules: {'; '.join(problems)}")
        return view

    def diagnostics(self, report: Report) -> Message:
        """The diagnostics report for the incident's thread."""
        head = present.report_headline(report)
        summary = f":mag: *Diagnostics:* {escape_mrkdwn(head)}\n{present.scope_text(report)}"
        findings = [line for f in report.findings for line in present.finding_lines(f)]
        listed = report.affected or report.runner_types[:3]
        types = [present.type_text(t) for t in listed[: present.MAX_TYPES_LISTED]]
        if len(listed) > present.MAX_TYPES_LISTED:
            types.append(f"…and {len(listed) - present.MAX_TYPES_LISTED} more")
        context_parts = [
            f"Read {date_token(report.at)}, rates over {escape_mrkdwn(report.window)},"
            " compared with the same time on previous days"
        ]
        context_parts += [clip(escape_mrkdwn(oneline(n)), 300) for n in report.notes[:3]]
        if report.missing:
            names = ", ".join(m.split(":", 1)[0] for m in report.missing)
            context_parts.append(f"No data for: {clip(escape_mrkdwn(names), 300)}")
        context = {
            "fallback": f"Diagnostics: {head}",
            "summary": summary,
            "findings": fit_lines(findings, limits.MAX_SECTION_TEXT),
            "runner_types": fit_lines(types, limits.MAX_SECTION_TEXT),
            "context_parts": context_parts,
        }
        return self._render("diagnostics.json.j2", context)

    def digest(self, opened_at: datetime, members: list[Incident]) -> list[Message]:
        """The storm digest: the message (a summary and the first incidents), then thread
        replies continuing the list. Incidents keep their place (joining order), so a change
        edits one page."""
        firing = sum(i.status is IncidentStatus.FIRING for i in members)
        resolved = len(members) - firing
        lines = [_digest_line(i) for i in members]
        first, *rest = _pages(lines, DIGEST_FIRST_PAGE) or [[]]
        pages = [
            self._render(
                "digest.json.j2",
                {
                    "title": f":rotating_light: Alert storm: {len(members)} incidents",
                    "fallback": (
                        f"Alert storm: {len(members)} incidents ({firing} firing,"
                        f" {resolved} resolved)"
                    ),
                    "intro": (
                        f"Since {date_token(opened_at)} alerts opened faster than one message"
                        " each could be read, so queuebot lists them here and keeps the list up"
                        f" to date. *{firing} firing* · {resolved} resolved."
                        + (" The list continues in the thread." if rest else "")
                    ),
                    "chunks": _chunks(first),
                },
            )
        ]
        low = len(first) + 1
        for page in rest:
            span = f"incidents {low}–{low + len(page) - 1}"
            pages.append(
                self._render(
                    "digest.json.j2",
                    {
                        "title": f"Alert storm, {span}",
                        "fallback": f"Alert storm, {span}",
                        "intro": f"{len(page)} incidents of the storm, in the order they opened.",
                        "chunks": _chunks(page),
                    },
                )
            )
            low += len(page)
        return pages

    def queue_status(
        self,
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
            sections += _chunks_text(status_lines.waiting_lines(status.fleet))
            sections.append(None)
            sections += _chunks_text(status_lines.incident_lines(status))
            sections += _chunks_text(status_lines.silence_lines(status))
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
        return self._render("queue_status.json.j2", context)

    def queue_status_usage(self, problem: str | None = None) -> Message:
        """How to use /queue-status, after what was not understood (if anything)."""
        text = status_lines.USAGE
        if problem:
            text = f":grey_question: {problem}\n\n{text}"
        return self.notice(text)

    def notice(self, text: str) -> Message:
        """A one-paragraph ephemeral answer (text is ours, already mrkdwn)."""
        return self._render("notice.json.j2", {"text": text})

    def _render(self, template: str, context: dict[str, Any]) -> Message:
        raw = self._env.get_template(template).render(**context)
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise RenderError(f"{template} produced invalid JSON: {exc}") from exc
        message = Message(text=clip(data["text"], 3000), blocks=data["blocks"])
        problems = blockkit.validate_message(message.text, message.blocks)
        if problems:
            raise RenderError(f"{template} broke Slack's rules: {'; '.join(problems)}")
        return message

    @staticmethod
    def _fallback(incident: Incident) -> str:
        group = incident.group
        state = "firing" if incident.status is IncidentStatus.FIRING else "resolved"
        values = value_summary(group.lead) if len(group.alerts) == 1 else ""
        text = f"{headline(group)}: {state}"
        if values:
            text += f". {values}"
        return escape_mrkdwn(clip(text, 500))

    @staticmethod
    def _status_line(incident: Incident) -> str:
        group = incident.group
        parts: list[str] = []
        resolved = incident.status is IncidentStatus.RESOLVED
        if resolved and group.status is AlertStatus.RESOLVED:
            # Only the resolution reached queuebot: its values are those at recovery.
            parts.append(
                f"*Resolved* {date_token(incident.resolved_at or group.started_at)}"
                " · queuebot did not see it fire; values shown are at resolution"
            )
        elif resolved:
            span = format_duration(incident.duration or timedelta(0))
            since = f"since {date_token(group.started_at)}"
            if incident.fired_count > 1:
                since += (
                    f", fired {incident.fired_count} times from {date_token(incident.started_at)}"
                )
            parts.append(f"*Resolved after {span}* ({since})")
        elif incident.fired_count > 1:
            parts.append(
                f"*Firing again* since {date_token(group.started_at)}"
                f" (fired {incident.fired_count} times, first {date_token(incident.started_at)})"
            )
        else:
            parts.append(f"*Firing* since {date_token(incident.started_at)}")
        if incident.silence is not None and not resolved:
            silence = incident.silence
            parts.insert(
                0, f":mute: *Silenced until {date_token(silence.ends_at)}* by {_who(silence.by)}"
            )
        if group.team:
            parts.append(f"*Team:* {escape_mrkdwn(oneline(group.team))}")
        if len(group.alerts) > 1 and not resolved:
            parts.append(f"{len(group.firing)} of {len(group.alerts)} alerts firing")
        elif len(group.alerts) > 1:
            parts.append(f"{len(group.alerts)} alerts")
        return " · ".join(parts)

    @staticmethod
    def _about(group: AlertGroup) -> str:
        summary = escape_mrkdwn(oneline(group.summary))
        description = escape_mrkdwn(group.description.strip())
        if summary and description and group.summary.strip() != group.description.strip():
            text = f"*{clip(summary, 300)}*\n{description}"
        else:
            text = summary or description
        return clip(text, MAX_ABOUT_CHARS)

    @staticmethod
    def _context_parts(incident: Incident) -> list[str]:
        group = incident.group
        parts: list[str] = []
        lead = group.lead
        labels = lead.shown_labels if len(group.alerts) == 1 else _common_shown(group)
        if labels:
            text = " ".join(f"`{k}={v}`" for k, v in labels.items())
            parts.append(clip(escape_mrkdwn(oneline(text)), 600))
        folder = lead.labels.get("grafana_folder")
        if folder:
            parts.append(f"Folder: {escape_mrkdwn(oneline(folder))}")
        if lead.rule_uid:
            parts.append(f"Rule `{escape_mrkdwn(oneline(lead.rule_uid))}`")
        runbook = group.runbook_url
        if runbook and safe_url(runbook) is None:
            parts.append(f"Runbook: {clip(escape_mrkdwn(oneline(runbook)), 300)}")
        if group.truncated_alerts:
            parts.append(f"{group.truncated_alerts} more alerts were left out by the sender")
        if incident.previous_link:
            parts.append(f"Follows {link(incident.previous_link, 'an earlier incident')}")
        return parts

    @staticmethod
    def _buttons(incident: Incident, *, compact: bool) -> list[dict[str, str | None]]:
        group = incident.group
        value = ButtonValue(incident=incident.id).encode()
        buttons: list[dict[str, str | None]] = [
            _button("Run diagnostics", ActionId.RUN_DIAGNOSTICS, value=value, style="primary")
        ]
        if incident.status is IncidentStatus.FIRING and incident.silence is not None:
            buttons.append(_button("Unsilence", ActionId.UNSILENCE, value=value))
        elif incident.status is IncidentStatus.FIRING:
            buttons.append(_button("Silence…", ActionId.SILENCE, value=value))
        lead = group.lead
        for label, action, url in (
            ("Open runbook", ActionId.OPEN_RUNBOOK, group.runbook_url),
            ("View alert", ActionId.VIEW_ALERT, lead.generator_url),
            ("Dashboard", ActionId.OPEN_DASHBOARD, lead.dashboard_url or lead.panel_url),
        ):
            target = safe_url(url)
            if target is not None and not (compact and len(target) > MAX_COMPACT_URL):
                buttons.append(_button(label, action, url=target))
        return buttons


def matcher_preview(sets: tuple[MatcherSet, ...]) -> str:
    """The matchers as plain text, one silence per line."""
    return "\n".join(", ".join(str(m) for m in matcher_set) for matcher_set in sets)


def _button(
    label: str,
    action: ActionId,
    *,
    value: str | None = None,
    url: str | None = None,
    style: str | None = None,
) -> dict[str, str | None]:
    return {"label": label, "action_id": str(action), "value": value, "url": url, "style": style}


def _who(person: Person) -> str:
    """A person by name, as plain text: "@alice" (never a mention, so nobody is pinged)."""
    return "@" + escape_mrkdwn(clip(oneline(person.name), 80))


def _matchers_text(silence: Silence) -> str:
    shown = "; ".join(", ".join(str(m) for m in s) for s in silence.matchers)
    return "Matches `" + clip(escape_mrkdwn(oneline(shown)), 400) + "`"


def _silence_lines(event: ThreadEvent) -> list[str]:
    silence = event.silence
    assert silence is not None
    until = date_token(silence.ends_at)
    if event.kind is ThreadEventKind.SILENCED and event.note:
        return [f":mute: *Silence {escape_mrkdwn(event.note)}*: now until {until}."]
    if event.kind is ThreadEventKind.SILENCED:
        # Whole minutes: the end was chosen a moment before the silence was made.
        minutes = round((silence.ends_at - silence.starts_at).total_seconds() / 60)
        span = format_duration(timedelta(minutes=minutes))
        lines = [f":mute: *Silenced* by {_who(silence.by)} until {until} ({span})."]
        if silence.comment.strip():
            comment = clip(escape_mrkdwn(oneline(silence.comment)), MAX_LINE_CHARS)
            lines.append(f"“{comment}”")
        ids_text = ", ".join(f"`{escape_mrkdwn(i)}`" for i in silence.ids)
        lines.append(f"{_matchers_text(silence)} · Grafana silence {ids_text}")
        return lines
    if event.kind is ThreadEventKind.UNSILENCED:
        actor = _who(event.actor) if event.actor else "someone"
        if event.actor is not None and event.actor.id == silence.by.id:
            whose = f"it was until {until}"
        else:
            whose = f"the silence by {_who(silence.by)} was until {until}"
        return [f":bell: *Unsilenced* by {actor} ({whose}). Notifications resume."]
    if event.note:
        return [f":bell: *Silence {escape_mrkdwn(event.note)}*; notifications resume."]
    return [f":bell: *Silence ended* as planned ({until}); notifications resume."]


def _pages(lines: list[str], first_size: int) -> list[list[str]]:
    """Lines in pages: the first of at most `first_size` lines, then DIGEST_PAGE each, every
    page within DIGEST_PAGE_CHARS so it stays under Slack's total for a message."""
    pages: list[list[str]] = []
    current: list[str] = []
    size = 0
    for line in lines:
        limit = first_size if not pages else DIGEST_PAGE
        if current and (len(current) >= limit or size + len(line) > DIGEST_PAGE_CHARS):
            pages.append(current)
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        pages.append(current)
    return pages


def _chunks_text(lines: list[str]) -> list[str | None]:
    return ["\n".join(chunk) for chunk in _chunks(lines)]


def _chunks(lines: list[str]) -> list[list[str]]:
    """Lines in sections of at most Slack's section length."""
    chunks: list[list[str]] = [[]]
    for line in lines:
        if sum(len(x) + 1 for x in chunks[-1]) + len(line) > limits.MAX_SECTION_TEXT - 10:
            chunks.append([])
        chunks[-1].append(line)
    return [c for c in chunks if c]


def _digest_line(incident: Incident) -> str:
    group = incident.group
    labels = group.lead.shown_labels if len(group.alerts) == 1 else _common_shown(group)
    parts = [f"*{escape_mrkdwn(clip(oneline(headline(group)), 120))}*"]
    if labels:
        text = " ".join(f"{k}={v}" for k, v in labels.items())
        parts.append("`" + clip(escape_mrkdwn(oneline(text)), 120) + "`")
    if incident.status is IncidentStatus.RESOLVED:
        span = format_duration(incident.duration or timedelta(0))
        parts.append(f"Resolved after {span}")
        return ":large_green_circle: " + " · ".join(parts)
    parts.append(f"firing since {date_token(group.started_at)}")
    values = value_summary(group.lead) if len(group.alerts) == 1 else ""
    if values:
        parts.append(clip(values, 160))
    return ":red_circle: " + " · ".join(parts)


def _status_icon(incident: Incident) -> str:
    return ":large_green_circle:" if incident.status is IncidentStatus.RESOLVED else ":red_circle:"


def _common_shown(group: AlertGroup) -> dict[str, str]:
    shown = group.lead.shown_labels
    return {k: v for k, v in shown.items() if group.common_labels.get(k) == v}


def fit_lines(lines: list[str], limit: int) -> list[str]:
    """As many whole lines as fit in `limit` characters, then a count of the rest."""
    kept: list[str] = []
    used = 0
    for index, line in enumerate(lines):
        rest = len(lines) - index - 1
        room = limit - used - (len(f"\n…and {rest} more lines") if rest else 0)
        if len(line) + 1 > room:
            kept.append(f"…and {len(lines) - index} more lines")
            return kept
        kept.append(line)
        used += len(line) + 1
    return kept


def _alert_line(alert: Alert, common: dict[str, str], icon: str | None = None) -> str:
    """One alert on one line; its link only if short enough never to be cut in half."""
    if icon is None:
        icon = ":red_circle:" if alert.status is AlertStatus.FIRING else ":large_green_circle:"
    own = {k: v for k, v in alert.shown_labels.items() if common.get(k) != v}
    parts = [f"*{escape_mrkdwn(oneline(alert.name))}*"]
    if own:
        parts.append(escape_mrkdwn(oneline(" ".join(f"{k}={v}" for k, v in own.items()))))
    values = value_summary(alert)
    if values:
        parts.append(values)
    line = clip(" · ".join(parts), MAX_LINE_CHARS)
    target = safe_url(alert.generator_url)
    if target is not None and len(target) <= MAX_LINE_LINK:
        line += " · " + link(target, "view")
    return f"{icon} {line}"


def _alert_lines(group: AlertGroup, *, resolved: bool) -> list[str]:
    common = _common_shown(group)
    ordered = sorted(group.alerts, key=lambda a: (a.status is not AlertStatus.FIRING, a.starts_at))
    icon = ":large_green_circle:" if resolved else None
    lines = [_alert_line(alert, common, icon) for alert in ordered[:MAX_LISTED_ALERTS]]
    if len(ordered) > MAX_LISTED_ALERTS:
        lines.append(f"…and {len(ordered) - MAX_LISTED_ALERTS} more")
    return fit_lines(lines, limits.MAX_SECTION_TEXT)


def _event_lines(event: ThreadEvent) -> list[str]:
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
            lines.append(escape_mrkdwn(event.note))
        values = value_summary(group.lead)
        if values and single:
            lines.append(f"Last firing values: {values}")
        return lines
    if event.kind is ThreadEventKind.FIRED_AGAIN:
        quiet = format_duration(event.quiet_for or timedelta(0))
        lines = [f":red_circle: *Fired again* {date_token(event.at)}, {quiet} after it resolved."]
        values = value_summary(group.lead)
        if values and single:
            lines.append(values)
        return lines
    lines = [":arrows_counterclockwise: *Changed*"]
    for change in event.changes[:MAX_LISTED_ALERTS]:
        known = KNOWN_VALUES.get(change.key)
        label = known.label if known else escape_mrkdwn(oneline(change.key))
        unit = known.unit if known else ""
        who = "" if single else f"{escape_mrkdwn(oneline(change.alert))}: "
        lines.append(f"• {who}{label}: {format_number(change.old)} → {with_unit(change.new, unit)}")
    common = _common_shown(group)
    for alert in event.joined[:MAX_LISTED_ALERTS]:
        lines.append(f"• Started firing: {_alert_line(alert, common)}")
    for alert in event.left[:MAX_LISTED_ALERTS]:
        lines.append(f"• No longer firing: {_alert_line(alert, common, ':large_green_circle:')}")
    if event.summary:
        lines.append(f"• Summary: {clip(escape_mrkdwn(oneline(event.summary)), MAX_LINE_CHARS)}")
    hidden = max(len(event.changes), len(event.joined), len(event.left)) - MAX_LISTED_ALERTS
    if hidden > 0:
        lines.append(f"…and more ({hidden} not shown)")
    return lines
