"""Who may silence and unsilence: everyone, or the users and user groups the YAML file lists;
and who sees every channel's incidents in `/queue-status` (only those it lists).

User groups are read with usergroups.users.list (scope `usergroups:read`), all at once and within
a budget, because the check runs before the Silence… modal opens and Slack's trigger id lives
three seconds. A group that cannot be read grants nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bot.domain.clock import SYSTEM, Clock
from bot.slack.errors import SlackError
from bot.slack.gateway import SlackGateway

log = logging.getLogger(__name__)

#: How long a user group's member list is trusted.
GROUP_CACHE_SECONDS = 60.0
#: How long the check may wait for Slack, leaving the rest of the 3 s for views.open.
LOOKUP_BUDGET_SECONDS = 1.5


class SilencePolicy(BaseModel):
    """Who may silence and unsilence. Nothing listed: anyone who can click in the channel."""

    model_config = ConfigDict(extra="forbid")

    #: Slack user ids (U… or W…).
    allowed_users: list[Annotated[str, StringConstraints(pattern=r"^[UW][A-Z0-9]{2,}$")]] = Field(
        default_factory=list
    )
    #: Slack user group ids (S…); members are looked up with usergroups.users.list.
    allowed_groups: list[Annotated[str, StringConstraints(pattern=r"^S[A-Z0-9]{2,}$")]] = Field(
        default_factory=list
    )

    @property
    def restricted(self) -> bool:
        return bool(self.allowed_users or self.allowed_groups)


class FleetWideViewers(BaseModel):
    """Who sees every channel's open incidents and silences in `/queue-status`, privately.
    Nothing listed: nobody; everyone else sees only those of the channel they ask in."""

    model_config = ConfigDict(extra="forbid")

    #: Slack user ids (U… or W…).
    fleet_wide_users: list[Annotated[str, StringConstraints(pattern=r"^[UW][A-Z0-9]{2,}$")]] = (
        Field(default_factory=list)
    )
    #: Slack user group ids (S…); members are looked up with usergroups.users.list.
    fleet_wide_groups: list[Annotated[str, StringConstraints(pattern=r"^S[A-Z0-9]{2,}$")]] = Field(
        default_factory=list
    )

    def as_policy(self) -> SilencePolicy:
        """The same people as a list of who is allowed (see `Permissions.listed`)."""
        return SilencePolicy(
            allowed_users=self.fleet_wide_users, allowed_groups=self.fleet_wide_groups
        )


class NotAllowed(Exception):
    """The user may not silence; the message says whom to ask (mrkdwn, shown to them only)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def who_may(policy: SilencePolicy) -> str:
    """The people and groups to ask, as Slack mentions (only ever shown to one person)."""
    names = [f"<!subteam^{g}>" for g in policy.allowed_groups]
    names += [f"<@{u}>" for u in policy.allowed_users]
    return " or ".join(names)


class Permissions:
    def __init__(
        self,
        policy: SilencePolicy,
        slack: SlackGateway,
        clock: Clock = SYSTEM,
    ) -> None:
        self._policy = policy
        self._slack = slack
        self._clock = clock
        self._groups: dict[str, tuple[float, set[str]]] = {}

    async def check(self, user_id: str) -> None:
        """Raises NotAllowed unless `user_id` may silence."""
        policy = self._policy
        if not policy.restricted:
            return
        listed, unread = await self._lookup(user_id)
        if listed:
            return
        text = f":no_entry: You are not allowed to silence this; ask {who_may(policy)}."
        if unread:
            text += (
                " (queuebot could not read the members of "
                + ", ".join(f"<!subteam^{g}>" for g in unread)
                + "; its Slack app needs the `usergroups:read` scope.)"
            )
        log.info("silencing refused to %s: not in the allowed users or groups", user_id)
        raise NotAllowed(text)

    async def listed(self, user_id: str) -> bool:
        """Whether `user_id` is one of the users listed or a member of a group listed (nobody
        is when nothing is listed; a group that cannot be read lists nobody)."""
        return (await self._lookup(user_id))[0]

    async def _lookup(self, user_id: str) -> tuple[bool, list[str]]:
        """Whether `user_id` is listed, and the groups whose members could not be read."""
        policy = self._policy
        if user_id in policy.allowed_users:
            return True, []
        groups = policy.allowed_groups
        results: list[set[str] | None] = [None] * len(groups)

        async def read(index: int, group: str) -> None:
            results[index] = await self._members(group)

        try:
            async with asyncio.timeout(LOOKUP_BUDGET_SECONDS), asyncio.TaskGroup() as tasks:
                for index, group in enumerate(groups):
                    tasks.create_task(read(index, group))
        except TimeoutError:
            log.warning("user groups not read within %.1fs", LOOKUP_BUDGET_SECONDS)
        unread = [g for g, members in zip(groups, results, strict=True) if members is None]
        return any(m is not None and user_id in m for m in results), unread

    async def _members(self, group: str) -> set[str] | None:
        cached = self._groups.get(group)
        now = self._clock.monotonic()
        if cached is not None and now - cached[0] < GROUP_CACHE_SECONDS:
            return cached[1]
        try:
            members = await self._slack.usergroup_members(group)
        except SlackError as exc:
            log.warning("cannot read the members of user group %s: %s", group, exc)
            return None
        self._groups[group] = (now, members)
        return members
