"""Diagnostics in words: the lines of a report, for Slack (mrkdwn, escaped) and the terminal.

Pure functions. Every name that comes from the metrics (runner types, workflows) is escaped
before it reaches mrkdwn: a metric label must not be able to ping anyone either.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from bot.domain.diagnosis import (
    Evidence,
    Finding,
    PastQueue,
    Report,
    RunnerTypeState,
    Scope,
    Verdict,
)
from bot.render.mrkdwn import inert
from bot.render.values import format_duration, format_number

VERDICT_ICONS = {
    Verdict.LIKELY: ":red_circle:",
    Verdict.RULED_OUT: ":white_check_mark:",
    Verdict.NO_DATA: ":grey_question:",
}
VERDICT_WORDS = {
    Verdict.LIKELY: "likely",
    Verdict.RULED_OUT: "ruled out",
    Verdict.NO_DATA: "not measured",
}
MAX_TYPES_LISTED = 8


def _plain(text: str, limit: int = 80) -> str:
    return inert(text, limit)


def workflow_name(ref: str) -> str:
    """`pytorch/pytorch/.github/workflows/pull.yml@refs/heads/main` → `pull`; a workflow's name
    (job events give `pull`) as it is."""
    path = ref.split("@", 1)[0]
    name = path.rsplit("/", 1)[-1] or ref
    for suffix in (".yml", ".yaml"):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def against_usual(evidence: Evidence) -> str:
    """`usual 4; yesterday 3.8, a week ago 4.2`: the usual first, the single days after."""
    unit = evidence.unit
    days = [
        f"{label} {amount(value, unit)}"
        for label, value in (("yesterday", evidence.yesterday), ("a week ago", evidence.week_ago))
        if value is not None
    ]
    usual = [f"usual {amount(evidence.baseline, unit)}"] if evidence.baseline is not None else []
    return "; ".join([*usual, ", ".join(days)] if days else usual)


def behind_text(evidence: Evidence, *, markup: bool = True) -> str:
    """`, from workflows pull, trunk; mostly job build, repo pytorch/vision`, short."""

    def shown(text: str, limit: int) -> str:
        return _plain(text, limit) if markup else text

    text = ""
    if evidence.workflows:
        names = ", ".join(workflow_name(w) for w in evidence.workflows)
        text += f", from workflows {shown(names, 120)}"
    most = [
        f"{kind} {shown(value, 60)}"
        for kind, value in (("job", evidence.job), ("repo", evidence.repository))
        if value
    ]
    if most:
        text += "; mostly " + ", ".join(most)
    return text


def amount(value: float | None, unit: str) -> str:
    if value is None or not math.isfinite(value):
        return "no data"
    if unit == "s":
        return format_duration(timedelta(seconds=round(value)))
    if unit == "%":
        return f"{value * 100:.0f}%"
    if abs(value) >= 10 or value == int(value):
        return format_number(round(value))
    return format_number(round(value, 1))


def evidence_text(evidence: Evidence, *, markup: bool = True) -> str:
    name = _plain(evidence.runner_type) if markup else evidence.runner_type
    text = f"{name}: {evidence.measure} {amount(evidence.now, evidence.unit)}"
    if against := against_usual(evidence):
        text += f" ({against})"
    text += behind_text(evidence, markup=markup)
    if evidence.source:
        text += f" [{evidence.source}]"
    if evidence.why:
        text += f": {evidence.why}"
    return text


def since_text(state: RunnerTypeState) -> str:
    """`since 14:02 UTC` for the oldest job waiting, when job events tell it."""
    if state.since is None or not math.isfinite(state.since):
        return ""
    return "since " + datetime.fromtimestamp(state.since, UTC).strftime("%H:%M UTC")


def longest_waiting_lines(report: Report, *, markup: bool = True, limit: int = 3) -> list[str]:
    """The longest-waiting jobs of the queueing runner types, linked to their runs."""
    lines = []
    for name, jobs in report.waiting[:MAX_TYPES_LISTED]:
        shown = []
        for workflow, job, created, url in jobs[:limit]:
            waited = amount(report.at.timestamp() - created, "s")
            label = f"{workflow} / {job}" if workflow else job
            if markup:
                text = inert(label, 80)
                link = url.replace("&", "&amp;")
                shown.append(f"<{link}|{text}> {waited}" if _linkable(url) else f"{text} {waited}")
            else:
                shown.append(f"{label} {waited}" + (f" {url}" if url else ""))
        if shown:
            who = _plain(name) if markup else name
            lines.append(f"{who} waiting longest: " + "; ".join(shown))
    return lines


def _linkable(url: str) -> bool:
    return url.startswith(("https://", "http://")) and not any(c in url for c in "<>|\n ")


def type_text(state: RunnerTypeState, *, markup: bool = True) -> str:
    name = f"*{_plain(state.name)}*" if markup else state.name
    parts = [f"{amount(state.queued, '')} queued"]
    if state.max_wait_seconds is not None:
        wait = f"longest wait {amount(state.max_wait_seconds, 's')}"
        since = since_text(state) if state.queued else ""
        parts.append(f"{wait} ({since})" if since else wait)
    if state.busy is not None and state.registered is not None:
        parts.append(f"{amount(state.busy, '')}/{amount(state.registered, '')} runners busy")
    if state.max is not None:
        parts.append(f"max {amount(state.max, '')}" + (" (at max)" if state.at_max else ""))
    text = f"{name}: " + ", ".join(parts)
    before = [
        f"{label} {past_text(past)}"
        for label, past in (("yesterday", state.yesterday), ("a week ago", state.week_ago))
        if past is not None
    ]
    return text + ("; " + ", ".join(before) if before else "")


def past_text(past: PastQueue) -> str:
    """`3 queued (12m)`: a queue on an earlier day, its longest wait when jobs waited."""
    text = f"{amount(past.queued, '')} queued"
    if past.queued and past.max_wait_seconds is not None:
        text += f" ({amount(past.max_wait_seconds, 's')})"
    return text


def report_headline(report: Report) -> str:
    affected = report.affected
    if not affected:
        if any(t.queueing for t in report.runner_types):
            return "Jobs are waiting, but no more than usual at this time of day."
        return "No runner type has jobs waiting long right now."
    if report.primary_cause is None:
        return "Jobs are waiting, but no clear cause stands out from the data."
    sure = f" (confidence {report.confidence.value})" if report.confidence else ""
    return f"Most likely: {report.primary_cause.label}{sure}"


def scope_text(report: Report, *, markup: bool = True) -> str:
    affected, total = report.affected, len(report.runner_types)
    if report.scope is Scope.NONE:
        if any(t.queueing for t in report.runner_types):
            return f"Scope: none of {total} runner types is queueing beyond its usual."
        return f"Scope: none of {total} runner types is queueing."
    names = ", ".join(_plain(t.name) if markup else t.name for t in affected[:MAX_TYPES_LISTED])
    more = (
        f" and {len(affected) - MAX_TYPES_LISTED} more" if len(affected) > MAX_TYPES_LISTED else ""
    )
    kind = "isolated" if report.scope is Scope.ISOLATED else "widespread"
    return f"Scope: {kind}, {len(affected)} of {total} runner types queueing ({names}{more})."


def finding_lines(finding: Finding, *, markup: bool = True) -> list[str]:
    cause = finding.cause.label
    verdict = VERDICT_WORDS[finding.verdict]
    if markup:
        head = f"{VERDICT_ICONS[finding.verdict]} *{cause}*: {verdict}"
    else:
        head = f"[{verdict}] {cause}"
    lines = [head]
    shown = finding.evidence[:4] if finding.verdict is Verdict.LIKELY else finding.evidence[:1]
    lines += [f"    {evidence_text(e, markup=markup)}" for e in shown]
    if finding.verdict is Verdict.LIKELY:
        lines.append(("    _Next:_ " if markup else "    Next: ") + finding.next_step)
    return lines


def text_report(report: Report) -> str:
    """The report for a terminal."""
    lines = [
        f"Diagnostics at {report.at.isoformat()} (window {report.window})",
        report_headline(report),
        scope_text(report, markup=False),
        "",
    ]
    for finding in report.findings:
        lines += finding_lines(finding, markup=False)
    lines.append("")
    lines.append("Runner types, worst first:")
    for state in report.runner_types[:20]:
        lines.append("  " + type_text(state, markup=False))
    for line in longest_waiting_lines(report, markup=False):
        lines.append("  " + line)
    if report.sources:
        lines.append("Read from: " + ", ".join(report.sources))
    for note in report.notes:
        lines.append(f"Note: {note}")
    for missing in report.missing:
        lines.append(f"No data: {missing}")
    return "\n".join(lines)
