"""GitHub's organizations and webhook secrets as the settings give them.

The organizations: GITHUB_ORG (one name, or several separated by commas), or the YAML file's
`github.orgs`; never both. GITHUB_REPOSITORY and GITHUB_ENTERPRISE name another scope and are
refused beside either.

The secrets of the hooks that send `workflow_job` deliveries, read from the environment only
(the YAML file names the variables that hold them, never a secret):
- GITHUB_WEBHOOK_SECRET: one secret for every hook;
- an organization's own: `GITHUB_WEBHOOK_SECRET_<ORG>` (the name upper-cased, `-` as `_`:
  `GITHUB_WEBHOOK_SECRET_PYTORCH_LABS`), or the variables its `webhook_secret_env` names in the
  YAML file (one per hook, when its organization hook and some repository hooks each have
  their own). An organization's hooks with their own secrets are verified with those only,
  not with GITHUB_WEBHOOK_SECRET;
- GITHUB_APP_WEBHOOK_SECRET: the GitHub App's own webhook (one secret for the App), for the
  deliveries that carry `installation`, of whichever watched organization the App is
  installed on (beside that organization's own hooks, if it has some).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from bot.capacity.settings import CapacitySettings
from bot.config.words import ConfigError

#: Whose runners queuebot lists (GITHUB_ORG, GITHUB_REPOSITORY or GITHUB_ENTERPRISE).
GitHubScopeKind = Literal["org", "repo", "enterprise"]
#: GitHub's account names (organizations, enterprise slugs): letters, digits and hyphens.
GITHUB_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?")
_GITHUB_REPOSITORY = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?/[A-Za-z0-9._-]+")
ORG_SECRET_PREFIX = "GITHUB_WEBHOOK_SECRET_"  # noqa: S105 - a variable's name, not a secret
#: An environment variable's name, as the YAML file names one (a secret is no such name).
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_NOT_A_NAME = "must be a name (letters, digits and hyphens), like pytorch"


def org_list(value: str | None) -> str | None:
    """GITHUB_ORG: one organization, or several separated by commas, each named once (GitHub's
    names are not case sensitive); given back as `a,b` (each a path segment of GitHub's API)."""
    if value is None:
        return None
    names = [name.strip() for name in value.split(",")]
    for name in names:
        if not GITHUB_NAME.fullmatch(name):
            several = ", or names separated by commas: pytorch,pytorch-labs"
            raise ValueError(_NOT_A_NAME + (several if len(names) > 1 else ""))
    _once(names)
    return ",".join(names)


def enterprise_name(value: str | None) -> str | None:
    """GITHUB_ENTERPRISE: the enterprise's slug."""
    if value is not None and not GITHUB_NAME.fullmatch(value.strip()):
        raise ValueError(_NOT_A_NAME)
    return value.strip() if value is not None else None


def repository_name(value: str | None) -> str | None:
    """GITHUB_REPOSITORY: owner/repo."""
    if value is not None and not _GITHUB_REPOSITORY.fullmatch(value.strip()):
        raise ValueError("must be owner/repo, like pytorch/pytorch")
    return value.strip() if value is not None else None


def _once(names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name.casefold() in seen:
            raise ValueError(f"names {name} twice")
        seen.add(name.casefold())


def secret_variable(org: str) -> str:
    """The variable that holds `org`'s own hook secret, unless the YAML file names others."""
    return ORG_SECRET_PREFIX + org.upper().replace("-", "_")


class GitHubOrg(BaseModel):
    """One organization in the YAML file's `github.orgs`: its name, or its name and the
    environment variables holding its hooks' secrets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    webhook_secret_env: tuple[str, ...] = ()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not GITHUB_NAME.fullmatch(value.strip()):
            raise ValueError(_NOT_A_NAME)
        return value.strip()

    @field_validator("webhook_secret_env", mode="before")
    @classmethod
    def _variables(cls, value: Any) -> Any:
        names = (value,) if isinstance(value, str) else value
        for name in names if isinstance(names, list | tuple) else ():
            if isinstance(name, str) and not _VARIABLE.fullmatch(name):
                # What is no variable's name may be the secret itself: it is not repeated.
                raise ValueError(
                    "names environment variables (like PYTORCH_HOOK_SECRET) that hold the"
                    " secrets; the secrets themselves never go in this file"
                )
        return names


class GitHubSection(BaseModel):
    """`github:` in the YAML file: the organizations queuebot watches (a list of names, or of
    `{name, webhook_secret_env}`), instead of GITHUB_ORG."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    orgs: tuple[GitHubOrg, ...] = Field(default_factory=tuple)

    @field_validator("orgs", mode="before")
    @classmethod
    def _named(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return [{"name": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("orgs")
    @classmethod
    def _each_once(cls, value: tuple[GitHubOrg, ...]) -> tuple[GitHubOrg, ...]:
        _once([org.name for org in value])
        return value

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(org.name for org in self.orgs)


def scope_of(settings: _Settings) -> tuple[GitHubScopeKind, str] | None:
    """Whose runners queuebot lists: ("org", the organizations as GITHUB_ORG writes them,
    `a,b`), ("repo", owner/name) or ("enterprise", slug); None when none is set. Raises
    ConfigError when more than one is."""
    yaml_orgs = ",".join(settings.file.github.names)
    scopes: tuple[tuple[str, GitHubScopeKind, str | None], ...] = (
        ("GITHUB_ORG", "org", settings.github_org),
        ("the YAML file's github.orgs", "org", yaml_orgs),
        ("GITHUB_REPOSITORY", "repo", settings.github_repository),
        ("GITHUB_ENTERPRISE", "enterprise", settings.github_enterprise),
    )
    named = [(variable, kind, value) for variable, kind, value in scopes if value]
    if len(named) > 1:
        raise ConfigError(
            f"{', '.join(v for v, _, _ in named[:-1])} and {named[-1][0]} are set together:"
            " queuebot lists the runners of one of them; unset the others (GitHub Actions"
            " sets GITHUB_REPOSITORY in every job)"
        )
    return (named[0][1], named[0][2]) if named else None


class _File(Protocol):
    @property
    def github(self) -> GitHubSection: ...
    @property
    def capacity_report(self) -> CapacitySettings: ...


class _Settings(Protocol):
    """What of `bot.config.Settings` is read here."""

    github_org: str | None
    github_repository: str | None
    github_enterprise: str | None
    github_org_secrets: dict[str, tuple[SecretStr, ...]]

    @property
    def file(self) -> _File: ...
    @property
    def github_orgs(self) -> tuple[str, ...]: ...


def check_github(settings: _Settings, env: Mapping[str, str], *, for_serve: bool) -> None:
    """The organizations' own hook secrets read into `settings.github_org_secrets`, and the
    capacity report's organizations checked against those watched. Raises ConfigError."""
    watched = {org.casefold() for org in settings.github_orgs}
    report = settings.file.capacity_report
    named = dict.fromkeys((*report.orgs, *(org for post in report.posts for org in post.orgs)))
    unknown = [org for org in named if org.casefold() not in watched]
    if unknown:
        raise ConfigError(
            f"the YAML file's capacity_report names {', '.join(unknown)}, not among the"
            f" organizations queuebot watches ({', '.join(settings.github_orgs) or 'none'}):"
            " name them in GITHUB_ORG or github.orgs"
        )
    settings.github_org_secrets = org_secrets(settings, env, for_serve=for_serve)


def org_secrets(
    settings: _Settings, env: Mapping[str, str], *, for_serve: bool
) -> dict[str, tuple[SecretStr, ...]]:
    """Each organization's own hook secrets, by its name case-folded. Raises ConfigError for
    `GITHUB_WEBHOOK_SECRET_<ORG>` set for no organization queuebot watches (a typo would leave
    that organization's deliveries refused), and, for `serve`, for a variable the YAML file
    names that is not set."""
    orgs = settings.github_orgs
    named = {org.name.casefold(): org.webhook_secret_env for org in settings.file.github.orgs}
    known = {secret_variable(org) for org in orgs} | {v for vs in named.values() for v in vs}
    stray = sorted(
        name
        for name, value in env.items()
        if name.startswith(ORG_SECRET_PREFIX) and value.strip() and name not in known
    )
    if stray:
        raise ConfigError(
            f"{', '.join(stray)} is set, but queuebot watches no such organization"
            f" ({', '.join(orgs) or 'none: set GITHUB_ORG'}): an organization's own secret is"
            " GITHUB_WEBHOOK_SECRET_ and its name upper-cased, with _ for -"
        )
    secrets: dict[str, tuple[SecretStr, ...]] = {}
    for org in orgs:
        listed = named.get(org.casefold(), ())
        unset = [name for name in listed if not env.get(name, "").strip()]
        if for_serve and unset:
            raise ConfigError(
                f"the YAML file's github.orgs names {', '.join(unset)} for {org}'s webhook"
                " secrets, but it is not set"
            )
        variables = dict.fromkeys((*listed, secret_variable(org)))
        found = tuple(SecretStr(env[name]) for name in variables if env.get(name, "").strip())
        if found:
            secrets[org.casefold()] = found
    return secrets
