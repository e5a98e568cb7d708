"""A run's series as Prometheus stores them, carried into a real Prometheus the way its
remote-write protocol (1.0) carries samples: snappy-compressed protobuf `WriteRequest`s
(prometheus/prompb/remote.proto, types.proto) posted to `/api/v1/write`.

The samples go in one request per two-hour block, oldest first: Prometheus's head takes no
sample older than an hour before the newest it holds, so a request of later samples must
not come before one of earlier ones. Each series' labels are written once a request, sorted by
name with `__name__` among them, as the server keeps them; the samples in milliseconds.
"""

from __future__ import annotations

import functools
import struct
from collections import defaultdict
from collections.abc import Iterator, Sequence
from itertools import accumulate, chain, repeat

#: The block alignment of Prometheus's head (its two-hour chunk range).
BLOCK_SECONDS = 2 * 3600
#: prompb.MetricMetadata's MetricType values.
KINDS = {"counter": 1, "gauge": 2, "histogram": 3}

_double = struct.Struct("<d").pack


def first_of(*values: float | None) -> float | None:
    """The earliest of the times that are set."""
    first: float | None = None
    for value in values:
        if value is not None and (first is None or value < first):
            first = value
    return first


def varint(n: int) -> bytes:
    """`n` as a protobuf base-128 varint (n >= 0)."""
    if n <= 0x7F:
        return _ONE_BYTE[n]
    if n <= 0x3FFF:
        return bytes((n & 0x7F | 0x80, n >> 7))
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_ONE_BYTE = [bytes((n,)) for n in range(0x80)]


def message(number: int, data: bytes) -> bytes:
    """A length-delimited field `number` holding `data`."""
    return varint(number << 3 | 2) + varint(len(data)) + data


def snappy_block(data: bytes) -> bytes:
    """`data` in snappy's block format as one literal: valid snappy every decoder reads, left
    uncompressed (the request travels over loopback)."""
    return _snappy_head(len(data)) + data if data else b"\x00"


def _snappy_head(size: int) -> bytes:
    """What comes before `size` bytes (size > 0) in `snappy_block`: the length uncompressed,
    then one literal's tag (a 4-byte length follows) and its length less one."""
    return varint(size) + bytes([63 << 2]) + (size - 1).to_bytes(4, "little")


class Requests:
    """Series written block by block; `bodies()` gives the requests to post, oldest first."""

    def __init__(self) -> None:
        self._blocks: dict[int, list[bytes]] = defaultdict(list)
        #: The bytes of each block's series so far.
        self._sizes: dict[int, int] = defaultdict(int)
        self._metadata: list[bytes] = []

    def family(self, name: str, kind: str, text: str) -> None:
        self._metadata.append(
            varint(1 << 3)
            + varint(KINDS[kind])
            + message(2, name.encode())
            + message(4, text.encode())
        )

    def series(self, block: int, *data: bytes) -> None:
        """One `TimeSeries` message's bytes (in parts, one after another), all of whose samples
        fall within `block`."""
        parts = self._blocks[block]
        length = sum(map(len, data))
        tag = b"\x0a" + varint(length)  # field 1, length-delimited
        parts.append(tag)
        parts.extend(data)
        self._sizes[block] += len(tag) + length

    def bodies(self) -> Iterator[bytes]:
        """One snappy-compressed `WriteRequest` a block, oldest first; the families' metadata
        with the first."""
        metadata = b"".join(message(3, m) for m in self._metadata)
        for block in sorted(self._blocks):
            parts = self._blocks.pop(block)
            parts.append(metadata)
            # A block is there only once a series was written into it: never empty.
            parts.insert(0, _snappy_head(self._sizes.pop(block) + len(metadata)))
            yield b"".join(parts)
            metadata = b""


@functools.lru_cache(maxsize=1 << 16)
def _label(name: str, value: str) -> bytes:
    """A `Label` message (name 1, value 2) as field 1 of `TimeSeries`."""
    return message(1, message(1, name.encode()) + message(2, value.encode()))


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
        #: Each time's block, and where the run of times within that block ends.
        self._blocks = blocks
        self._run_ends = [0] * len(times)
        ending = len(times)
        for i in range(len(times) - 1, -1, -1):
            self._run_ends[i] = ending
            if i and blocks[i - 1] != blocks[i]:
                ending = i
        #: Where each time's sample starts in the samples of all times, and where they end.
        self._offsets = list(accumulate((len(stamp) + 11 for stamp in self._stamps), initial=0))
        # Milliseconds of any one era take varints of one length: then every sample is as long
        # as every other, and a series' samples are the samples of all times (with no value
        # yet) with its values put in, each `_stride` bytes on from the one before.
        lengths = {len(stamp) for stamp in self._stamps}
        self._stride = 11 + lengths.pop() if len(lengths) == 1 else 0
        self._empty = b"".join(
            chain.from_iterable(zip(self._heads, repeat(bytes(8)), self._stamps))
        )
        self.series = self.samples = 0

    def family(self, name: str, kind: str, text: str) -> None:
        self.sink.family(name, kind, text)

    def _samples(self, values: Sequence[float], since: int) -> bytes:
        """The samples of `values` at `times[since:]` onwards, one after another."""
        end = since + len(values)
        if not self._stride:
            each = map(_double, values)
            return b"".join(
                chain.from_iterable(
                    zip(self._heads[since:end], each, self._stamps[since:end], strict=True)
                )
            )
        stride = self._stride
        samples = bytearray(self._empty[since * stride : end * stride])
        doubles = struct.pack(f"<{len(values)}d", *values)
        for byte in range(8):
            # Each sample's value follows its 3 bytes of head.
            samples[3 + byte :: stride] = doubles[byte::8]
        return bytes(samples)

    def write(
        self, metric: str, labels: dict[str, str], values: Sequence[float], since: int = 0
    ) -> None:
        """One series: `values` at `times[since:]` onwards (a series exists from its first
        sample; an empty label is no label)."""
        merged = {**labels, **self.extra, "__name__": metric}
        head = b"".join([_label(k, merged[k]) for k in sorted(merged) if merged[k] != ""])
        samples, offsets = self._samples(values, since), self._offsets
        end = since + len(values)
        start = since
        while start < end:
            stop = min(self._run_ends[start], end)
            if start > since or stop < end:
                cut = samples[offsets[start] - offsets[since] : offsets[stop] - offsets[since]]
            else:
                cut = samples  # all within one block
            self.sink.series(self._blocks[start], head, cut)
            start = stop
        self.series += 1
        self.samples += len(values)
