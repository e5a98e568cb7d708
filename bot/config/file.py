"""The YAML file named by QUEUEBOT_CONFIG: what does not fit in environment variables
(routing, who may silence, the query pack, the early warning, the capacity report)."""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.capacity.settings import CapacitySettings
from bot.config.words import ConfigError
from bot.config.words import problems as _problems
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.querypack import QueryPack
from bot.forecast.settings import EarlyWarning
from bot.incidents.routing import Route
from bot.silencing.permissions import FleetWideViewers, SilencePolicy


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
