"""`Feed`: GitHub's webhook for the demo's fleet. Each `workflow_job` delivery after the loaded
history is posted to the bot's `POST /webhooks/github` as GitHub sends it (its headers, the body
signed with the hook's secret in `X-Hub-Signature-256`): those already due at once, the rest
each when its time comes, so the fleet moves while the demo runs. GitHub's runners list moves
with them: a runner is listed busy from its job's in_progress delivery to its completed one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

import aiohttp

from queuebot_lab.demo.fleet import DemoFleet, RunnerList
from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.simulator.deliveries import delivery, workflow_job_body

log = logging.getLogger(__name__)

#: Deliveries in flight at once while catching up: the bot's answers overlap its store's writes.
IN_FLIGHT = 8


class Feed:
    """Sends the fleet's deliveries to `url`, signed with `secret`, keeping `github`'s runners
    list in step."""

    def __init__(
        self,
        fleet: DemoFleet,
        *,
        url: str,
        secret: str,
        http: aiohttp.ClientSession,
        github: GitHubSandbox,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._pending = deque(fleet.deliveries())
        self._url, self._secret, self._http = url, secret, http
        self._github = github
        self._runners: RunnerList = fleet.runner_list()
        self._clock = clock
        github.runners = self._runners.listed()
        #: Deliveries the bot took (2xx), and those it did not or that did not reach it.
        self.sent = 0
        self.failed = 0

    @property
    def done(self) -> bool:
        return not self._pending

    async def catch_up(self) -> int:
        """Send every delivery due by now; how many were sent."""
        now = self._clock()
        due = []
        while self._pending and self._pending[0][0] <= now:
            _, action, job = self._pending.popleft()
            due.append((action, job))
            self._runners.moved(action, job)
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def send(action: str, job_id: int, body: bytes, headers: dict[str, str]) -> None:
            async with gate:
                await self._post(action, job_id, body, headers)

        posts = []
        for action, job in due:
            headers, raw = delivery(workflow_job_body(job, action), self._secret)
            posts.append(send(action, job.id, raw, headers))
        await asyncio.gather(*posts)
        self._github.runners = self._runners.listed()
        return len(due)

    async def run(self) -> None:
        """Send each remaining delivery when its time comes, until the simulation's end."""
        while self._pending:
            delay = self._pending[0][0] - self._clock()
            if delay > 0:
                await asyncio.sleep(delay)
            await self.catch_up()

    async def _post(self, action: str, job_id: int, body: bytes, headers: dict[str, str]) -> None:
        try:
            async with self._http.post(self._url, data=body, headers=headers) as answer:
                if answer.status < 300:
                    self.sent += 1
                    return
                reason = f"HTTP {answer.status}: {(await answer.text())[:200]}"
        except aiohttp.ClientError as exc:
            reason = f"{type(exc).__name__}: {exc}"
        self.failed += 1
        log.warning("demo: the %s delivery of job %s was not taken: %s", action, job_id, reason)
