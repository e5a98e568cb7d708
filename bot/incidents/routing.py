"""Channel routing: which channel an incident's messages go to (`routes:` in the YAML file)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.domain.alerts import AlertGroup


class Route(BaseModel):
    """Send alerts whose labels or annotations match to another channel.

    `match` compares exact values, `match_re` full regular expressions; keys are compared without
    regard to case (Grafana users write `Team`, `TEAM` and `team`). Every condition must hold.
    """

    model_config = ConfigDict(extra="forbid")

    channel: str = Field(min_length=1)
    match: dict[str, str] = Field(default_factory=dict)
    match_re: dict[str, str] = Field(default_factory=dict)

    @field_validator("match_re")
    @classmethod
    def _compiles(cls, value: dict[str, str]) -> dict[str, str]:
        for key, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"match_re.{key}: {exc}") from exc
        return value

    def matches(self, fields: Mapping[str, str]) -> bool:
        """True when every condition holds for `fields` (keys already lower-cased)."""
        for key, expected in self.match.items():
            if fields.get(key.lower()) != expected:
                return False
        for key, pattern in self.match_re.items():
            value = fields.get(key.lower())
            if value is None or re.fullmatch(pattern, value) is None:
                return False
        return True


def route_channel(group: AlertGroup, routes: Sequence[Route], default: str) -> str:
    """The channel for `group`: the first matching route's, else the default."""
    fields = group.routing_fields()
    for route in routes:
        if route.matches(fields):
            return route.channel
    return default
