"""The fleet's totals: what GitHub's jobs have done since the store began, per runner type,
counted once per delivery in the transaction that merges it, so every replica reads the same
numbers and none goes back (retention forgets jobs, never totals).

A delivery that moves a job on adds to its runner type's totals: `queued` when the job first
waits for a runner (not held for an approval), `started` and the queue time's histogram
(`queue_seconds`: a bucket's count by its upper bound, and `sum`) when a runner takes it,
`completed` by conclusion and `run_seconds` when it completes. Deliveries that arrive late,
twice or out of order add nothing twice: what is added is the difference between what the
job's row knew and what it knows now.

The store counts at most `MAX_COUNTED_TYPES` runner types under their own name (a fleet has
tens; a bad rule for `jobs.runner_type` could make one a job), in the order they were
registered (`seq`); the rest are counted together under `OVERFLOW`. Registrations are one at a
time (SQLite has one writer; PostgreSQL's take a lock, `register`), so a type seen later always
comes later, and `/metrics`, naming the first few, never moves a type from one series to
another. Reads take the totals before the types: every total then has its type at hand.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from bot.domain.jobs import CONCLUSIONS, MAX_LABEL, QUEUE_TIME_BUCKETS, JobAction, JobEvent
from bot.store.records import FleetTotals, bucket_part

#: Runner types counted under their own name, at most.
MAX_COUNTED_TYPES = 1000
#: The name the types past `MAX_COUNTED_TYPES` are counted under, with those whose name is
#: empty or longer than a label may be (a job kept from before labels were bounded).
OVERFLOW = ""

Key = tuple[str, str, str]  # (runner type, what, part)

#: The known types, in the order they were registered.
REGISTERED_TYPES = "SELECT runner_type FROM fleet_types ORDER BY seq"
ADD_TYPE = "INSERT INTO fleet_types (runner_type) VALUES (?) ON CONFLICT (runner_type) DO NOTHING"
TOTALS = "SELECT runner_type, metric, part, value FROM fleet_totals"
ADD_TOTAL = (
    "INSERT INTO fleet_totals (runner_type, metric, part, value) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (runner_type, metric, part)"
    " DO UPDATE SET value = fleet_totals.value + excluded.value"
)


def bucket(wait: float) -> str:
    """The histogram bucket a wait of `wait` seconds falls in: its upper bound, as written."""
    index = bisect.bisect_left(QUEUE_TIME_BUCKETS, wait)
    return bucket_part(QUEUE_TIME_BUCKETS[index] if index < len(QUEUE_TIME_BUCKETS) else math.inf)


def added(known: Any, row: tuple[Any, ...]) -> list[tuple[str, str, float]]:
    """What a delivery adds to its type's totals: the job's row as it was (`known`, the
    columns `KNOWN_JOB` reads, or None) and as `merged_job` made it."""
    before = JobAction(known[0]) if known is not None else None
    had_start = known is not None and known[1] is not None
    status, created, started, completed, conclusion = row[10], row[11], row[12], row[13], row[15]
    found: list[tuple[str, str, float]] = []
    if before in (None, JobAction.WAITING) and status != JobAction.WAITING:
        found.append(("queued", "", 1.0))
    if not had_start and started is not None:
        wait = max(started - created, 0.0)
        found += [("started", "", 1.0), ("queue_seconds", bucket(wait), 1.0)]
        found.append(("queue_seconds", "sum", wait))
    if before is not JobAction.COMPLETED and status == JobAction.COMPLETED:
        word = conclusion if conclusion in CONCLUSIONS else ("other" if conclusion else "unknown")
        found.append(("completed", word, 1.0))
        if started is not None and completed is not None:
            found.append(("run_seconds", "", max(completed - started, 0.0)))
    return found


class Tally:
    """What a lot of deliveries adds to the totals, summed per key before it is written."""

    def __init__(self) -> None:
        self.amounts: dict[Key, float] = defaultdict(float)
        #: The counted types the lot brings, and when each one's first job was created.
        self.types: dict[str, float] = {}

    def add(self, event: JobEvent, known: Any, row: tuple[Any, ...]) -> None:
        if not event.counted:
            return
        name = event.runner_type if len(event.runner_type) <= MAX_LABEL else OVERFLOW
        created = event.created_at.timestamp()
        self.types[name] = min(self.types.get(name, created), created)
        for what, part, amount in added(known, row):
            self.amounts[(name, what, part)] += amount

    def rows(self, named: Iterable[str]) -> list[tuple[str, str, str, float]]:
        """`ADD_TOTAL`'s parameters, the types not in `named` counted as `OVERFLOW`, in key
        order (two replicas writing the same rows lock them in the same order)."""
        own = set(named)
        summed: dict[Key, float] = defaultdict(float)
        for (name, what, part), amount in self.amounts.items():
            summed[(name if name in own else OVERFLOW, what, part)] += amount
        return [(*key, amount) for key, amount in sorted(summed.items())]


Fetch = Callable[[str], Awaitable[Iterable[Any]]]
WriteMany = Callable[[str, list[tuple[Any, ...]]], Awaitable[object]]


async def _no_lock() -> None:
    return None


async def write_tally(
    fetch: Fetch,
    write_many: WriteMany,
    tally: Tally,
    known: set[str],
    register: Callable[[], Awaitable[None]] = _no_lock,
) -> set[str]:
    """Add the lot's totals in the caller's transaction (`fetch` and `write_many` run one
    statement of `?` placeholders), registering the types it brings while there is room (after
    `register`, which holds other registrations off until the transaction ends); the types
    counted under their own name. `known` are types registered before (a type, once
    registered, stays)."""
    own = {name for name in tally.types if name in known}
    new = [name for name in tally.types if name not in known and name != OVERFLOW]
    if new:
        await register()
        registered = {row[0] for row in await fetch(REGISTERED_TYPES)}
        own |= registered.intersection(new)
        missing = sorted((tally.types[n], n) for n in new if n not in registered)
        room = max(MAX_COUNTED_TYPES - len(registered), 0)
        taken = missing[:room]
        if taken:
            await write_many(ADD_TYPE, [(name,) for _, name in taken])
            own |= {name for _, name in taken}
    rows = tally.rows(own)
    if rows:
        await write_many(ADD_TOTAL, list(rows))
    return own


def totals_record(totals: Iterable[Any], types: Iterable[Any]) -> FleetTotals:
    """The record of the rows of `TOTALS` and, read after them, of `REGISTERED_TYPES`."""
    return FleetTotals(
        types=tuple(row[0] for row in types),
        totals=tuple((row[0], row[1], row[2], float(row[3])) for row in totals),
    )
