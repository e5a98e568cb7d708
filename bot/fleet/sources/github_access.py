"""Whose runners queuebot lists, and what its token needs for that: the scope (GITHUB_ORG,
GITHUB_REPOSITORY or GITHUB_ENTERPRISE) and GitHub's refusals put in words an admin acts on.

What each listing needs (docs.github.com, "REST API endpoints for self-hosted runners"):

- an organization's: the organization permission "Self-hosted runners" (read),
  `organization_self_hosted_runners`, for a fine-grained token or GitHub App; `admin:org` for a
  classic token, whose owner must be an owner of the organization;
- a repository's: the repository permission "Administration" (read), `administration`; `repo`
  for a classic token, whose owner must be an admin of the repository;
- an enterprise's: `manage_runners:enterprise`, a classic token's scope only (fine-grained
  tokens and GitHub Apps cannot list them).

GitHub names the permission an endpoint takes in `X-Accepted-GitHub-Permissions` (sets
separated by ";", the permissions of a set by ","; github.blog changelog 2023-08-10) and, to
classic tokens, the scopes in `X-Accepted-OAuth-Scopes` next to the token's own `X-OAuth-Scopes`.
An app or fine-grained token without the permission is answered 403 "Resource not accessible by
integration" (or "… by personal access token"); a classic token without `admin:org`, or whose
owner is no owner of the organization, 403 "Must have admin rights to Repository." — even for an
organization.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import quote


class ScopeKind(StrEnum):
    ORG = "org"
    REPOSITORY = "repo"
    ENTERPRISE = "enterprise"


@dataclass(frozen=True)
class RunnerScope:
    """Whose runners are listed: an organization, a repository (owner/repo) or an enterprise
    (its slug)."""

    kind: ScopeKind
    name: str

    @property
    def path(self) -> str:
        """The list's path under GITHUB_API_URL."""
        parts = "/".join(quote(part, safe="") for part in self.name.split("/"))
        prefix = {"org": "orgs", "repo": "repos", "enterprise": "enterprises"}[self.kind]
        return f"/{prefix}/{parts}/actions/runners"

    @property
    def setting(self) -> str:
        """The environment variable that names it."""
        return {"org": "GITHUB_ORG", "repo": "GITHUB_REPOSITORY"}.get(
            self.kind, "GITHUB_ENTERPRISE"
        )

    def __str__(self) -> str:
        return f"{'repository' if self.kind is ScopeKind.REPOSITORY else self.kind} {self.name}"


#: GitHub's permission names, as its token settings page shows them.
_PERMISSIONS = {
    "organization_self_hosted_runners": ("organization", "Self-hosted runners"),
    "organization_administration": ("organization", "Administration"),
    "administration": ("repository", "Administration"),
}
_NEEDS = {
    ScopeKind.ORG: (
        "the organization permission 'Self-hosted runners: read' (a fine-grained token or"
        " GitHub App) or the scope 'admin:org' (a classic token)"
    ),
    ScopeKind.REPOSITORY: (
        "the repository permission 'Administration: read' (a fine-grained token or GitHub App)"
        " or the scope 'repo' (a classic token)"
    ),
    ScopeKind.ENTERPRISE: (
        "the scope 'manage_runners:enterprise' (a classic token: fine-grained tokens and GitHub"
        " Apps cannot list an enterprise's runners)"
    ),
}
_ADMIN = {
    ScopeKind.ORG: "an owner of the organization",
    ScopeKind.REPOSITORY: "an admin of the repository",
    ScopeKind.ENTERPRISE: "an owner of the enterprise",
}


def _permission_words(header: str) -> str | None:
    """`organization_self_hosted_runners=read` → the organization permission 'Self-hosted
    runners: read'; alternatives joined by "or"."""
    sets = []
    for accepted in header.split(";"):
        wanted = []
        for item in accepted.split(","):
            name, _, level = item.strip().partition("=")
            if not name:
                continue
            kind, words = _PERMISSIONS.get(name, ("", name.replace("_", " ").capitalize()))
            of = f"{kind} " if kind else ""
            wanted.append(f"the {of}permission '{words}: {level.strip() or 'read'}'")
        if wanted:
            sets.append(" and ".join(wanted))
    return " or ".join(sets) or None


def _scope_words(header: str) -> str | None:
    scopes = [f"'{s.strip()}'" for s in header.split(",") if s.strip()]
    if not scopes:
        return None
    if len(scopes) == 1:
        return f"the scope {scopes[0]}"
    return f"one of the scopes {', '.join(scopes)}"


def needed_for(scope: RunnerScope, headers: Mapping[str, str]) -> str:
    """What the token must be given, from GitHub's headers when it sent them."""
    classic = "X-OAuth-Scopes" in headers
    if classic and (words := _scope_words(headers.get("X-Accepted-OAuth-Scopes", ""))):
        granted = headers.get("X-OAuth-Scopes", "").strip() or "none"
        return f"{words} (it is a classic token with the scopes: {granted})"
    if words := _permission_words(headers.get("X-Accepted-GitHub-Permissions", "")):
        return words
    return _NEEDS[scope.kind]


def denied_message(scope: RunnerScope, message: str, headers: Mapping[str, str]) -> tuple[str, str]:
    """A 403 that is no rate limit: the sentence for the admin, and what is needed."""
    needed = needed_for(scope, headers)
    detail = (
        f"GITHUB_TOKEN needs {needed} to list the self-hosted runners of {scope}"
        f" (GitHub answered 403: {message})"
    )
    if "admin rights" in message.lower():
        detail += f"; the token's owner must also be {_ADMIN[scope.kind]}"
    return detail, needed


def not_found_message(scope: RunnerScope, where: str, headers: Mapping[str, str]) -> str:
    """A 404: no such org, repository or enterprise, or none this token may see."""
    what = {"org": "organization", "repo": "repository"}.get(scope.kind, "enterprise")
    detail = f"{where} shows GITHUB_TOKEN no {what} {scope.name!r} (404): check {scope.setting}"
    if scope.kind is ScopeKind.ORG:
        detail += "; the token's owner must belong to it, or the GitHub App be installed on it"
    elif scope.kind is ScopeKind.REPOSITORY:
        detail += "; a fine-grained token or GitHub App must have been given this repository"
    else:
        detail += " (the enterprise's slug); the token's owner must be an owner of it"
    if "X-Accepted-GitHub-Permissions" in headers or "X-OAuth-Scopes" in headers:
        detail += f"; the token also needs {needed_for(scope, headers)}"
    return detail
