"""What the benchmarks share: the percentile they print (the nearest rank, no interpolation)."""

from __future__ import annotations


def percentile(values: list[float], share: float) -> float:
    """The value at `share` (0..1) of the sorted values, by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]
