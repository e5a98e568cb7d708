"""The queued jobs' reads keep to their partial indexes on PostgreSQL under the plan it keeps
for a statement after its fifth run (a generic plan, made for any parameters): a bound passed
as a parameter cannot prove a partial index's WHERE, and the read of the long waits then went
through a week of jobs on every scrape of /metrics and every reading of the queue."""

from __future__ import annotations

import asyncpg
import pytest

from bot.store.postgres import PostgresStore
from bot.store.shared_sql import queued_queries
from bot.store.statements import numbered


@pytest.mark.parametrize("counted", [False, True], ids=["jobs", "counts"])
async def test_the_queued_reads_use_their_partial_indexes_in_a_generic_plan(
    postgres_url: str, counted: bool
) -> None:
    store = await PostgresStore.open(postgres_url)
    await store.close()
    conn = await asyncpg.connect(postgres_url)
    try:
        # Any index over reading the table, so that the plan shows which index it can use.
        await conn.execute("SET plan_cache_mode = force_generic_plan; SET enable_seqscan = off")
        plans = []
        for n, (sql, params) in enumerate(queued_queries(1.9e9, 300, 7 * 86400, counted=counted)):
            await conn.execute(f"PREPARE q{n} AS {numbered(sql)}")
            arguments = ", ".join(repr(p) for p in params)
            rows = await conn.fetch(f"EXPLAIN EXECUTE q{n}({arguments})")
            plans.append("\n".join(row[0] for row in rows))
    finally:
        await conn.close()
    assert "jobs_in_queue" in plans[1], plans[1]
    assert "jobs_long_waits" in plans[2], plans[2]
