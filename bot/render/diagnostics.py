"""The diagnostics report in the incident's thread: the likely cause, each finding with its
evidence, the runner types queueing, and when and how the fleet was read.

Should a report not fit one message (runner types are metric labels, of any length), it is
rendered again without the list of runner types, then with each finding's verdict alone, then
as its headline and scope.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from bot.domain.diagnosis import Report
from bot.render import diagnosis_text as present
from bot.render.layout import fit_lines
from bot.render.mrkdwn import date_token, escape_mrkdwn, inert
from bot.render.templates import Templates
from bot.slack import limits
from bot.slack.message import Message


def diagnostics_message(templates: Templates, report: Report) -> Message:
    """The diagnostics report for the incident's thread."""
    return templates.fitted("diagnostics.json.j2", _forms(report))


def _forms(report: Report) -> Iterator[dict[str, Any]]:
    head = present.report_headline(report)
    summary = f":mag: *Diagnostics:* {escape_mrkdwn(head)}\n{present.scope_text(report)}"
    findings = [line for f in report.findings for line in present.finding_lines(f)]
    verdicts = [present.finding_lines(f)[0] for f in report.findings]
    listed = report.affected or report.runner_types[:3]
    types = [present.type_text(t) for t in listed[: present.MAX_TYPES_LISTED]]
    if len(listed) > present.MAX_TYPES_LISTED:
        types.append(f"…and {len(listed) - present.MAX_TYPES_LISTED} more")
    types += present.longest_waiting_lines(report)
    read_from = f" from {inert(', '.join(report.sources), 120)}" if report.sources else ""
    context_parts = [
        f"Read {date_token(report.at)}{read_from}, rates over {inert(report.window, 40)},"
        " compared with the same time on previous days"
    ]
    # A note of nothing but spaces would be an empty text, which Slack refuses.
    context_parts += [shown for note in report.notes[:3] if (shown := inert(note, 300))]
    if report.missing:
        names = ", ".join(m.split(":", 1)[0] for m in report.missing)
        context_parts.append(f"No data for: {inert(names, 300)}")
    base = {"fallback": f"Diagnostics: {head}", "summary": summary}
    full = {**base, "findings": fit_lines(findings, limits.MAX_SECTION_TEXT)}
    yield {
        **full,
        "runner_types": fit_lines(types, limits.MAX_SECTION_TEXT),
        "context_parts": context_parts,
    }
    yield {**full, "runner_types": [], "context_parts": context_parts}
    short = fit_lines(verdicts, limits.MAX_SECTION_TEXT)
    yield {**base, "findings": short, "runner_types": [], "context_parts": context_parts[:1]}
    yield {**base, "findings": [], "runner_types": [], "context_parts": context_parts[:1]}
