"""The statements both backends run, and what runs them.

A statement is written once, with `?` placeholders: SQLite runs it as it is, PostgreSQL's
database numbers the placeholders (`$1`, `$2`…) the first time it meets it. Where the dialects
name a function differently, SQLite is given PostgreSQL's name (`GREATEST`, registered on its
connections). What a dialect really does its own way (locks, advisory locks, a JSON append, a
cursor over weeks of jobs) stays in that backend's module.

The store's parts by role (`bot.store.incidents_sql`, `outbox_sql`, `claims_sql`,
`reports_sql`, `heads_ups_sql`) are written on `Queries`: a backend's store is built of them and
gives them its database, its clock and its cache of parsed alert groups.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from bot.store.rows import ParsedGroups


class Record(Protocol):
    """A row read by column position or by name (SQLite's `Row` and asyncpg's `Record`)."""

    def __getitem__(self, key: Any, /) -> Any: ...


class Statements(Protocol):
    """One backend's database, running one statement at a time."""

    async def write(self, sql: str, *params: Any) -> int:
        """Run `sql` in a transaction of its own; the rows it changed."""
        ...

    async def fetch(self, sql: str, *params: Any) -> Sequence[Record]: ...


class Queries:
    """What the store's parts by role are given by the backend's store."""

    _database: Statements
    _now: Callable[[], float]
    _groups: ParsedGroups


@functools.lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """`sql` with its `?` placeholders numbered `$1`, `$2`… as PostgreSQL wants them (the
    statements hold no `?` of their own; one written with `$n` already is left as it is)."""
    parts = sql.split("?")
    return "".join(f"{part}${index}" for index, part in enumerate(parts[:-1], 1)) + parts[-1]


def greatest(*values: Any) -> Any:
    """PostgreSQL's `GREATEST` for SQLite: the largest value, NULLs left out."""
    return max((value for value in values if value is not None), default=None)
