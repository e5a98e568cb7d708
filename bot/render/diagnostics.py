"""The diagnostics report in the incident's thread: the likely cause, each finding with its
evidence, the runner types queueing, and when and how the fleet was read."""

from __future__ import annotations

from bot.domain.diagnosis import Report
from bot.render import diagnosis_text as present
from bot.render.layout import fit_lines
from bot.render.mrkdwn import clip, date_token, escape_mrkdwn, oneline
from bot.render.templates import Templates
from bot.slack import limits
from bot.slack.message import Message


def diagnostics_message(templates: Templates, report: Report) -> Message:
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
    return templates.message("diagnostics.json.j2", context)
