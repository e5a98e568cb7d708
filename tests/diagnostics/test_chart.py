"""The queueing chart: a PNG of the promised size, the same bytes for the same data (also when
drawn in two threads at once), each runner type in its own colour in both panels, and no failure
on gaps, empty data or too many types."""

from __future__ import annotations

import io
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageChops

from bot.fleet.chart import (
    BOTTOM_PANEL,
    HEIGHT,
    MAX_SERIES,
    PALETTE,
    PLOT_LEFT,
    PLOT_RIGHT,
    TOP_PANEL,
    WIDTH,
    ChartData,
    Series,
    render_chart,
)

END = datetime(2024, 3, 4, 15, 7, tzinfo=UTC)
START = END - timedelta(hours=6)
NAN = float("nan")
RUNNER_TYPES = (
    "linux.2xlarge",
    "linux.g5.4xlarge.nvidia.gpu",
    "windows.4xlarge.nonephemeral",
    "macos-m1-stable",
    "linux.arm64.m7g.4xlarge",
    "linux.rocm.gpu.2",
    "linux.12xlarge",
    "linux.4xlarge",
    "linux.24xl.spr-metal",
    "am2.linux.large",
)


def _series(name: str, values: list[float], start: datetime = START) -> Series:
    """One sample a minute from `start`."""
    step = timedelta(minutes=1)
    return Series(name, tuple((start + i * step, value) for i, value in enumerate(values)))


def _wave(index: int, scale: float, count: int = 360) -> list[float]:
    return [
        max(0.0, scale * (0.5 + 0.5 * math.sin(i / 40 + index)) + 3 * math.sin(i / 7))
        for i in range(count)
    ]


def _chart(types: int = 3, **changes: Any) -> ChartData:
    names = RUNNER_TYPES[:types]
    data = ChartData(
        title="Jobs queueing by runner type, last 6 h",
        queued=tuple(_series(name, _wave(i, 40 / (i + 1))) for i, name in enumerate(names)),
        wait_minutes=tuple(
            _series(name, _wave(i + 3, 60 / (i + 1))) for i, name in enumerate(names)
        ),
        start=START,
        end=END,
        marker=END - timedelta(minutes=47),
    )
    return replace(data, **changes)


def _image(data: ChartData) -> Image.Image:
    image = Image.open(io.BytesIO(render_chart(data)))
    image.load()
    return image.convert("RGB")


def _pixels_of(
    image: Image.Image, box: tuple[int, int, int, int], colour: str, tolerance: int = 24
) -> int:
    """How many pixels in `box` are within `tolerance` of `colour` on every channel."""
    region = image.crop(box)
    difference = ImageChops.difference(region, Image.new("RGB", region.size, colour))
    red, green, blue = difference.split()
    worst = ImageChops.lighter(ImageChops.lighter(red, green), blue)
    return worst.point(lambda value: 255 if value <= tolerance else 0).histogram()[255]


def _top(x0: int = 0, x1: int = PLOT_RIGHT + 2) -> tuple[int, int, int, int]:
    return (x0, TOP_PANEL[0] - 2, x1, TOP_PANEL[1] + 3)


def _bottom(x0: int = 0, x1: int = PLOT_RIGHT + 2) -> tuple[int, int, int, int]:
    return (x0, BOTTOM_PANEL[0] - 2, x1, BOTTOM_PANEL[1] + 3)


def test_the_chart_is_a_png_of_the_promised_size(tmp_path: Path) -> None:
    png = render_chart(_chart(types=8))
    example = tmp_path / "chart.png"
    example.write_bytes(png)

    with Image.open(example) as image:
        assert image.format == "PNG"
        assert image.size == (WIDTH, HEIGHT) == (1200, 700)
        image.verify()


def test_the_same_data_gives_the_same_bytes() -> None:
    assert render_chart(_chart()) == render_chart(_chart())


def test_two_charts_drawn_at_once_are_the_ones_drawn_alone() -> None:
    """Diagnostics and /queue-status draw in worker threads, possibly together."""
    first, second = _chart(types=8), _chart(types=3, marker=None)
    alone = (render_chart(first), render_chart(second))
    with ThreadPoolExecutor(max_workers=2) as pool:
        for _ in range(3):
            together = tuple(pool.map(render_chart, (first, second)))
            assert together == alone


def test_naive_datetimes_count_as_utc() -> None:
    aware = _chart(types=2)
    naive = ChartData(
        title=aware.title,
        queued=tuple(
            Series(s.runner_type, tuple((t.replace(tzinfo=None), v) for t, v in s.points))
            for s in aware.queued
        ),
        wait_minutes=aware.wait_minutes,
        start=START.replace(tzinfo=None),
        end=END,
        marker=aware.marker,
    )
    assert render_chart(naive) == render_chart(aware)


def test_the_first_runner_type_has_its_colour_in_both_panels() -> None:
    image = _image(_chart())

    assert _pixels_of(image, _top(), PALETTE[0]) > 200
    assert _pixels_of(image, _bottom(), PALETTE[0]) > 200


def test_a_runner_type_keeps_its_colour_across_panels() -> None:
    first, second = RUNNER_TYPES[:2]
    data = _chart(
        queued=(_series(first, _wave(0, 30)), _series(second, _wave(1, 20))),
        wait_minutes=(_series(second, _wave(2, 50)),),
    )
    image = _image(data)

    assert _pixels_of(image, _top(), PALETTE[1]) > 200
    assert _pixels_of(image, _bottom(), PALETTE[1]) > 200
    assert _pixels_of(image, _bottom(), PALETTE[0]) == 0


def test_a_gap_breaks_the_line() -> None:
    # Flat at 10 jobs, with no samples over the middle 40 % of the window.
    values = [NAN if 0.3 * 360 <= i < 0.7 * 360 else 10.0 for i in range(360)]
    image = _image(_chart(queued=(_series(RUNNER_TYPES[0], values),), wait_minutes=()))

    assert _pixels_of(image, _top(150, 250), PALETTE[0]) > 50
    assert _pixels_of(image, _top(750, 850), PALETTE[0]) > 50
    assert _pixels_of(image, _top(400, 600), PALETTE[0]) == 0


def test_samples_outside_the_window_are_cut_at_its_edges() -> None:
    before = START - timedelta(hours=1)
    values = _wave(0, 30, count=8 * 60)
    image = _image(_chart(queued=(_series(RUNNER_TYPES[0], values, before),), wait_minutes=()))

    assert _pixels_of(image, _top(150, 850), PALETTE[0]) > 200
    assert _pixels_of(image, _top(0, PLOT_LEFT - 4), PALETTE[0]) == 0
    assert _pixels_of(image, _top(PLOT_RIGHT + 6, PLOT_RIGHT + 26), PALETTE[0]) == 0


def _no_data_shown(image: Image.Image, panel: tuple[int, int]) -> bool:
    """Grey text in the middle of the panel, where an empty one says "no data"."""
    centre_x, centre_y = (PLOT_LEFT + PLOT_RIGHT) // 2, sum(panel) // 2
    region = image.crop((centre_x - 80, centre_y - 20, centre_x + 80, centre_y + 20)).convert("L")
    return region.point(lambda value: 255 if value < 200 else 0).getbbox() is not None


def test_empty_data_renders_no_data_in_both_panels() -> None:
    image = _image(_chart(queued=(), wait_minutes=()))

    assert image.size == (WIDTH, HEIGHT)
    assert _no_data_shown(image, TOP_PANEL)
    assert _no_data_shown(image, BOTTOM_PANEL)


def test_a_panel_without_samples_says_no_data_and_the_other_still_draws() -> None:
    gaps_only = _series(RUNNER_TYPES[1], [NAN] * 30)
    data = _chart(
        queued=(_series(RUNNER_TYPES[0], _wave(0, 30)),),
        wait_minutes=(Series(RUNNER_TYPES[0], ()), gaps_only),
    )
    image = _image(data)

    assert _pixels_of(image, _top(), PALETTE[0]) > 200
    assert _no_data_shown(image, BOTTOM_PANEL)
    assert _pixels_of(image, _bottom(), PALETTE[0]) == 0


def test_all_zero_data_draws_a_line_along_the_floor() -> None:
    zeros = [0.0] * 360
    image = _image(_chart(queued=(_series(RUNNER_TYPES[0], zeros),), wait_minutes=()))

    assert _pixels_of(image, _top(), PALETTE[0]) > 200


def test_a_single_sample_shows_as_a_dot() -> None:
    moment = START + timedelta(hours=3)
    data = _chart(queued=(Series(RUNNER_TYPES[0], ((moment, 4.0),)),), wait_minutes=())

    assert _pixels_of(_image(data), _top(), PALETTE[0]) > 4


def test_more_runner_types_than_colours_only_add_a_note_to_the_legend() -> None:
    drawn = _image(_chart(types=MAX_SERIES))
    crowded = _image(_chart(types=len(RUNNER_TYPES)))

    plots = (0, 0, PLOT_RIGHT + 10, HEIGHT)
    assert ImageChops.difference(drawn.crop(plots), crowded.crop(plots)).getbbox() is None
    assert ImageChops.difference(drawn, crowded).getbbox() is not None
    for colour in PALETTE[:-1]:
        assert _pixels_of(crowded, _top(), colour) > 0


def test_long_runner_type_names_and_titles_stay_inside_the_image() -> None:
    long_name = "linux.arm64.m7g.4xlarge.ephemeral." * 6 + "end"
    data = _chart(
        title="Jobs queueing by runner type " * 8,
        queued=(_series(long_name, _wave(0, 30)), _series(long_name + ".2", _wave(1, 20))),
        wait_minutes=(_series(long_name, _wave(2, 40)),),
    )
    image = _image(data)

    right_margin = image.crop((WIDTH - 20, 0, WIDTH, HEIGHT)).convert("L")
    assert right_margin.point(lambda value: 255 if value <= 240 else 0).getbbox() is None
    assert _pixels_of(image, _top(), PALETTE[1]) > 200


def test_a_marker_inside_the_window_is_drawn_and_one_outside_is_not() -> None:
    without = render_chart(_chart(marker=None))

    assert render_chart(_chart()) != without
    assert render_chart(_chart(marker=START - timedelta(minutes=1))) == without


def test_a_window_that_ends_before_it_starts_is_refused() -> None:
    with pytest.raises(ValueError, match="window is empty"):
        render_chart(_chart(start=END, end=END))
