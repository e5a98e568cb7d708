"""Writing samples in OpenMetrics text for `promtool tsdb create-blocks-from openmetrics`: one
family after another, each series' samples in time order, timestamps in seconds.

Into one file (`OneFile`), or cut at promtool's two-hour block boundaries as it is written
(`Pieces`): promtool parses its whole input once for every block it writes, so a history of
days costs it as many parses as blocks unless each piece holds one block; cutting while
writing spares reading the whole text back to cut it.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import IO, Protocol, TextIO

#: promtool's block alignment (its default --max-block-duration).
BLOCK_SECONDS = 2 * 3600
#: Bytes held for a piece before they are written out.
_FLUSH_BYTES = 1 << 20


def first_of(*values: float | None) -> float | None:
    """The earliest of the times that are set."""
    present = [v for v in values if v is not None]
    return min(present) if present else None


def number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class Sink(Protocol):
    def family(self, text: str) -> None:
        """A family's metadata lines, before its samples."""

    def samples(self, block: int, text: str) -> None:
        """Sample lines, all within the two-hour `block` (Unix seconds // BLOCK_SECONDS)."""


class OneFile:
    """Everything into one text stream, in the order written."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def family(self, text: str) -> None:
        self.out.write(text)

    def samples(self, block: int, text: str) -> None:
        self.out.write(text)

    def close(self) -> None:
        self.out.write("# EOF\n")


class Pieces:
    """One file per two-hour block under `directory` (`block-N.om`), each holding the metadata
    of every family it has samples of, in the order written, and ending with `# EOF`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._files: dict[int, IO[bytes]] = {}
        self._pending: dict[int, list[bytes]] = {}
        self._sizes: dict[int, int] = {}
        self._shown: dict[int, int] = {}  # block -> the family whose metadata it has last
        self._family = 0
        self._metadata = b""

    def family(self, text: str) -> None:
        self._family += 1
        self._metadata = text.encode()

    def samples(self, block: int, text: str) -> None:
        pending = self._pending.get(block)
        if pending is None:
            self._files[block] = (self.directory / f"block-{block}.om").open("wb")
            pending = self._pending[block] = []
            self._sizes[block] = 0
        data = text.encode()
        if self._shown.get(block) != self._family:
            pending.append(self._metadata)
            self._shown[block] = self._family
        pending.append(data)
        self._sizes[block] += len(data)
        if self._sizes[block] >= _FLUSH_BYTES:
            self._flush(block)

    def _flush(self, block: int) -> None:
        self._files[block].write(b"".join(self._pending[block]))
        self._pending[block].clear()
        self._sizes[block] = 0

    def close(self) -> list[Path]:
        """Finish every piece; their paths, oldest block first."""
        try:
            for block in self._files:
                self._pending[block].append(b"# EOF\n")
                self._flush(block)
        finally:
            for file in self._files.values():
                file.close()
        return [self.directory / f"block-{block}.om" for block in sorted(self._files)]


class Out:
    """Series sampled at `times`, with `extra` labels (a cluster's external label) on each."""

    def __init__(self, sink: Sink, times: list[float], extra: dict[str, str]) -> None:
        self.sink, self.times, self.extra = sink, times, extra
        self.stamps = [f" {t:.0f}\n" for t in times]
        blocks = [int(t) // BLOCK_SECONDS for t in times]
        #: Where each run of times within one block starts, and its block.
        self._starts = [i for i, b in enumerate(blocks) if i == 0 or b != blocks[i - 1]]
        self._blocks = [blocks[i] for i in self._starts]
        self.series = self.samples = 0

    def family(self, name: str, kind: str, text: str) -> None:
        self.sink.family(f"# HELP {name} {text}\n# TYPE {name} {kind}\n")

    def write(
        self, metric: str, labels: dict[str, str], values: list[float], since: int = 0
    ) -> None:
        """One series: `values` at `times[since:]` onwards (a series exists from its first
        sample; an empty label is no label)."""
        merged = {**labels, **self.extra}
        text = ",".join(f'{k}="{v}"' for k, v in sorted(merged.items()) if v != "")
        prefix = f"{metric}{{{text}}} "
        end = since + len(values)
        run = bisect.bisect_right(self._starts, since) - 1
        start = since
        while start < end:
            stop = self._starts[run + 1] if run + 1 < len(self._starts) else len(self.times)
            stop = min(stop, end)
            self.sink.samples(
                self._blocks[run],
                "".join(
                    prefix + number(v) + s
                    for v, s in zip(
                        values[start - since : stop - since], self.stamps[start:stop], strict=True
                    )
                ),
            )
            start, run = stop, run + 1
        self.series += 1
        self.samples += len(values)
