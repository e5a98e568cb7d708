"""The capacity report message: per runner type, busiest first, its queue times against the
target, its worst hours of the week, how busy and how full it was, who used it, and the sizes
that would have kept the p95 queue time under the target, with their cost in runner-hours.

Runner type and workflow names come from job labels and workflow files, which anyone opening a
pull request may write: escaped like alert text, so none can mention anyone or plant a link.
Should the report not fit one message, it is rendered again with less per type, then fewer
types, then its lead alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from bot.domain.capacity import CapacityReport, RecommendedSize, TypeCapacity
from bot.render.mrkdwn import date_token, inert
from bot.render.queue_status import SLACK_USER
from bot.render.templates import Templates
from bot.slack.contract import ActionId
from bot.slack.message import ChartFile, Message

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
#: Runner types listed when all do not fit.
FEW_TYPES = 4


def duration(seconds: float) -> str:
    """`45 s`, `9.5 min`, `14 min`, `2 h 05 min`."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        # One decimal below ten minutes, where a target usually lies: "9.5 min", not "10 min".
        shown = f"{seconds / 60:.1f}" if seconds < 600 else f"{seconds / 60:.0f}"
        return f"{shown.removesuffix('.0')} min"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"{hours} h {minutes:02d} min"


def _number(value: float) -> str:
    return f"{value:,.0f}"


def _size(size: RecommendedSize) -> str:
    return f"max *{size.max_runners}*, warm pool *{size.warm_pool}*"


def _advice(capacity: TypeCapacity, target: float) -> str | None:
    best, now = capacity.recommended, capacity.current
    if best is None:
        return None
    if not best.reachable:
        return (
            f":warning: No size tried keeps p95 under {duration(target)}: even {_size(best)}"
            f" gives {duration(best.p95_seconds)} ({_number(best.runner_hours)} runner-hours)."
        )
    text = (
        f":bulb: Would have kept p95 under {duration(target)}: {_size(best)} → p95"
        f" {duration(best.p95_seconds)}, {_number(best.runner_hours)} runner-hours"
    )
    if now is not None:
        change = best.runner_hours - now.runner_hours
        text += (
            f" ({'+' if change >= 0 else '−'}{_number(abs(change))} against max"
            f" {now.max_runners} now, whose p95 replays as {duration(now.p95_seconds)})"
        )
    return text + "."


def _fleet(capacity: TypeCapacity) -> str:
    parts = (
        [f"{_number(capacity.busy_hours)} runner-hours busy, at most {capacity.peak_busy} at once"]
        if capacity.measured
        else []
    )
    if capacity.max_runners is not None:
        at_max = capacity.hours_at_max
        parts.append(
            f"max {capacity.max_runners}"
            + (f", {at_max:.0f} h at it" if at_max is not None else "")
        )
    if capacity.utilisation is not None:
        parts.append(f"utilisation {capacity.utilisation:.0%}")
    if capacity.offline_runners:
        parts.append(f"{capacity.offline_runners} runners offline now")
    if capacity.failed_runners:
        parts.append(f"up to {capacity.failed_runners} runners failed at once")
    if capacity.failed_jobs:
        parts.append(f"{_number(capacity.failed_jobs)} jobs failed")
    return " · ".join(parts)


def capacity_text(capacity: TypeCapacity, target: float, *, full: bool = True) -> str:
    """One runner type's section."""
    name = inert(capacity.runner_type, 80)
    if not capacity.measured:
        return f"*{name}* · queue times not measured\n{_fleet(capacity)}"
    over = capacity.p95_seconds > target
    lines = [
        f"*{name}* · {_number(capacity.jobs)} jobs · queue time p50"
        f" {duration(capacity.p50_seconds)}, p95 {'*' if over else ''}"
        f"{duration(capacity.p95_seconds)}{'*' if over else ''}, p99"
        f" {duration(capacity.p99_seconds)}",
    ]
    if full and capacity.worst_hours:
        worst = " · ".join(
            f"{_DAYS[h.weekday]} {h.hour:02d}:00 {duration(h.p95_seconds)}"
            for h in capacity.worst_hours
        )
        lines.append(
            f"Worst hours (UTC, p95): {worst}; {capacity.hours_over_target} hours of the week"
            " over the target"
        )
    lines.append(_fleet(capacity))
    if full and capacity.workflows:
        used = " · ".join(f"*{inert(w.workflow, 60)}* {w.share:.0%}" for w in capacity.workflows)
        lines.append(f"Most runner time: {used}")
    advice = _advice(capacity, target)
    if advice:
        lines.append(advice)
    return "\n".join(lines)


def _lead(report: CapacityReport) -> str:
    since = date_token(datetime.fromtimestamp(report.since, UTC))
    until = date_token(datetime.fromtimestamp(report.until, UTC))
    if not report.types:
        return f"No runner type had jobs from {since} to {until}."
    over = sum(1 for t in report.types if t.p95_seconds > report.target_p95_seconds)
    if not any(t.measured for t in report.types):
        return f"From {since} to {until}, busiest first."
    return (
        f"From {since} to {until}, busiest first. Target: p95 queue time under"
        f" *{duration(report.target_p95_seconds)}*; {over} of {len(report.types)} runner types"
        " missed it."
    )


def _forms(report: CapacityReport) -> Iterator[tuple[list[str], int]]:
    """Each form's sections and the types it leaves out, fullest first."""
    target = report.target_p95_seconds
    yield [capacity_text(t, target) for t in report.types], 0
    yield [capacity_text(t, target, full=False) for t in report.types], 0
    few = report.types[:FEW_TYPES]
    yield [capacity_text(t, target, full=False) for t in few], len(report.types) - len(few)
    yield [], len(report.types)


def capacity_message(
    templates: Templates,
    report: CapacityReport,
    *,
    chart: ChartFile | None = None,
    share_value: str | None = None,
    shared_by: str | None = None,
) -> Message:
    """The report; with `share_value`, a Share in channel button asks for it again."""
    days = round((report.until - report.since) / 86400.0)
    span = "day" if days == 1 else f"{days} days"
    title = f":bar_chart: CI capacity, last {span}"

    def context(left_out: int) -> list[str]:
        more = report.more_types + left_out
        parts = [
            "Queue time: from a job's creation to a runner taking it (jobs still waiting count"
            " with their wait so far). Sizes: the window's jobs replayed through the autoscaler"
            " (idle runners kept beyond demand = warm pool)."
        ]
        if more:
            parts.append(f"{more} less busy runner types not shown.")
        if shared_by and SLACK_USER.fullmatch(shared_by):
            parts.append(f"Shared by <@{shared_by}>.")
        notes = (inert(note, 300) for note in report.notes)
        return parts + [note for note in notes if note.strip()]

    forms = (
        {
            "title": title,
            "fallback": f"CI capacity, last {span}",
            "lead": _lead(report),
            "sections": sections,
            "image": chart,
            "context_parts": context(left_out),
            "share": (
                {"action_id": ActionId.SHARE_STATUS.value, "value": share_value}
                if share_value
                else None
            ),
        }
        for sections, left_out in _forms(report)
    )
    return templates.fitted("capacity_report.json.j2", forms)
