"""The capacity report's part of the YAML file (`capacity_report:`): the p95 queue-time target
the sizes are recommended for, the window, the organizations reported on, and the weekly posts
(a channel, a weekday and a time in a time zone each, and their own organizations, if any).

A post is due at the latest scheduled moment at or before now; it is made once per moment
(`slot`), however many replicas run and however often they restart. A bot that was down at that
moment posts on starting again, if that is within `LATE_SECONDS`; an older miss is left out, as a
week-old report posted late would mislead."""

from __future__ import annotations

import fnmatch
import re
from datetime import datetime, time, timedelta
from enum import IntEnum
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: A scheduled post more than this late is not made any more.
LATE_SECONDS = 6 * 3600.0
#: GitHub's account names: letters, digits and hyphens.
_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?")


def _org_names(value: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(name.strip() for name in value)
    for name in names:
        if not _ORG.fullmatch(name):
            raise ValueError(f"{name!r} is not an organization's name (like pytorch)")
    if len({name.casefold() for name in names}) < len(names):
        raise ValueError("names an organization twice")
    return names


class Weekday(IntEnum):
    monday = 0
    tuesday = 1
    wednesday = 2
    thursday = 3
    friday = 4
    saturday = 5
    sunday = 6


class WeeklyPost(BaseModel):
    """One channel's weekly report."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    channel: str = Field(min_length=1)
    weekday: str = "monday"
    #: When, on that day, in `timezone` (24-hour `HH:MM`).
    at: time = time(9, 0)
    timezone: str = "UTC"
    #: The organizations this post reports on (none: the report's own `orgs`).
    orgs: tuple[str, ...] = ()

    _orgs = field_validator("orgs")(_org_names)

    @field_validator("weekday")
    @classmethod
    def _weekday(cls, value: str) -> str:
        name = value.strip().lower()
        if name not in Weekday.__members__:
            raise ValueError(f"weekday must be one of {', '.join(Weekday.__members__)}")
        return name

    @field_validator("at", mode="before")
    @classmethod
    def _clock_time(cls, value: object) -> object:
        # YAML 1.1 reads an unquoted 9:00 as the number 540 (base 60).
        if isinstance(value, int | float) and not isinstance(value, bool):
            raise ValueError('write the time quoted, as "09:00"')
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not a time zone (e.g. UTC, Europe/London)") from None
        return value

    def due(self, now: datetime) -> datetime:
        """The latest scheduled moment at or before `now` (aware)."""
        zone = ZoneInfo(self.timezone)
        local = now.astimezone(zone)
        back = (local.weekday() - Weekday[self.weekday]) % 7
        day = local.date() - timedelta(days=back)
        moment = datetime.combine(day, self.at, tzinfo=zone)
        if moment > local:
            moment = datetime.combine(day - timedelta(days=7), self.at, tzinfo=zone)
        return moment

    def slot(self, due: datetime) -> str:
        """The name of one scheduled post: its channel and moment."""
        return f"{self.channel}@{int(due.timestamp())}"


class CapacitySettings(BaseModel):
    """`capacity_report:` in the YAML file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The p95 queue time the recommended sizes keep to.
    target_p95_minutes: float = Field(10.0, gt=0, le=24 * 60)
    #: The window a report covers, unless `/queue-status report N` asks for N days.
    days: int = Field(7, ge=1, le=30)
    #: Runner types reported (`*` patterns, any case); none listed: every type that counts.
    runner_types: tuple[str, ...] = ()
    #: The organizations reported on (jobs of their repositories, their runners); none listed:
    #: every one. `/queue-status org NAME report` asks for one.
    orgs: tuple[str, ...] = ()
    posts: tuple[WeeklyPost, ...] = ()

    _orgs = field_validator("orgs")(_org_names)

    def reports(self, runner_type: str) -> bool:
        name = runner_type.lower()
        return not self.runner_types or any(
            fnmatch.fnmatchcase(name, pattern.lower()) for pattern in self.runner_types
        )
