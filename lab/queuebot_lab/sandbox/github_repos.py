"""The repositories `GitHubSandbox` holds, of every owner, and an organization's list of them as
`GET /orgs/{org}/repos` answers it ("List organization repositories", "REST API endpoints for
repositories" on docs.github.com):

- Only the repositories the organization owns (the owner in `owner/name`, not case
  sensitive: "The organization name is not case sensitive"); an organization GitHub does not
  have, or a user's name, is answered 404 `{"message": "Not Found", "documentation_url":
  "https://docs.github.com/rest/repos/repos#list-organization-repositories", "status": "404"}`,
  the body quoted from api.github.com in KEDA's troubleshooting page and in public code that
  captured `gh api orgs/<a user>/repos`.
- `type`: `all` (the default), `public`, `private`, `forks`, `sources`, `member`, `internal`.
  The sandbox holds no forks and no internal repositories, so `forks` and `internal` list
  none and `sources` and `member` list every one.
- `sort`: `created` (the default), `updated`, `pushed`, `full_name`; `direction`: `asc` or
  `desc`, by default "asc when using full_name, otherwise desc". The sandbox's repositories
  are never pushed to: `updated` and `pushed` order them as `created` does.
- Each item is a repository (`id`, `node_id`, `name`, `full_name`, `owner.login`, `private`,
  `fork`, `archived`, `visibility`, `created_at`, `updated_at`, `pushed_at`, …), 30 a page
  unless `per_page` (at most 100) says otherwise, the pages linked under
  `/organizations/{org_id}/repos` as the runner lists' pages are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

#: Where the documentation of the list sends a caller it answers 404.
ORG_REPOS_DOCS = "https://docs.github.com/rest/repos/repos#list-organization-repositories"
#: When the first repository the sandbox makes was created; each next one a minute later,
#: so creation follows the ids, as on GitHub.
_FIRST_CREATED = datetime(2020, 1, 6, 9, 0, tzinfo=UTC)
_FIRST_ID = 100_000


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class SandboxRepository:
    id: int
    full_name: str
    private: bool = False
    archived: bool = False
    #: The token may not read its Actions (a repository an App was not given): 404.
    hidden: bool = False
    #: run id → its jobs (every attempt), as delivered.
    runs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    created_at: datetime | None = None

    @property
    def owner(self) -> str:
        return self.full_name.partition("/")[0]

    @property
    def created(self) -> datetime:
        return self.created_at or _FIRST_CREATED + timedelta(minutes=self.id - _FIRST_ID)

    def json(self) -> dict[str, Any]:
        owner, _, name = self.full_name.partition("/")
        api = f"https://api.github.com/repos/{self.full_name}"
        created = _stamp(self.created)
        return {
            "id": self.id,
            "node_id": f"R_kgDO{self.id:x}",
            "name": name,
            "full_name": self.full_name,
            "private": self.private,
            "owner": {"login": owner, "type": "Organization"},
            "html_url": f"https://github.com/{self.full_name}",
            "fork": False,
            "url": api,
            "created_at": created,
            "updated_at": created,
            "pushed_at": created,
            "archived": self.archived,
            "disabled": False,
            "visibility": "private" if self.private else "public",
            "default_branch": "main",
        }


def next_repository(full_name: str, made: int) -> SandboxRepository:
    """The sandbox's `made`+1-th repository."""
    return SandboxRepository(_FIRST_ID + made, full_name)


def _of_type(repository: SandboxRepository, kind: str) -> bool:
    if kind == "public":
        return not repository.private
    if kind == "private":
        return repository.private
    return kind not in ("forks", "internal")


def org_repositories(
    repositories: Iterable[SandboxRepository], org: str, query: dict[str, str]
) -> list[dict[str, Any]]:
    """`org`'s repositories as its list gives them for `query` (`type`, `sort`,
    `direction`)."""
    kind = query.get("type", "all")
    owned = [r for r in repositories if r.owner.lower() == org.lower() and _of_type(r, kind)]
    by = query.get("sort", "created")
    direction = query.get("direction", "")
    if direction not in ("asc", "desc"):
        direction = "asc" if by == "full_name" else "desc"
    descending = direction == "desc"
    if by == "full_name":
        owned.sort(key=lambda r: r.full_name.lower(), reverse=descending)
    else:
        owned.sort(key=lambda r: (r.created, r.id), reverse=descending)
    return [repository.json() for repository in owned]
