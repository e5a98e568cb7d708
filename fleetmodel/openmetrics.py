"""Writing samples in OpenMetrics text for `promtool tsdb create-blocks-from openmetrics`: one
family after another, each series' samples in time order, timestamps in seconds."""

from __future__ import annotations

from typing import TextIO


def first_of(*values: float | None) -> float | None:
    """The earliest of the times that are set."""
    present = [v for v in values if v is not None]
    return min(present) if present else None


def number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class Out:
    """Series sampled at `times`, with `extra` labels (a cluster's external label) on each."""

    def __init__(self, out: TextIO, times: list[float], extra: dict[str, str]) -> None:
        self.out, self.times, self.extra = out, times, extra
        self.stamps = [f" {t:.0f}\n" for t in times]
        self.series = self.samples = 0

    def family(self, name: str, kind: str, text: str) -> None:
        self.out.write(f"# HELP {name} {text}\n# TYPE {name} {kind}\n")

    def write(
        self, metric: str, labels: dict[str, str], values: list[float], since: int = 0
    ) -> None:
        """One series: `values` at `times[since:]` onwards (a series exists from its first
        sample; an empty label is no label)."""
        merged = {**labels, **self.extra}
        text = ",".join(f'{k}="{v}"' for k, v in sorted(merged.items()) if v != "")
        prefix = f"{metric}{{{text}}} "
        stamps = self.stamps[since : since + len(values)]
        self.out.write("".join(prefix + number(v) + s for v, s in zip(values, stamps, strict=True)))
        self.series += 1
        self.samples += len(values)
