"""The YAML file named by QUEUEBOT_CONFIG: what does not fit in environment variables
(routing, who may silence, the query pack, the early warning, the capacity report, the names
of alerts' values, GitHub's organizations and the variables holding their hooks' secrets)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Self

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from bot.capacity.settings import CapacitySettings
from bot.config.github import GitHubSection
from bot.config.words import ConfigError
from bot.config.words import problems as _problems
from bot.domain.alerts import TEXT_ANNOTATIONS
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.querypack import QueryPack
from bot.forecast.settings import EarlyWarning
from bot.incidents.routing import Route
from bot.silencing.permissions import FleetWideViewers, SilencePolicy


def _value_key(key: str) -> str:
    if key.lower() in TEXT_ANNOTATIONS:
        raise ValueError("is an annotation queuebot shows as text, not a value")
    return key


#: A value's refId (`B`) or key (`queued_jobs`), as the alert has it.
ValueKey = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_value_key)]


class AlertValue(BaseModel):
    """How one of an alert's values is shown (`alert_values:`, keyed by its refId or key): its
    name, its unit, the value shown beside it as its threshold; or `hide: true`, not at all."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    name: str | None = Field(None, min_length=1, max_length=80)
    #: "" says the value has no unit (where its key's ending would give one).
    unit: str | None = Field(None, max_length=20)
    #: The key of the value shown beside this one as "(threshold …)", in this one's unit.
    threshold: str | None = Field(None, min_length=1, max_length=200)
    hide: bool = False

    @model_validator(mode="after")
    def _says_one_thing(self) -> Self:
        said = self.name is not None or self.unit is not None or self.threshold is not None
        if self.hide and said:
            raise ValueError("must not give a name, a unit or a threshold with hide: true")
        if not (self.hide or said):
            raise ValueError("must give a name, a unit, a threshold, or hide: true")
        return self


class FileConfig(BaseModel):
    """What does not fit in environment variables: the YAML file named by QUEUEBOT_CONFIG."""

    model_config = ConfigDict(extra="forbid")

    routes: list[Route] = Field(default_factory=list)
    silence: SilencePolicy = Field(default_factory=SilencePolicy)
    #: Who sees every channel's incidents in /queue-status (everyone else: the channel's own).
    queue_status: FleetWideViewers = Field(default_factory=FleetWideViewers)
    #: Overrides of the diagnostics query pack (signal name → PromQL, and `window`).
    queries: QueryPack = Field(default_factory=QueryPack)
    #: How GitHub's job events are read.
    jobs: JobsConfig = Field(default_factory=JobsConfig)
    #: Post the diagnostics report in the thread when an incident opens.
    auto_diagnose: bool = True
    #: Heads-ups before the alert, per channel (needs GitHub's job events).
    early_warning: list[EarlyWarning] = Field(default_factory=list)
    #: The capacity report: its target, window and weekly posts.
    capacity_report: CapacitySettings = Field(default_factory=CapacitySettings)
    #: How alerts' values are named (refId or key → name, unit, threshold, hide).
    alert_values: dict[ValueKey, AlertValue] = Field(default_factory=dict)
    #: GitHub's organizations (instead of GITHUB_ORG), each with its hooks' secret variables.
    github: GitHubSection = Field(default_factory=GitHubSection)

    @field_validator("alert_values")
    @classmethod
    def _no_value_its_own_threshold(cls, values: dict[str, AlertValue]) -> dict[str, AlertValue]:
        for key, value in values.items():
            if value.threshold == key:
                raise ValueError(
                    f"has {key}.threshold naming {key!r} itself: it names another value"
                )
        return values


def load_file_config(path: Path) -> FileConfig:
    """Parse the YAML file; any problem becomes a ConfigError naming QUEUEBOT_CONFIG."""
    where = f"QUEUEBOT_CONFIG ({path})"
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{where} cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}:" if mark is not None else ""
        raise ConfigError(
            f"{where} is not valid YAML:{line} {getattr(exc, 'problem', exc)}"
        ) from None
    if raw is None:
        return FileConfig()
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be a mapping at the top level")
    try:
        return FileConfig.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {'; '.join(_problems(exc, FileConfig))}") from None
