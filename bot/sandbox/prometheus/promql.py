"""What the simulated Prometheus reproduces of Prometheus itself: how its HTTP API parses times
and durations and writes values, and how `rate`, `sum` and `histogram_quantile` compute.

Each function names the Prometheus (2.42) code it follows, so that the stand-in answers with the
same numbers to the last digit as a real server holding the same samples.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

#: Prometheus' default lookback delta: how old a gauge's latest sample may be.
LOOKBACK_MS = 5 * 60 * 1000
#: Prometheus' limit on a range query's points per series.
MAX_POINTS = 11_000
_DURATION_RE = re.compile(
    r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?"
    r"(?:([0-9]+)ms)?"
)
_DURATION_UNITS_MS = (365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1)
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

SeriesLabels = dict[str, str]
Samples = list[tuple[SeriesLabels, float]]


class BadData(Exception):
    """A request Prometheus would answer with 400 and errorType bad_data."""


# -- parameters, as Prometheus' web API parses them ----------------------------------------------


def _go_float(text: str) -> float | None:
    """`text` as a number if Go's ParseFloat reads it as one (no spaces, no underscores)."""
    if text != text.strip() or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _round_half_away(x: float) -> float:
    return math.copysign(math.floor(abs(x) + 0.5), x)


def parse_timestamp(text: str, name: str) -> int:
    """Unix seconds or RFC 3339, to milliseconds (web/api/v1 parseTime, then FromTime)."""
    seconds = _go_float(text)
    if seconds is not None and math.isfinite(seconds):
        fraction, whole = math.modf(seconds)
        nanos = int(_round_half_away(fraction * 1000) / 1000 * 1e9)
        return (int(whole) * 10**9 + nanos) // 10**6
    if _RFC3339.fullmatch(text):
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:  # a day or hour out of range
            pass
        else:
            return (moment - EPOCH) // timedelta(milliseconds=1)
    raise BadData(f'invalid parameter "{name}": cannot parse "{text}" to a valid timestamp')


def parse_duration(text: str, name: str) -> int:
    """Seconds or a Prometheus duration (`2m`, `1h30m`), to nanoseconds (parseDuration)."""
    seconds = _go_float(text)
    if seconds is not None:
        nanos = seconds * 1e9
        if not math.isfinite(nanos) or abs(nanos) > 2**63 - 1:
            raise BadData(
                f'invalid parameter "{name}": cannot parse "{text}" to a valid duration.'
                " It overflows int64"
            )
        return int(nanos)
    found = _DURATION_RE.fullmatch(text)
    if found is not None and any(found.groups()):
        millis = sum(
            int(part) * unit
            for part, unit in zip(found.groups(), _DURATION_UNITS_MS, strict=True)
            if part
        )
        return millis * 10**6
    raise BadData(f'invalid parameter "{name}": cannot parse "{text}" to a valid duration')


def window_ms(window: str) -> int:
    return parse_duration(window, "window") // 10**6


def format_value(value: float) -> str:
    """A sample value as Prometheus writes it (Go's FormatFloat(v, 'f', -1, 64))."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = repr(value)
    if "e" in text or "E" in text:
        text = format(Decimal(text), "f")
    return text[:-2] if text.endswith(".0") else text


def api_time(ms: int) -> float | int:
    return ms // 1000 if ms % 1000 == 0 else ms / 1000


@dataclass(frozen=True)
class Span:
    """The samples a range selector picks at one time, and what `rate` derives from their
    times (the same for every series: all were sampled at the same times)."""

    lo: int
    hi: int
    to_start: float
    to_end: float
    sampled: float
    average: float
    range_seconds: float

    def extrapolated(self, column: Sequence[int], is_rate: bool) -> float:
        """`rate` (or `increase`) of a counter, as promql's extrapolatedRate computes it."""
        first = float(column[self.lo])
        result = float(column[self.hi]) - first
        previous = first
        for i in range(self.lo + 1, self.hi + 1):
            current = float(column[i])
            if current < previous:  # a counter reset
                result += previous
            previous = current
        to_start = self.to_start
        if result > 0 and first >= 0:
            # A counter cannot go below zero: extrapolate no further back than its zero point.
            to_zero = self.sampled * (first / result)
            to_start = min(to_start, to_zero)
        threshold = self.average * 1.1
        interval = self.sampled
        interval += to_start if to_start < threshold else self.average / 2
        interval += self.to_end if self.to_end < threshold else self.average / 2
        factor = interval / self.sampled
        if is_rate:
            factor /= self.range_seconds
        return result * factor


def add_in_order(values: Sequence[float]) -> float:
    """Added one after the other, as Prometheus' `sum` adds (no compensated summation)."""
    total = values[0]
    for value in values[1:]:
        total += value
    return total


def bucket_quantile(q: float, bounds: Sequence[float], counts: Sequence[float]) -> float:
    """promql's bucketQuantile: the q-quantile of cumulative bucket `counts` with upper
    `bounds` (ascending, +Inf last), interpolated linearly within its bucket."""
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    monotonic, highest = [], -math.inf
    for count in counts:
        # Rates of different buckets extrapolate differently: take the envelope.
        highest = max(highest, count)
        monotonic.append(highest)
    observations = monotonic[-1]
    if observations == 0:
        return math.nan
    rank = q * observations
    b = next((i for i in range(len(monotonic) - 1) if monotonic[i] >= rank), len(monotonic) - 1)
    if b == len(monotonic) - 1:
        return bounds[-2]  # the rank falls in +Inf: the highest finite bound
    if b == 0 and bounds[0] <= 0:
        return bounds[0]
    start, end, count = 0.0, bounds[b], monotonic[b]
    if b > 0:
        start = bounds[b - 1]
        count -= monotonic[b - 1]
        rank -= monotonic[b - 1]
    return start + (end - start) * (rank / count)


def go_divide(a: float, b: float) -> float:
    """Go's float division: x/0 is ±Inf, 0/0 NaN."""
    if b == 0:
        return math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a)
    return a / b


def label_order(labels: SeriesLabels) -> list[tuple[str, str]]:
    return sorted(labels.items())
