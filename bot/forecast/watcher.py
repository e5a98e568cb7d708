"""Watching the queues for the early warning: every check, each runner type's queue read from
the job events and stepped through each channel's heads-up board. A heads-up that starts, or
changes, is saved in the store as it should read (at most every EDIT_SECONDS while it reads the
same way); `bot.delivery.heads_up` shows it in Slack. A heads-up that ended with the threshold
crossed is linked to the alert's message once that is posted.

Of several replicas on one store, only the one holding the watcher's leader lease checks; the
heads-ups out are in the store, so a new leader carries them on rather than starting again.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import replace

from bot.domain.clock import SYSTEM, Clock
from bot.domain.heads_up import HeadsUpView, Phase
from bot.domain.incidents import Incident
from bot.fleet.sources.jobs_config import JobsConfig
from bot.forecast.news import view_of
from bot.forecast.reading import queue_states
from bot.forecast.settings import EarlyWarning
from bot.forecast.warnings import COOL_DOWN, HeadsUp, WarningBoard
from bot.store import HeadsUpRecord, Store, StoreError
from bot.telemetry.logs import shown
from bot.telemetry.passes import PassRecord

log = logging.getLogger(__name__)

#: The leader lease of the early warning's checks, held for this many check intervals.
WATCH_ROLE = "early-warning"
WATCH_LEASE_INTERVALS = 3
#: A heads-up reading the same way is edited at most this often.
EDIT_SECONDS = 300.0
#: The alert's incident counts as this heads-up's if it opened no earlier than this before it.
ALERT_SLACK_SECONDS = 3600.0


class EarlyWarningWatcher:
    def __init__(
        self,
        store: Store,
        configs: list[EarlyWarning],
        jobs: JobsConfig,
        *,
        on_saved: Callable[[], None] = lambda: None,
        clock: Clock = SYSTEM,
        record: PassRecord | None = None,
    ) -> None:
        self._store = store
        #: How its checks have gone (for /healthz and /metrics).
        self.record = record or PassRecord("early warning")
        self._configs = configs
        self._jobs = jobs
        self._on_saved = on_saved
        self._clock = clock
        self._owner = uuid.uuid4().hex
        self._boards: dict[str, WarningBoard] = {}
        #: By channel, the heads-ups only named in another's line (beyond the cap): their
        #: runner type and start.
        self._summed: dict[str, set[tuple[str, float]]] = {}

    async def run(self, interval: float) -> None:
        """Check every `interval` seconds until cancelled; a failed check never stops it."""
        while True:
            await asyncio.sleep(interval)
            try:
                until = self._clock.time() + WATCH_LEASE_INTERVALS * interval
                if not await self._store.lead(WATCH_ROLE, self._owner, until):
                    # Another replica checks: what this one holds goes stale.
                    self._boards.clear()
                    self._summed.clear()
                    continue
                await self.check()
            except Exception:
                self.record.failed()
                log.exception("early warning check failed; trying again in %.0fs", interval)

    async def check(self) -> None:
        """One check of every channel's board; a heads-up that cannot be saved is logged and
        counted and the others are saved all the same."""
        at = self._clock.now().timestamp()
        states = await queue_states(self._store, self._jobs, at)
        unsaved = 0
        for config in self._configs:
            board = await self._board(config, at)
            watched = {name: state for name, state in states.items() if config.watches(name)}
            for heads_up, saved, others in await self._capped(config, board.step(watched)):
                try:
                    await self._save(config, board, heads_up, saved, others)
                except StoreError as exc:
                    unsaved += 1
                    log.error(
                        "the heads-up of %s in %s was not saved: %s",
                        shown(heads_up.runner_type),
                        config.channel,
                        exc,
                    )
            await self._link_late_alerts(config.channel, at)
        if unsaved:
            self.record.failed()
        else:
            self.record.succeeded()

    async def _board(self, config: EarlyWarning, at: float) -> WarningBoard:
        board = self._boards.get(config.channel)
        if board is None:
            board = WarningBoard(
                threshold=config.threshold(self._jobs.queued_after_seconds),
                horizon_minutes=config.horizon_minutes,
            )
            for record in await self._store.heads_ups(config.channel, at - COOL_DOWN):
                if record.ended_at is None:
                    board.resume(record.runner_type, record.started_at, at)
                else:
                    board.ended(record.runner_type, record.ended_at)
            self._boards[config.channel] = board
        return board

    async def _capped(
        self, config: EarlyWarning, stepped: list[HeadsUp]
    ) -> list[tuple[HeadsUp, HeadsUpRecord | None, tuple[str, ...]]]:
        """The heads-ups to save at this check: every change to one already out, and at most
        `max_new_heads_ups` new ones (the soonest to cross first), the last of them naming the
        new ones beyond, which are not posted for as long as they last; each with the version
        of it the store holds."""
        summed = self._summed.setdefault(config.channel, set())
        new: list[HeadsUp] = []
        kept: list[tuple[HeadsUp, HeadsUpRecord | None, tuple[str, ...]]] = []
        for heads_up in stepped:
            key = (heads_up.runner_type, heads_up.started_at)
            if key in summed:
                # Named in a line already: not posted for the rest of this heads-up.
                if heads_up.phase is not Phase.WARNING:
                    summed.discard(key)
                continue
            saved = await self._saved(config, heads_up)
            if heads_up.phase is Phase.WARNING and saved is None:
                new.append(heads_up)
            else:
                kept.append((heads_up, saved, ()))
        new.sort(key=lambda h: h.crossing_in if h.crossing_in is not None else 0.0)
        cap = config.max_new_heads_ups
        posted, beyond = new[:cap], tuple(h.runner_type for h in new[cap:])
        summed.update((h.runner_type, h.started_at) for h in new[cap:])
        if beyond:
            log.info(
                "%d new heads-ups in %s at one check: %d posted, the rest named in one line",
                len(new),
                config.channel,
                len(posted),
            )
        last = len(posted) - 1
        kept += [(h, None, beyond if i == last else ()) for i, h in enumerate(posted)]
        return kept

    async def _saved(self, config: EarlyWarning, heads_up: HeadsUp) -> HeadsUpRecord | None:
        """The version of `heads_up` the store holds, if any."""
        for record in await self._store.heads_ups(config.channel, heads_up.started_at):
            if (record.runner_type, record.started_at) == (
                heads_up.runner_type,
                heads_up.started_at,
            ):
                return record
        return None

    async def _save(
        self,
        config: EarlyWarning,
        board: WarningBoard,
        heads_up: HeadsUp,
        saved: HeadsUpRecord | None,
        others: tuple[str, ...] = (),
    ) -> None:
        """Save `heads_up` as it should read now (`saved`: the version the store holds)."""
        if (
            saved is not None
            and saved.phase == heads_up.phase.value
            and heads_up.at - saved.updated_at < EDIT_SECONDS
        ):
            return  # reads the same, and was saved lately
        if saved is None and heads_up.phase is not Phase.WARNING:
            return  # never saved (a board resumed without it): nothing to end
        view = await view_of(
            self._store,
            self._jobs,
            heads_up,
            board.threshold,
            runbook_url=str(config.runbook_url) if config.runbook_url else None,
            alert=(
                await self._alert(config.channel, heads_up.started_at)
                if heads_up.phase is Phase.FIRED
                else None
            ),
        )
        if others:
            view = replace(view, others=others)
        await self._store.save_heads_up(
            HeadsUpRecord(
                channel=config.channel,
                runner_type=heads_up.runner_type,
                started_at=heads_up.started_at,
                phase=heads_up.phase.value,
                view_json=view.to_json(),
                updated_at=heads_up.at,
                ended_at=None if heads_up.phase is Phase.WARNING else heads_up.at,
            )
        )
        self._on_saved()

    async def _alert(self, channel: str, started_at: float) -> Incident | None:
        """The alert's incident in the channel, posted, opened after the heads-up began."""
        firing, _ = await self._store.firing_incidents(20)
        since = started_at - ALERT_SLACK_SECONDS
        mine = [
            i
            for i in firing
            if i.channel == channel and i.parent_ts and i.started_at.timestamp() >= since
        ]
        return max(mine, key=lambda i: i.started_at, default=None)

    async def _link_late_alerts(self, channel: str, at: float) -> None:
        """Grafana's rule may fire minutes after the crossing (its pending period): a crossed
        heads-up without the alert's message gets it once the message is posted."""
        for record in await self._store.heads_ups(channel, at - ALERT_SLACK_SECONDS):
            if record.phase != Phase.FIRED.value:
                continue
            view = HeadsUpView.from_json(record.view_json)
            if view.alert_ts is not None:
                continue
            alert = await self._alert(channel, record.started_at)
            if alert is None:
                continue
            linked = replace(
                view,
                alert_link=alert.permalink,
                alert_channel_id=alert.channel_id,
                alert_ts=alert.parent_ts,
            )
            await self._store.save_heads_up(replace(record, view_json=linked.to_json()))
            self._on_saved()
