"""Who may do what, across replicas: leader leases (work only one replica may do at a time),
an incident's claims (its first post, a diagnosis, a silence) and the diagnoses under way.

Each decision is one statement, which both backends apply atomically: a free or lapsed lease or
claim is taken, a live one left alone (0 rows). A replica asking at the same moment waits for
the row (PostgreSQL) or the write lock (SQLite), then finds it taken.
"""

from __future__ import annotations

from bot.store.records import UnfinishedDiagnosis
from bot.store.statements import Queries

LEAD = (
    "INSERT INTO leader_leases (role, owner, until) VALUES (?, ?, ?)"
    " ON CONFLICT (role) DO UPDATE SET owner = excluded.owner, until = excluded.until"
    " WHERE leader_leases.owner = excluded.owner OR leader_leases.until < ?"
)
CLAIM = (
    "INSERT INTO claims (incident_id, purpose, owner, until) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (incident_id, purpose) DO UPDATE SET owner = excluded.owner,"
    " until = excluded.until WHERE claims.until < ?"
)


class ClaimQueries(Queries):
    async def lead(self, role: str, owner: str, until: float) -> bool:
        return await self._database.write(LEAD, role, owner, until, self._now()) == 1

    async def claim(self, incident_id: int, purpose: str, owner: str, until: float) -> bool:
        taken = await self._database.write(CLAIM, incident_id, purpose, owner, until, self._now())
        return taken == 1

    async def renew(self, incident_id: int, purpose: str, owner: str, until: float) -> bool:
        renewed = await self._database.write(
            "UPDATE claims SET until = ? WHERE incident_id = ? AND purpose = ? AND owner = ?",
            until,
            incident_id,
            purpose,
            owner,
        )
        return renewed == 1

    async def release(self, incident_id: int, purpose: str, owner: str) -> None:
        await self._database.write(
            "DELETE FROM claims WHERE incident_id = ? AND purpose = ? AND owner = ?",
            incident_id,
            purpose,
            owner,
        )

    async def unfinished_diagnoses(self) -> list[UnfinishedDiagnosis]:
        rows = await self._database.fetch(
            "SELECT id, incident_id, note_id FROM diagnoses WHERE finished_at IS NULL ORDER BY id"
        )
        return [UnfinishedDiagnosis(int(r[0]), int(r[1]), int(r[2])) for r in rows]

    async def diagnosis_unfinished(self, diagnosis_id: int) -> bool:
        rows = await self._database.fetch(
            "SELECT 1 FROM diagnoses WHERE id = ? AND finished_at IS NULL", diagnosis_id
        )
        return bool(rows)
