"""`queuebot backfill`: the jobs GitHub still has, read into the store
(`bot.fleet.sources.backfill`), with a progress line on stderr."""

from __future__ import annotations

import sys
from typing import TextIO

import aiohttp

from bot.clients import github_reader_for
from bot.config import Settings
from bot.config.github_app import has_github_rest
from bot.fleet.sources.backfill import MAX_DAYS, Backfill, Progress
from bot.fleet.sources.github_http import GitHubError
from bot.store import StoreError, open_store

#: `sysexits.h`'s EX_TEMPFAIL: the walk stopped early and may be run again to go on.
STOPPED_EARLY = 75


class ProgressLine:
    """The walk's progress on `out`: one line rewritten in place on a terminal, else a line
    per repository read."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._tty = out.isatty()
        self._shown = -1

    def __call__(self, progress: Progress) -> None:
        if self._tty:
            self._out.write(f"\r\033[Kbackfill: {progress.line()}")
        elif progress.repositories_done != self._shown:
            self._shown = progress.repositories_done
            self._out.write(f"backfill: {progress.line()}\n")
        self._out.flush()

    def end(self) -> None:
        if self._tty:
            self._out.write("\n")


async def run_backfill(
    settings: Settings, *, days: int, max_requests: int | None, out: TextIO = sys.stderr
) -> int:
    if not 1 <= days <= MAX_DAYS:
        print(f"queuebot: --days must be 1 to {MAX_DAYS} (GitHub keeps no more)", file=out)
        return 2
    if not has_github_rest(settings) or not settings.github_orgs:
        print(
            "queuebot: backfill reads GitHub's REST API: set GITHUB_ORG, and GITHUB_TOKEN or"
            " a GitHub App (GITHUB_APP_ID and its private key)",
            file=out,
        )
        return 2
    try:
        store = await open_store(settings.database)
    except StoreError as exc:
        print(f"queuebot: {exc}", file=out)
        return 1
    line = ProgressLine(out)
    try:
        async with aiohttp.ClientSession() as session:
            reader = github_reader_for(settings, session, max_requests=max_requests)
            assert reader is not None
            walk = Backfill(
                reader, store, settings.file.jobs, settings.github_orgs, days=days, report=line
            )
            progress = await walk.run()
    except (GitHubError, StoreError) as exc:
        line.end()
        print(f"queuebot: backfill stopped: {exc}", file=out)
        return 1
    finally:
        await store.close()
    line.end()
    for skipped in progress.skipped:
        print(f"backfill: skipped {skipped}", file=out)
    if progress.stopped:
        print(f"backfill: stopped early: {progress.stopped}", file=out)
        return STOPPED_EARLY
    print(f"backfill: done: {progress.line()}", file=out)
    return 0
