"""Incidents and storm digests as Slack shows them: read by id or by channel, and where each
one's message is, which version it shows and who last edited it. (Changing an incident is a
transaction's, `bot.store.sqlite_tx` and `bot.store.postgres_tx`.)"""

from __future__ import annotations

from bot.domain.incidents import Incident
from bot.store.records import Digest
from bot.store.rows import (
    DIGEST_COLUMNS,
    FIRING_INCIDENTS,
    INCIDENT_COLUMNS,
    SILENCED_INCIDENTS,
    digest_from,
    incident_from,
)
from bot.store.statements import Queries


class IncidentQueries(Queries):
    async def get_incident(self, incident_id: int) -> Incident | None:
        rows = await self._database.fetch(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE id = ?",  # noqa: S608
            incident_id,
        )
        return incident_from(rows[0], self._groups) if rows else None

    async def silenced_incidents(self, channel: str | None = None) -> list[Incident]:
        rows = await self._database.fetch(SILENCED_INCIDENTS, *(channel,) * 4)
        return [incident_from(row, self._groups) for row in rows]

    async def firing_incidents(
        self, limit: int, channel: str | None = None
    ) -> tuple[list[Incident], int]:
        rows = await self._database.fetch(FIRING_INCIDENTS, *(channel,) * 4, limit)
        return [incident_from(row, self._groups) for row in rows], (
            int(rows[0]["total"]) if rows else 0
        )

    async def channel_id_for(self, channel: str) -> str | None:
        rows = await self._database.fetch(
            "SELECT channel_id FROM incidents WHERE channel = ? AND channel_id IS NOT NULL"
            " ORDER BY id DESC LIMIT 1",
            channel,
        )
        return str(rows[0][0]) if rows else None

    async def set_parent(
        self,
        incident_id: int,
        channel_id: str,
        parent_ts: str,
        version: int,
        previous_link: str | None,
    ) -> None:
        await self._database.write(
            "UPDATE incidents SET channel_id = ?, parent_ts = ?, parent_version = ?,"
            " previous_link = ? WHERE id = ?",
            channel_id,
            parent_ts,
            version,
            previous_link,
            incident_id,
        )

    async def set_permalink(self, incident_id: int, permalink: str) -> None:
        await self._database.write(
            "UPDATE incidents SET permalink = ? WHERE id = ?", permalink, incident_id
        )

    async def set_parent_version(self, incident_id: int, version: int) -> None:
        await self._database.write(
            "UPDATE incidents SET parent_version = GREATEST(parent_version, ?) WHERE id = ?",
            version,
            incident_id,
        )

    async def get_digest(self, digest_id: int) -> Digest | None:
        rows = await self._database.fetch(
            f"SELECT {DIGEST_COLUMNS} FROM digests WHERE id = ?",  # noqa: S608
            digest_id,
        )
        return digest_from(rows[0]) if rows else None

    async def digest_members(self, digest_id: int) -> list[Incident]:
        rows = await self._database.fetch(
            f"SELECT {INCIDENT_COLUMNS} FROM incidents WHERE digest_id = ?"  # noqa: S608
            " ORDER BY id",
            digest_id,
        )
        return [incident_from(row, self._groups) for row in rows]

    async def set_digest_posted(
        self, digest_id: int, channel_id: str, ts: str, version: int
    ) -> None:
        await self._database.write(
            "UPDATE digests SET channel_id = ?, ts = ?, shown_version = ? WHERE id = ?",
            channel_id,
            ts,
            version,
            digest_id,
        )

    async def set_digest_permalink(self, digest_id: int, permalink: str) -> None:
        await self._database.write(
            "UPDATE digests SET permalink = ? WHERE id = ?", permalink, digest_id
        )

    async def set_digest_shown(self, digest_id: int, version: int) -> None:
        await self._database.write(
            "UPDATE digests SET shown_version = GREATEST(shown_version, ?) WHERE id = ?",
            version,
            digest_id,
        )

    async def set_digest_editor(self, digest_id: int, editor: str) -> None:
        await self._database.write("UPDATE digests SET editor = ? WHERE id = ?", editor, digest_id)
