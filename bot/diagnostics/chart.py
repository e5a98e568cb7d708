"""The queueing chart posted in an alert's Slack thread.

This module owns the picture only: given queued jobs and the longest wait per runner type over a
window, it returns PNG bytes with two panels on one time axis. Fetching the numbers and uploading
the file belong to its callers. Nothing here reads a clock, a file or the network, so the same
data always gives the same bytes.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from PIL import Image, ImageDraw, ImageFont

WIDTH = 1200
HEIGHT = 700
MAX_SERIES = 8

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

# Layout in output pixels. The panels' rows and the plots' right edge are public so that a test
# can look for a series inside one panel without guessing.
PLOT_RIGHT = 900
TOP_PANEL = (92, 330)
BOTTOM_PANEL = (384, 622)

_MARGIN = 24
_LEGEND_LEFT = 928
_LEGEND_RIGHT = WIDTH - _MARGIN
_LEGEND_ROW = 52

# Pillow draws lines without anti-aliasing: drawing at twice the size and downsampling with a
# Lanczos filter gives smooth lines. The downsampling is about a third of the rendering time.
_SCALE = 2

_INK = "#1A1A1A"
_MUTED = "#5C5C5C"
_FAINT = "#8A8A8A"
_GRID = "#E6E6E6"
_GRID_TIME = "#F0F0F0"
_AXIS = "#B4B4B4"
_MARKER = "#6E6E6E"

_LINE_WIDTH = 2.5
_Y_TICKS = 5  # at most this many intervals on a value axis
_X_TICKS = 8  # at most this many intervals on the time axis
_TIME_STEPS_MIN = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440)
_ELLIPSIS = "…"
_SEPARATORS = " .-_/:"
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

_Font = ImageFont.ImageFont | ImageFont.FreeTypeFont
_Point = tuple[float, float]  # seconds since the window's start, value


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


@dataclass(frozen=True)
class _Trace:
    runner_type: str
    colour: str
    runs: tuple[tuple[_Point, ...], ...]  # pieces of line between gaps, clipped to the window


@dataclass(frozen=True)
class _Axis:
    low: float
    high: float
    step: float

    def ticks(self) -> list[float]:
        first = round(self.low / self.step)
        count = round((self.high - self.low) / self.step)
        return [(first + i) * self.step for i in range(count + 1)]

    def label(self, value: float) -> str:
        decimals = max(0, -math.floor(math.log10(self.step) + 1e-9))
        # abs() turns a computed -0.0 into 0, which would otherwise print as "-0".
        return f"{abs(value) if value == 0 else value:,.{decimals}f}"


def render_chart(data: ChartData) -> bytes:
    """Draw `data` as a 1200 x 700 PNG: queued jobs on top, longest wait below.

    Raises ValueError when `data.end` is not after `data.start`: there is no window to draw.
    """
    start, end = _utc(data.start), _utc(data.end)
    if end <= start:
        raise ValueError(f"the chart's window is empty: start {start} is not before end {end}")
    span = (end - start).total_seconds()

    names = _runner_types(data)
    shown = names[:MAX_SERIES]
    colours = {name: PALETTE[index] for index, name in enumerate(shown)}
    queued = _traces(data.queued, colours, start, span)
    waits = _traces(data.wait_minutes, colours, start, span)
    queued_axis = _value_axis(queued, min_step=1.0)
    wait_axis = _value_axis(waits, min_step=0.1)

    canvas = _Canvas()
    plot_left = _plot_left(canvas, (queued_axis, wait_axis))
    time_ticks = _time_ticks(start, end)

    canvas.text(
        _MARGIN, 20, _shorten_end(canvas, data.title, 24, WIDTH - 2 * _MARGIN), 24, _INK, bold=True
    )
    panels = (
        ("Queued jobs", TOP_PANEL, queued, queued_axis, False),
        ("Longest wait (minutes)", BOTTOM_PANEL, waits, wait_axis, True),
    )
    header_right = 0.0
    for heading, (top, bottom), traces, axis, labelled in panels:
        canvas.text(_MARGIN, top - 30, heading, 17, _INK, bold=True)
        header_right = max(header_right, _MARGIN + canvas.width(heading, 17))
        box = (plot_left, top, PLOT_RIGHT, bottom)
        _draw_panel(canvas, box, traces, axis, time_ticks, start, span, labelled=labelled)

    if data.marker is not None:
        label = f"{data.marker_label} {_utc(data.marker):%H:%M}".strip()
        _draw_marker(canvas, _utc(data.marker), label, plot_left, start, span, header_right)
    _draw_time_note(canvas, plot_left, start, end)
    _draw_legend(canvas, shown, len(names) - len(shown), colours, queued, waits)
    return canvas.png()


class _Canvas:
    """A white image drawn at `_SCALE` times the output size, addressed in output pixels."""

    def __init__(self) -> None:
        self.image = Image.new("RGB", (WIDTH * _SCALE, HEIGHT * _SCALE), "white")
        self.draw = ImageDraw.Draw(self.image)
        self._fonts: dict[int, _Font] = {}

    def font(self, size: int) -> _Font:
        if size not in self._fonts:
            self._fonts[size] = ImageFont.load_default(size=size * _SCALE)
        return self._fonts[size]

    def width(self, text: str, size: int) -> float:
        return self.font(size).getlength(text) / _SCALE

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: int,
        fill: str,
        align: str = "l",
        valign: str = "t",
        *,
        bold: bool = False,
    ) -> None:
        """Write `text` with its left, middle or right (`align`) at `x`, and its capitals' top or
        middle (`valign`) at `y`; placing by the capitals keeps rows even whatever the letters."""
        font = self.font(size)
        _, cap_top, _, cap_bottom = font.getbbox("0H")
        shift = {"l": 0.0, "m": 0.5, "r": 1.0}[align] * font.getlength(text)
        rise = cap_top if valign == "t" else (cap_top + cap_bottom) / 2
        # The built-in face has no bold; a thin outline in the text's own colour stands in.
        stroke = 1 if bold else 0
        self.draw.text(
            (x * _SCALE - shift, y * _SCALE - rise),
            text,
            fill=fill,
            font=font,
            stroke_width=stroke,
            stroke_fill=fill,
        )

    def line(self, points: Sequence[_Point], fill: str, width: float) -> None:
        scaled = [(x * _SCALE, y * _SCALE) for x, y in points]
        self.draw.line(scaled, fill=fill, width=max(1, round(width * _SCALE)))

    def polyline(self, points: Sequence[_Point], fill: str, width: float) -> None:
        """A thick line with round ends. Its joints are left plain: at twice the size their
        notches vanish in the downsampling, and rounding every joint triples the drawing time."""
        scaled = [(x * _SCALE, y * _SCALE) for x, y in points]
        pixels = max(1, round(width * _SCALE))
        self.draw.line(scaled, fill=fill, width=pixels)
        for x, y in (scaled[0], scaled[-1]):
            self.dot_scaled(x, y, pixels / 2, fill)

    def dot(self, x: float, y: float, radius: float, fill: str) -> None:
        self.dot_scaled(x * _SCALE, y * _SCALE, radius * _SCALE, fill)

    def dot_scaled(self, x: float, y: float, radius: float, fill: str) -> None:
        self.draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=fill)

    def png(self) -> bytes:
        output = self.image.resize((WIDTH, HEIGHT), Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        output.save(buffer, format="PNG")
        return buffer.getvalue()


def _utc(moment: datetime) -> datetime:
    # A naive datetime is taken as UTC, which is what every caller in the bot means by one.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _runner_types(data: ChartData) -> list[str]:
    """Runner types in the caller's order (worst first), each once, across both panels."""
    names: dict[str, None] = {}
    for series in (*data.queued, *data.wait_minutes):
        names.setdefault(series.runner_type, None)
    return list(names)


def _traces(
    series: Sequence[Series], colours: dict[str, str], start: datetime, span: float
) -> list[_Trace]:
    origin = start.timestamp()
    traces = []
    for one in series:
        colour = colours.get(one.runner_type)
        if colour is None:
            continue
        samples = sorted(
            ((_timestamp(moment) - origin, float(value)) for moment, value in one.points),
            key=lambda sample: sample[0],
        )
        runs: list[tuple[_Point, ...]] = []
        current: list[_Point] = []
        for sample in samples:
            if math.isfinite(sample[1]):
                current.append(sample)
            else:
                runs.append(tuple(current))
                current = []
        runs.append(tuple(current))
        clipped = tuple(piece for run in runs if (piece := _clip(run, span)))
        traces.append(_Trace(one.runner_type, colour, clipped))
    return traces


def _timestamp(moment: datetime) -> float:
    # Cheaper than converting every sample; a naive datetime still counts as UTC.
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC).timestamp()
    return moment.timestamp()


def _clip(run: tuple[_Point, ...], span: float) -> tuple[_Point, ...]:
    """The part of a gapless run inside [0, span], with its ends interpolated at the edges."""
    if not run or (run[0][0] >= 0 and run[-1][0] <= span):
        return run
    if len(run) == 1:
        return ()
    kept: list[_Point] = []
    for (t0, v0), (t1, v1) in itertools.pairwise(run):
        if t1 < 0 or t0 > span:
            continue
        first = (max(t0, 0.0), _interpolate(t0, v0, t1, v1, max(t0, 0.0)))
        last = (min(t1, span), _interpolate(t0, v0, t1, v1, min(t1, span)))
        if not kept or kept[-1] != first:
            kept.append(first)
        kept.append(last)
    return tuple(kept)


def _interpolate(t0: float, v0: float, t1: float, v1: float, at: float) -> float:
    if t1 == t0:
        return v1
    return v0 + (v1 - v0) * (at - t0) / (t1 - t0)


def _value_axis(traces: Sequence[_Trace], min_step: float) -> _Axis | None:
    """A 0-based axis stepping by 1, 2 or 5 x 10^k; None when there is nothing to plot."""
    values = [value for trace in traces for run in trace.runs for _, value in run]
    if not values:
        return None
    low, high = min(0.0, min(values)), max(0.0, max(values))
    if high - low <= 0:
        high = low + 1.0
    step = max(_nice_step((high - low) / _Y_TICKS), min_step)
    # The tolerance keeps a maximum that is a whole number of steps from growing one more step.
    low = math.floor(low / step + 1e-9) * step
    high = math.ceil(high / step - 1e-9) * step
    return _Axis(low, high, step)


def _nice_step(raw: float) -> float:
    base = 10.0 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 5):
        if multiple * base >= raw * (1 - 1e-9):
            return multiple * base
    return 10 * base


def _plot_left(canvas: _Canvas, axes: Sequence[_Axis | None]) -> float:
    """Both plots start where the widest value label of either panel ends, so they line up."""
    labels = [axis.label(value) for axis in axes if axis for value in axis.ticks()]
    widest = max((canvas.width(label, 14) for label in labels), default=0.0)
    return max(_MARGIN + widest + 10, 64.0)


def _time_ticks(start: datetime, end: datetime) -> list[datetime]:
    """UTC times on round minutes, hours or days, at most `_X_TICKS` intervals apart."""
    minutes = (end - start).total_seconds() / 60
    step = next((m for m in _TIME_STEPS_MIN if minutes / m <= _X_TICKS), None)
    if step is None:
        step = 1440 * math.ceil(minutes / 1440 / _X_TICKS)
    seconds = step * 60
    first = math.ceil(start.timestamp() / seconds) * seconds
    last = end.timestamp()
    return [
        datetime.fromtimestamp(moment, UTC)
        for moment in range(first, math.floor(last) + 1, seconds)
    ]


def _time_label(tick: datetime) -> str:
    # Midnight shows the new day instead, so a window across days never repeats "00:00".
    # Month names come from a table: strftime's would follow the process's locale.
    if tick.hour == 0 and tick.minute == 0:
        return f"{_MONTHS[tick.month - 1]} {tick.day}"
    return f"{tick:%H:%M}"


def _draw_panel(
    canvas: _Canvas,
    box: tuple[float, float, float, float],
    traces: Sequence[_Trace],
    axis: _Axis | None,
    time_ticks: Sequence[datetime],
    start: datetime,
    span: float,
    *,
    labelled: bool,
) -> None:
    left, top, right, bottom = box
    width, height = right - left, bottom - top

    def x_of(seconds: float) -> float:
        return left + width * seconds / span

    for tick in time_ticks:
        x = x_of((tick - start).total_seconds())
        canvas.line([(x, top), (x, bottom)], _GRID_TIME, 1)
        if labelled:
            canvas.line([(x, bottom), (x, bottom + 5)], _AXIS, 1)
            canvas.text(x, bottom + 12, _time_label(tick), 14, _MUTED, align="m")

    if axis is None:
        canvas.line([(left, bottom), (right, bottom)], _AXIS, 1)
        canvas.text((left + right) / 2, (top + bottom) / 2, "no data", 20, _FAINT, "m", "m")
        return

    def y_of(value: float) -> float:
        return bottom - height * (value - axis.low) / (axis.high - axis.low)

    for value in axis.ticks():
        y = y_of(value)
        colour = _AXIS if value == axis.low else _GRID
        canvas.line([(left, y), (right, y)], colour, 1)
        canvas.text(left - 10, y, axis.label(value), 14, _MUTED, align="r", valign="m")

    # The caller lists the worst runner type first; drawing it last keeps it on top.
    for trace in reversed(traces):
        for run in trace.runs:
            points = [(x_of(seconds), y_of(value)) for seconds, value in run]
            if len(points) == 1:
                canvas.dot(*points[0], _LINE_WIDTH * 1.4, trace.colour)
            else:
                canvas.polyline(points, trace.colour, _LINE_WIDTH)


def _draw_marker(
    canvas: _Canvas,
    marker: datetime,
    label: str,
    plot_left: float,
    start: datetime,
    span: float,
    header_right: float,
) -> None:
    seconds = (marker - start).total_seconds()
    if not 0 <= seconds <= span:
        return
    x = plot_left + (PLOT_RIGHT - plot_left) * seconds / span
    for top, bottom in (TOP_PANEL, BOTTOM_PANEL):
        dash = float(top)
        while dash < bottom:
            canvas.line([(x, dash), (x, min(dash + 6, bottom))], _MARKER, 1.5)
            dash += 10
    label = _shorten_end(canvas, label, 14, 220)
    label_width = canvas.width(label, 14)
    # Centred over the line where it fits, and never over the panel's heading.
    label_left = min(max(x - label_width / 2, header_right + 16), PLOT_RIGHT - label_width)
    row = TOP_PANEL[0] - 18
    canvas.text(label_left, row, label, 14, _MARKER, valign="m")
    # The stem joins label and line only when the label could sit above the line.
    if label_left <= x <= label_left + label_width:
        canvas.line([(x, row + 8), (x, TOP_PANEL[0])], _MARKER, 1.5)


def _draw_time_note(canvas: _Canvas, plot_left: float, start: datetime, end: datetime) -> None:
    first, last = f"{start:%Y-%m-%d}", f"{end:%Y-%m-%d}"
    dates = first if first == last else f"{first} to {last}"
    note = f"Time in UTC, {dates}"
    canvas.text((plot_left + PLOT_RIGHT) / 2, BOTTOM_PANEL[1] + 40, note, 14, _FAINT, align="m")


def _draw_legend(
    canvas: _Canvas,
    shown: Sequence[str],
    hidden: int,
    colours: dict[str, str],
    queued: Sequence[_Trace],
    waits: Sequence[_Trace],
) -> None:
    left, text_left = _LEGEND_LEFT, _LEGEND_LEFT + 34
    room = _LEGEND_RIGHT - text_left
    if not shown:
        return
    canvas.text(left, TOP_PANEL[0] - 30, "Runner type", 17, _INK, bold=True)
    row = float(TOP_PANEL[0])
    for name in shown:
        colour = colours[name]
        canvas.polyline([(left + 2, row + 6), (left + 24, row + 6)], colour, _LINE_WIDTH + 1)
        canvas.text(text_left, row, _shorten_middle(canvas, name, 15, room), 15, _INK)
        summary = _summary(name, queued, waits)
        canvas.text(text_left, row + 22, _shorten_end(canvas, summary, 13, room), 13, _MUTED)
        row += _LEGEND_ROW
    if hidden:
        canvas.text(left, row + 4, f"+{hidden} more not shown", 15, _MUTED)


def _summary(name: str, queued: Sequence[_Trace], waits: Sequence[_Trace]) -> str:
    """The legend's second line: each panel's peak for this runner type."""
    peak_queued = _peak(name, queued)
    peak_wait = _peak(name, waits)
    parts = []
    if peak_queued is not None:
        parts.append(f"max {_count(peak_queued)} queued")
    if peak_wait is not None:
        parts.append(f"{_minutes(peak_wait)} wait")
    return " · ".join(parts) or "no data"


def _peak(name: str, traces: Sequence[_Trace]) -> float | None:
    values = [v for t in traces if t.runner_type == name for run in t.runs for _, v in run]
    return max(values, default=None)


def _count(value: float) -> str:
    return f"{value:,.0f}" if value == round(value) else f"{value:,.1f}"


def _minutes(value: float) -> str:
    # The thresholds sit where rounding would reach the next unit, so 9.97 never shows "10.0".
    if value >= 119.5:
        return f"{value / 60:,.1f} h"
    if value >= 9.95:
        return f"{value:.0f} min"
    return f"{value:.1f} min"


def _shorten_end(canvas: _Canvas, text: str, size: int, room: float) -> str:
    return _shorten(canvas, text, size, room, lambda keep: text[:keep].rstrip() + _ELLIPSIS)


def _shorten_middle(canvas: _Canvas, text: str, size: int, room: float) -> str:
    """Runner types often share a long prefix and differ at the end, so keep both ends."""

    def cut(keep: int) -> str:
        head = keep - keep * 2 // 5
        tail = text[len(text) - (keep - head) :] if keep > head else ""
        # A separator beside the ellipsis reads as more dots ("4xlarge....name").
        return text[:head].rstrip(_SEPARATORS) + _ELLIPSIS + tail.lstrip(_SEPARATORS)

    return _shorten(canvas, text, size, room, cut)


def _shorten(canvas: _Canvas, text: str, size: int, room: float, cut: Callable[[int], str]) -> str:
    """`text` if it fits in `room`, else `cut(keep)` with the most characters kept that fits."""
    if canvas.width(text, size) <= room:
        return text
    fits, too_many = 0, len(text)
    while too_many - fits > 1:
        keep = (fits + too_many) // 2
        if canvas.width(cut(keep), size) <= room:
            fits = keep
        else:
            too_many = keep
    return cut(fits)
