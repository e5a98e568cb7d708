"""A run's series as Prometheus stores them, carried into a real Prometheus the way its
remote-write protocol (1.0) carries samples: snappy-compressed protobuf `WriteRequest`s
(prometheus/prompb/remote.proto, types.proto) posted to `/api/v1/write`.

The samples go in one request per two-hour block, oldest first: Prometheus's head takes no
sample older than an hour before the newest it holds, so a request of later samples must
not come before one of earlier ones. Each series' labels are written once a request, sorted by
name with `__name__` among them, as the server keeps them; the samples in milliseconds.
"""

from __future__ import annotations

import bisect
import struct
from collections import defaultdict
from collections.abc import Iterator
from itertools import chain

#: The block alignment of Prometheus's head (its two-hour chunk range).
BLOCK_SECONDS = 2 * 3600
#: prompb.MetricMetadata's MetricType values.
KINDS = {"counter": 1, "gauge": 2, "histogram": 3}

_double = struct.Struct("<d").pack


def first_of(*values: float | None) -> float | None:
    """The earliest of the times that are set."""
    present = [v for v in values if v is not None]
    return min(present) if present else None


def varint(n: int) -> bytes:
    """`n` as a protobuf base-128 varint (n >= 0)."""
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def message(number: int, data: bytes) -> bytes:
    """A length-delimited field `number` holding `data`."""
    return varint(number << 3 | 2) + varint(len(data)) + data


def snappy_block(data: bytes) -> bytes:
    """`data` in snappy's block format as one literal: valid snappy every decoder reads, left
    uncompressed (the request travels over loopback)."""
    if not data:
        return b"\x00"
    size = len(data) - 1
    return varint(len(data)) + bytes([63 << 2]) + size.to_bytes(4, "little") + data


class Requests:
    """Series written block by block; `bodies()` gives the requests to post, oldest first."""

    def __init__(self) -> None:
        self._blocks: dict[int, list[bytes]] = defaultdict(list)
        self._metadata: list[bytes] = []

    def family(self, name: str, kind: str, text: str) -> None:
        self._metadata.append(
            varint(1 << 3)
            + varint(KINDS[kind])
            + message(2, name.encode())
            + message(4, text.encode())
        )

    def series(self, block: int, data: bytes) -> None:
        """One `TimeSeries` message's bytes, all of whose samples fall within `block`."""
        self._blocks[block].append(message(1, data))

    def bodies(self) -> Iterator[bytes]:
        """One snappy-compressed `WriteRequest` a block, oldest first; the families' metadata
        with the first."""
        metadata = b"".join(message(3, m) for m in self._metadata)
        for block in sorted(self._blocks):
            yield snappy_block(b"".join(self._blocks.pop(block)) + metadata)
            metadata = b""


class Out:
    """Series sampled at `times`, with `extra` labels (a cluster's external label) on each."""

    def __init__(self, sink: Requests, times: list[float], extra: dict[str, str]) -> None:
        self.sink, self.times, self.extra = sink, times, extra
        # A sample's timestamp field (2, a varint of milliseconds), after its value's (1); and
        # what comes before the value: the sample's field (2 of TimeSeries), its length, the
        # value's tag.
        self._stamps = [b"\x10" + varint(round(t * 1000)) for t in times]
        self._heads = [b"\x12" + bytes((9 + len(stamp),)) + b"\x09" for stamp in self._stamps]
        blocks = [int(t) // BLOCK_SECONDS for t in times]
        #: Where each run of times within one block starts, and its block.
        self._starts = [i for i, b in enumerate(blocks) if i == 0 or b != blocks[i - 1]]
        self._blocks = [blocks[i] for i in self._starts]
        self.series = self.samples = 0

    def family(self, name: str, kind: str, text: str) -> None:
        self.sink.family(name, kind, text)

    def write(
        self, metric: str, labels: dict[str, str], values: list[float], since: int = 0
    ) -> None:
        """One series: `values` at `times[since:]` onwards (a series exists from its first
        sample; an empty label is no label)."""
        merged = {**labels, **self.extra, "__name__": metric}
        head = b"".join(
            message(1, message(1, k.encode()) + message(2, v.encode()))
            for k, v in sorted(merged.items())
            if v != ""
        )
        end = since + len(values)
        run = bisect.bisect_right(self._starts, since) - 1
        start = since
        while start < end:
            stop = self._starts[run + 1] if run + 1 < len(self._starts) else len(self.times)
            stop = min(stop, end)
            doubles = map(_double, values[start - since : stop - since])
            samples = b"".join(
                chain.from_iterable(
                    zip(self._heads[start:stop], doubles, self._stamps[start:stop], strict=True)
                )
            )
            self.sink.series(self._blocks[run], head + samples)
            start, run = stop, run + 1
        self.series += 1
        self.samples += len(values)
