"""The queueing chart posted in an alert's Slack thread, drawn with matplotlib (Agg).

This module owns the picture only: given queued jobs and the longest wait per runner type over a
window, it returns PNG bytes with two panels on one time axis and a legend naming each runner
type with its peaks. Fetching the numbers and uploading the file belong to its callers. Nothing
here reads a clock, a file or the network, and no global matplotlib state is used or changed
(each call has its own Figure; `render_chart` runs in worker threads), so the same data always
gives the same bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib takes most of a second to import: only drawing pays for it
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

WIDTH = 1200
HEIGHT = 700
MAX_SERIES = 8
_DPI = 100

# Okabe-Ito, which stays distinguishable under the common colour-vision deficiencies. Black goes
# last so that it is rarely used next to the black text and the marker.
PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#F0E442",  # yellow
    "#000000",  # black
)

# Layout in output pixels from the top left. The panels' rows and the plots' edges are public
# so that a test can look for a series inside one panel without guessing.
PLOT_LEFT = 84
PLOT_RIGHT = 900
TOP_PANEL = (92, 330)
BOTTOM_PANEL = (384, 622)
_LEGEND_LEFT = 928
_LEGEND_ROW = 52

_INK = "#1A1A1A"
_MUTED = "#5C5C5C"
_FAINT = "#8A8A8A"
_TITLE: dict[str, Any] = {"fontsize": 18, "weight": "bold", "color": _INK, "va": "top"}
_GRID = "#E6E6E6"
_AXIS = "#B4B4B4"
_MARKER = "#6E6E6E"
_LINE_WIDTH = 2.5
_Y_TICKS = 5  # at most this many intervals on a value axis
_X_TICKS = 8  # at most this many intervals on the time axis
_TIME_STEPS_MIN = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440)
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_SEPARATORS = " .-_/:"


@dataclass(frozen=True)
class Series:
    """One runner type's samples: aware UTC datetimes, ascending; NaN marks a gap."""

    runner_type: str
    points: tuple[tuple[datetime, float], ...]


@dataclass(frozen=True)
class ChartData:
    """Everything the chart shows; series come worst first, and only the first eight are drawn."""

    title: str
    queued: tuple[Series, ...]
    wait_minutes: tuple[Series, ...]
    start: datetime
    end: datetime
    marker: datetime | None = None
    marker_label: str = "alert"
    #: What the lower panel measures (the longest current wait, or the waits of jobs started).
    wait_heading: str = "Longest wait (minutes)"
    #: What the upper panel counts (queued jobs, or runners busy), and its peaks' word.
    queued_heading: str = "Queued jobs"
    queued_peak: str = "queued"


def load_matplotlib() -> None:
    """Import what drawing needs now (a server does before it starts, a command when it draws)."""
    import matplotlib.backends.backend_agg  # with it matplotlib.lines
    import matplotlib.figure  # noqa: F401


def render_chart(data: ChartData) -> bytes:
    """Draw `data` as a 1200 x 700 PNG: queued jobs on top, longest wait below.

    Raises ValueError when `data.end` is not after `data.start`: there is no window to draw.
    """
    start, end = _utc(data.start), _utc(data.end)
    if end <= start:
        raise ValueError(f"the chart's window is empty: start {start} is not before end {end}")
    span = (end - start).total_seconds()
    names = list(dict.fromkeys(s.runner_type for s in (*data.queued, *data.wait_minutes)))
    shown = names[:MAX_SERIES]
    colours = {name: PALETTE[index] for index, name in enumerate(shown)}

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(WIDTH / _DPI, HEIGHT / _DPI), dpi=_DPI, facecolor="white")
    FigureCanvasAgg(figure)
    _fitted(figure, 24, 20, data.title, WIDTH - 48, _cut_end, **_TITLE)
    peaks: dict[str, list[str]] = {name: [] for name in shown}
    panels = (
        (data.queued_heading, TOP_PANEL, data.queued, 1.0, lambda v: _peak(v, data.queued_peak)),
        (data.wait_heading, BOTTOM_PANEL, data.wait_minutes, 0.1, _wait),
    )
    for heading, rows, series, min_step, peak_text in panels:
        axes = _panel(figure, rows, heading)
        for name, peak in _plot(axes, series, colours, start, span, min_step).items():
            peaks[name].append(peak_text(peak))
        labelled = rows is BOTTOM_PANEL
        _time_axis(axes, start, end, labelled)
        if data.marker is not None:
            _marker(axes, _utc(data.marker), start, span, data.marker_label, first=not labelled)
    figure.text(
        _fx((PLOT_LEFT + PLOT_RIGHT) / 2),
        _fy(BOTTOM_PANEL[1] + 40),
        _time_note(start, end),
        fontsize=11,
        color=_FAINT,
        ha="center",
        va="center",
    )
    _legend(figure, shown, len(names) - len(shown), colours, peaks)
    buffer = io.BytesIO()
    # No Software or date metadata: the same data gives the same bytes.
    figure.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    return buffer.getvalue()


def _fx(x: float) -> float:
    return x / WIDTH


def _fy(y: float) -> float:
    return 1 - y / HEIGHT


def _panel(figure: Figure, rows: tuple[int, int], heading: str) -> Axes:
    top, bottom = rows
    box = (_fx(PLOT_LEFT), _fy(bottom), _fx(PLOT_RIGHT - PLOT_LEFT), (bottom - top) / HEIGHT)
    axes = figure.add_axes(box)
    axes.set_facecolor("white")
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    axes.spines["bottom"].set_color(_AXIS)
    axes.tick_params(colors=_MUTED, labelsize=11, length=0)
    axes.grid(True, color=_GRID, linewidth=1)
    axes.set_axisbelow(True)
    figure.text(_fx(24), _fy(top - 22), heading, fontsize=13, weight="bold", color=_INK)
    return axes


def _plot(
    axes: Axes,
    series: Sequence[Series],
    colours: dict[str, str],
    start: datetime,
    span: float,
    min_step: float,
) -> dict[str, float]:
    """Draw each drawn runner type's line; their peaks within the window."""
    origin = start.timestamp()
    peaks: dict[str, float] = {}
    lowest = 0.0
    # The caller lists the worst runner type first; drawing it last keeps it on top.
    for one in reversed(series):
        colour = colours.get(one.runner_type)
        if colour is None:
            continue
        samples = sorted((_utc(moment).timestamp() - origin, value) for moment, value in one.points)
        xs = [x for x, _ in samples]
        ys = [value if math.isfinite(value) else math.nan for _, value in samples]
        inside = [y for x, y in zip(xs, ys, strict=True) if 0 <= x <= span and math.isfinite(y)]
        if not inside:
            continue
        peaks[one.runner_type] = max(inside)
        lowest = min(lowest, *inside)
        axes.plot(xs, ys, color=colour, linewidth=_LINE_WIDTH, solid_capstyle="round")
        lonely = [
            (x, y)
            for i, (x, y) in enumerate(zip(xs, ys, strict=True))
            if math.isfinite(y)
            and not (i > 0 and math.isfinite(ys[i - 1]))
            and not (i + 1 < len(ys) and math.isfinite(ys[i + 1]))
        ]
        if lonely:
            axes.plot(*zip(*lonely, strict=True), "o", color=colour, markersize=_LINE_WIDTH * 2)
    axes.set_xlim(0, span)
    if not peaks:
        axes.set_yticks([])
        axes.text(
            0.5,
            0.5,
            "no data",
            transform=axes.transAxes,
            fontsize=16,
            color=_FAINT,
            ha="center",
            va="center",
        )
        return peaks
    step, low, high = _value_axis(lowest, max(0.0, *peaks.values()), min_step)
    ticks = [low + i * step for i in range(round((high - low) / step) + 1)]
    axes.set_ylim(low, high)
    axes.set_yticks(ticks, [_tick_label(value, step) for value in ticks])
    return peaks


def _value_axis(low: float, high: float, min_step: float) -> tuple[float, float, float]:
    """A 0-based axis stepping by 1, 2 or 5 x 10^k: (step, low, high)."""
    if high - low <= 0:
        high = low + 1.0
    raw = (high - low) / _Y_TICKS
    base = 10.0 ** math.floor(math.log10(raw))
    step = next((m * base for m in (1, 2, 5) if m * base >= raw * (1 - 1e-9)), 10 * base)
    step = max(step, min_step)
    # The tolerance keeps a maximum that is a whole number of steps from growing one more step.
    return step, math.floor(low / step + 1e-9) * step, math.ceil(high / step - 1e-9) * step


def _tick_label(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    # abs() turns a computed -0.0 into 0, which would otherwise print as "-0".
    return f"{abs(value) if value == 0 else value:,.{decimals}f}"


def _time_axis(axes: Axes, start: datetime, end: datetime, labelled: bool) -> None:
    """UTC times on round minutes, hours or days, at most `_X_TICKS` intervals apart."""
    minutes = (end - start).total_seconds() / 60
    step = next((m for m in _TIME_STEPS_MIN if minutes / m <= _X_TICKS), None)
    if step is None:
        step = 1440 * math.ceil(minutes / 1440 / _X_TICKS)
    seconds = step * 60
    first = math.ceil(start.timestamp() / seconds) * seconds
    moments = range(first, math.floor(end.timestamp()) + 1, seconds)
    labels = [_time_label(datetime.fromtimestamp(m, UTC)) for m in moments] if labelled else []
    axes.set_xticks([m - start.timestamp() for m in moments], labels)


def _time_label(tick: datetime) -> str:
    # Midnight shows the new day instead, so a window across days never repeats "00:00".
    # Month names come from a table: strftime's would follow the process's locale.
    if tick.hour == 0 and tick.minute == 0:
        return f"{_MONTHS[tick.month - 1]} {tick.day}"
    return f"{tick:%H:%M}"


def _time_note(start: datetime, end: datetime) -> str:
    first, last = f"{start:%Y-%m-%d}", f"{end:%Y-%m-%d}"
    return f"Time in UTC, {first if first == last else f'{first} to {last}'}"


def _marker(
    axes: Axes, marker: datetime, start: datetime, span: float, label: str, *, first: bool
) -> None:
    seconds = (marker - start).total_seconds()
    if not 0 <= seconds <= span:
        return
    axes.axvline(seconds, color=_MARKER, linewidth=1.5, linestyle=(0, (4, 4)))
    if first:
        text = _cut_end(f"{label} {marker:%H:%M}".strip(), 24)
        axes.annotate(
            text,
            (seconds, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(0, 6),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=11,
            color=_MARKER,
        )


def _legend(
    figure: Figure,
    shown: Sequence[str],
    hidden: int,
    colours: dict[str, str],
    peaks: dict[str, list[str]],
) -> None:
    from matplotlib.lines import Line2D

    if not shown:
        return
    figure.text(
        _fx(_LEGEND_LEFT),
        _fy(TOP_PANEL[0] - 22),
        "Runner type",
        fontsize=13,
        weight="bold",
        color=_INK,
    )
    row = float(TOP_PANEL[0])
    text_left = _LEGEND_LEFT + 34
    room = WIDTH - 24 - text_left
    for name in shown:
        line = Line2D(
            [_fx(_LEGEND_LEFT + 2), _fx(_LEGEND_LEFT + 24)],
            [_fy(row + 7), _fy(row + 7)],
            transform=figure.transFigure,
            color=colours[name],
            linewidth=_LINE_WIDTH + 1,
            solid_capstyle="round",
        )
        figure.add_artist(line)
        _fitted(figure, text_left, row + 12, name, room, _cut_middle, fontsize=11, color=_INK)
        summary = " · ".join(peaks[name]) or "no data"
        _fitted(figure, text_left, row + 32, summary, room, _cut_end, fontsize=10, color=_MUTED)
        row += _LEGEND_ROW
    if hidden:
        figure.text(
            _fx(_LEGEND_LEFT), _fy(row + 16), f"+{hidden} more not shown", fontsize=11, color=_MUTED
        )


def _peak(value: float, word: str) -> str:
    return f"max {_count(value)} {word}"


def _count(value: float) -> str:
    return f"{value:,.0f}" if value == round(value) else f"{value:,.1f}"


def _wait(value: float) -> str:
    return f"{_minutes(value)} wait"


def _minutes(value: float) -> str:
    # The thresholds sit where rounding would reach the next unit, so 9.97 never shows "10.0".
    if value >= 119.5:
        return f"{value / 60:,.1f} h"
    if value >= 9.95:
        return f"{value:.0f} min"
    return f"{value:.1f} min"


def _fitted(
    figure: Figure,
    x: float,
    y: float,
    text: str,
    room: float,
    cut: Callable[[str, int], str],
    **style: Any,
) -> None:
    """Write `text` at (`x`, `y`) pixels, cut with `cut` to the most characters that fit in
    `room` pixels, as the figure will draw it."""
    artist = figure.text(_fx(x), _fy(y), text, **style)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]

    def fits() -> bool:
        return bool(artist.get_window_extent(renderer).width <= room)

    if fits():
        return
    kept, too_many = 0, len(text)
    while too_many - kept > 1:
        keep = (kept + too_many) // 2
        artist.set_text(cut(text, keep))
        if fits():
            kept = keep
        else:
            too_many = keep
    artist.set_text(cut(text, kept))


def _cut_end(text: str, keep: int) -> str:
    return text if len(text) <= keep else text[:keep].rstrip() + "…"


def _cut_middle(text: str, keep: int) -> str:
    """Runner types often share a long prefix and differ at the end, so keep both ends."""
    if len(text) <= keep:
        return text
    head = keep - keep * 2 // 5
    tail = text[len(text) - (keep - head) :] if keep > head else ""
    # A separator beside the ellipsis reads as more dots ("4xlarge....name").
    return text[:head].rstrip(_SEPARATORS) + "…" + tail.lstrip(_SEPARATORS)


def _utc(moment: datetime) -> datetime:
    # A naive datetime is taken as UTC, which is what every caller in the bot means by one.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
