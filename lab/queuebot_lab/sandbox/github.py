"""`GitHubSandbox`: GitHub's REST API for self-hosted runner lists, served on a real port for the
tests, the demo and benchmarks. It answers as api.github.com does; the facts, from
docs.github.com unless said otherwise:

- `GET /orgs/{org}/actions/runners`, `/repos/{owner}/{repo}/actions/runners` and
  `/enterprises/{enterprise}/actions/runners` ("REST API endpoints for self-hosted runners"),
  for more organizations than one (`add_org`) as one token with access to several lists them
  answer `{"total_count", "runners": [{id, name, os, status: online|offline, busy, ephemeral,
  runner_group_id, labels: [{id, name, type: read-only|custom}]}]}`; every runner has the
  read-only labels `self-hosted`, its architecture (`X64`) and OS (`Linux`, `macOS`), as in the
  docs' example. The organization name is not case sensitive.
- `per_page` (default 30, at most 100) and `page` (default 1). A list longer than a page has a
  `Link` header ("Using pagination in the REST API"): `prev`, `next`, `last`, `first`, in that
  order, each present only when it applies; the URL keeps the request's other parameters and
  adds `page`. api.github.com links an organization's and a repository's pages by id
  (`/organizations/{id}/…`, `/repositories/{id}/…`, as link headers quoted in public code
  show); those paths are served too. Under `api_prefix="/api/v3"` it is GitHub Enterprise
  Server's API.
- Every authenticated answer carries `X-RateLimit-Limit`, `-Remaining`, `-Used`, `-Reset` (UTC
  epoch seconds) and `-Resource: core` ("Rate limits for the REST API"). With the budget spent:
  403, `X-RateLimit-Remaining: 0`, "API rate limit exceeded for …", until the reset. A secondary
  limit (`throttle`): 403 or 429, "You have exceeded a secondary rate limit…", with
  `Retry-After` when given.
- A missing or wrong token: 401 `{"message": "Bad credentials", "documentation_url":
  "https://docs.github.com/rest", "status": "401"}` ("Requires authentication" with none), with
  the rate limit of an unauthenticated caller (60).
- A token without the permission (`missing_permission`): a GitHub App's is answered 403
  "Resource not accessible by integration", a fine-grained token's "… by personal access
  token", both with `X-Accepted-GitHub-Permissions` (github.blog changelog 2023-08-10; it is
  sent to every such caller); a classic token's 403 "Must have admin rights to Repository."
  (quoted for the organization list in tchelovilar/github-org-runner-exporter#15), its answers
  carrying `X-OAuth-Scopes` and `X-Accepted-OAuth-Scopes`. Enterprise lists take classic tokens
  only. An unknown organization, repository or enterprise: 404 "Not Found".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from aiohttp import web

from queuebot_lab.sandbox import github_apps as apps
from queuebot_lab.sandbox.github_actions import ActionsHistory, add_history_routes
from queuebot_lab.sandbox.github_actions import github_error as _error
from queuebot_lab.sandbox.github_pages import paginate
from queuebot_lab.sandbox.serving import serve

_DOCS = "https://docs.github.com/rest/actions/self-hosted-runners#list-self-hosted-runners-for-"
_RATE_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api"
_READ_ONLY_IDS = {"self-hosted": 5, "X64": 7, "ARM64": 9, "Linux": 11, "Windows": 15, "macOS": 20}
_OS_LABEL = {"linux": "Linux", "windows": "Windows", "macos": "macOS"}
_NEEDS = {  # what each list takes: X-Accepted-GitHub-Permissions, X-Accepted-OAuth-Scopes
    "org": ("organization_self_hosted_runners=read", "admin:org"),
    "repo": ("administration=read", "repo"),
    "enterprise": ("", "manage_runners:enterprise"),
}


class GitHubTokenKind(StrEnum):
    APP = "app"
    FINE_GRAINED = "fine-grained"
    CLASSIC = "classic"


@dataclass
class SandboxRunner:
    """A self-hosted runner; `labels` are its custom labels (its runner types)."""

    id: int
    name: str
    labels: tuple[str, ...] = ()
    status: str = "online"
    busy: bool = False
    os: str = "linux"
    architecture: str = "X64"
    ephemeral: bool = True
    runner_group_id: int = 1


@dataclass(frozen=True)
class ReceivedRequest:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    status: int


@dataclass
class _Fault:
    status: int
    retry_after: int | None
    message: str


class GitHubSandbox:
    """The runner lists of one organization, one repository and one enterprise."""

    def __init__(
        self,
        token: str,
        *,
        org: str = "pytorch",
        org_id: int = 21003710,
        repository: str = "pytorch/pytorch",
        repository_id: int = 65600975,
        enterprise: str = "pytorch-enterprise",
        api_prefix: str = "",
        token_kind: GitHubTokenKind = GitHubTokenKind.APP,
        rate_limit: int = 5000,
        rate_window: timedelta = timedelta(hours=1),
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.token = token
        self.org, self.org_id = org, org_id
        self.repository, self.repository_id = repository, repository_id
        self.enterprise = enterprise
        self.api_prefix = api_prefix
        self.token_kind = token_kind
        #: The token lacks the permission (or scope) the lists take.
        self.missing_permission = False
        self.rate_limit = rate_limit
        #: How long a budget lasts before it is renewed (GitHub's hour; shorter in a test that
        #: waits for the reset).
        self.rate_window = rate_window
        self.clock = clock or (lambda: datetime.now(UTC))
        #: What the lists hold: SandboxRunner, or a dict served exactly as given.
        self.runners: list[SandboxRunner | dict[str, Any]] = []
        #: More organizations the same token lists, by name: each one's id and runners.
        self.orgs: dict[str, tuple[int, list[SandboxRunner | dict[str, Any]]]] = {}
        #: Every request received, in order.
        self.requests: list[ReceivedRequest] = []
        #: The token's budget in the current hour (None until the first request opens one).
        self.remaining: int | None = None
        self.reset_at: datetime | None = None
        #: Every organization's repositories (by `owner/name`), their workflow runs and jobs.
        self.history = ActionsHistory()
        #: A GitHub App whose installation tokens are taken too (`github_apps`).
        self.app: apps.SandboxApp | None = None
        self._faults: list[_Fault] = []
        self._label_ids: dict[str, int] = {}
        self._unauthenticated = 0
        self._runner: web.AppRunner | None = None
        self._url: str | None = None

    # -- what the tests set --------------------------------------------------------------------

    def add_runners(
        self,
        labels: str | Sequence[str],
        *,
        idle: int = 0,
        busy: int = 0,
        offline: int = 0,
        os: str = "linux",
        org: str | None = None,
    ) -> list[SandboxRunner]:
        """Add runners with these custom labels: `idle` and `busy` online ones, `offline` ones;
        to `org`'s list (`add_org`), else to the main one."""
        labels = (labels,) if isinstance(labels, str) else tuple(labels)
        held = self.runners if org is None else self.orgs[org][1]
        made = []
        for status, is_busy, count in (
            ("online", False, idle),
            ("online", True, busy),
            ("offline", False, offline),
        ):
            for _ in range(count):
                number = len(self.runners) + sum(len(r) for _, r in self.orgs.values()) + 1
                name = f"{labels[0] if labels else 'runner'}-{number}"
                made.append(SandboxRunner(number, name, labels, status, is_busy, os))
                held.append(made[-1])
        return made

    def add_org(self, name: str, org_id: int | None = None) -> None:
        """One more organization the token lists; runner ids count across all, as GitHub's."""
        self.orgs[name] = (org_id or self.org_id + len(self.orgs) + 1, [])

    def throttle(self, *, status: int = 403, retry_after: int | None = 60, times: int = 1) -> None:
        """The next `times` requests hit a secondary rate limit."""
        message = (
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try"
            " again. If you reach out to GitHub Support for help, please include the request ID"
            " 0000:1111:2222222:3333333:44444444."
        )
        self._faults += [_Fault(status, retry_after, message) for _ in range(times)]

    def fail(self, status: int = 502, *, times: int = 1) -> None:
        """The next `times` requests are answered `status` (GitHub in trouble)."""
        self._faults += [_Fault(status, None, "Server Error") for _ in range(times)]

    def spend(self, *, leaving: int = 0) -> None:
        """Spend the hour's budget down to `leaving` requests; with none left, every request
        until the reset is refused."""
        self._window(self.clock(), self)
        self.remaining = leaving

    def listings(self) -> list[ReceivedRequest]:
        """The requests for a runners list (every page counts)."""
        return [r for r in self.requests if r.path.endswith("/actions/runners")]

    # -- answers -------------------------------------------------------------------------------

    def _window(self, now: datetime, holder: GitHubSandbox | apps.SandboxInstallation) -> None:
        """A new window for a budget (this token's, an App installation's) once one is over."""
        if holder.reset_at is None or now >= holder.reset_at:
            holder.remaining = holder.rate_limit
            holder.reset_at = now.replace(microsecond=0) + self.rate_window

    def _budget_headers(self, limit: int, remaining: int, reset: datetime) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Reset": str(int(reset.timestamp())),
            "X-RateLimit-Used": str(limit - remaining),
            "X-RateLimit-Resource": "core",
        }

    def _token_headers(self, kind: str) -> dict[str, str]:
        permission, scope = _NEEDS[kind]
        if self.token_kind is GitHubTokenKind.CLASSIC:
            granted = "repo" if self.missing_permission else f"{scope}, repo"
            return {"X-OAuth-Scopes": granted, "X-Accepted-OAuth-Scopes": scope}
        return {"X-Accepted-GitHub-Permissions": permission} if permission else {}

    def _runner_json(self, runner: SandboxRunner | dict[str, Any]) -> dict[str, Any]:
        if isinstance(runner, dict):
            return runner
        fixed = ["self-hosted", runner.architecture, _OS_LABEL.get(runner.os, runner.os)]
        labels = [
            {"id": _READ_ONLY_IDS.get(name, 3), "name": name, "type": "read-only"} for name in fixed
        ]
        for name in runner.labels:
            label_id = self._label_ids.setdefault(name, 100 + len(self._label_ids))
            labels.append({"id": label_id, "name": name, "type": "custom"})
        return {
            "id": runner.id,
            "name": runner.name,
            "os": runner.os,
            "status": runner.status,
            "busy": runner.busy,
            "ephemeral": runner.ephemeral,
            "runner_group_id": runner.runner_group_id,
            "labels": labels,
        }

    def _scope(self, request: web.Request) -> tuple[str, str] | None:
        """(kind, the path pages are linked under), or None for no such org/repo/enterprise."""
        found, rest = request.match_info, "/actions/runners"
        if "org" in found and found["org"].lower() == self.org.lower():
            return "org", f"/organizations/{self.org_id}{rest}"
        if found.get("org_id") == str(self.org_id):
            return "org", f"/organizations/{self.org_id}{rest}"
        for name, (org_id, _) in self.orgs.items():
            if found.get("org", "").lower() == name.lower() or found.get("org_id") == str(org_id):
                return "org", f"/organizations/{org_id}{rest}"
        named = f"{found.get('owner')}/{found.get('repo')}"
        if "repo" in found and named.lower() == self.repository.lower():
            return "repo", f"/repositories/{self.repository_id}{rest}"
        if found.get("repo_id") == str(self.repository_id):
            return "repo", f"/repositories/{self.repository_id}{rest}"
        if found.get("enterprise", "").lower() == self.enterprise.lower():
            return "enterprise", f"/enterprises/{self.enterprise}{rest}"
        return None

    def gate(self, request: web.Request) -> dict[str, str] | web.Response:
        """The checks every request meets first: the token (or an App installation's, for its
        account), the budget, a fault set up; the headers to answer with, else the refusal."""
        now = self.clock()
        scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
        bearer = scheme.lower() in ("bearer", "token")
        installation = self.app.holder(credential, now) if bearer and self.app else None
        holder: GitHubSandbox | apps.SandboxInstallation = installation or self
        if installation is None and (not bearer or credential != self.token):
            self._unauthenticated += 1
            message = "Bad credentials" if credential else "Requires authentication"
            headers = self._budget_headers(
                60, max(0, 60 - self._unauthenticated), now + timedelta(hours=1)
            )
            return _error(401, message, "https://docs.github.com/rest", headers)
        self._window(now, holder)
        assert holder.remaining is not None and holder.reset_at is not None
        if holder.remaining == 0:
            headers = self._budget_headers(holder.rate_limit, 0, holder.reset_at)
            return _error(403, "API rate limit exceeded for user ID 1.", _RATE_DOCS, headers)
        holder.remaining -= 1
        headers = self._budget_headers(holder.rate_limit, holder.remaining, holder.reset_at)
        if self.token_kind is GitHubTokenKind.CLASSIC and installation is None:
            headers["X-OAuth-Scopes"] = "repo" if self.missing_permission else "admin:org, repo"
        if self._faults:
            fault = self._faults.pop(0)
            if fault.retry_after is not None:
                headers["Retry-After"] = str(fault.retry_after)
            return _error(fault.status, fault.message, _RATE_DOCS, headers)
        if installation is not None:
            return apps.installation_refusal(self, installation, request, headers) or headers
        return headers

    def _answer(self, request: web.Request) -> web.Response:
        headers = self.gate(request)
        if isinstance(headers, web.Response):
            return headers
        if (scope := self._scope(request)) is None:
            return _error(404, "Not Found", "https://docs.github.com/rest", headers)
        kind, linked = scope
        headers |= self._token_headers(kind)
        docs = _DOCS + {"org": "an-organization", "repo": "a-repository"}.get(kind, "an-enterprise")
        classic = self.token_kind is GitHubTokenKind.CLASSIC
        if self.missing_permission or (kind == "enterprise" and not classic):
            message = {
                GitHubTokenKind.APP: "Resource not accessible by integration",
                GitHubTokenKind.FINE_GRAINED: "Resource not accessible by personal access token",
            }.get(self.token_kind, "Must have admin rights to Repository.")
            return _error(403, message, docs, headers)
        return self._page(request, linked, headers)

    def _page(self, request: web.Request, linked: str, headers: dict[str, str]) -> web.Response:
        held = [r for i, r in self.orgs.values() if linked.startswith(f"/organizations/{i}/")]
        listed: list[SandboxRunner | dict[str, Any]] = list(held[0] if held else self.runners)
        if name := request.query.get("name"):
            listed = [r for r in listed if self._runner_json(r).get("name") == name]
        shown, total = self.page(request, listed, linked, headers)
        body = {"total_count": total, "runners": [self._runner_json(r) for r in shown]}
        return web.json_response(body, headers=headers, content_type="application/json")

    def page(
        self,
        request: web.Request,
        listed: Sequence[Any],
        linked: str,
        headers: dict[str, str],
        reachable: int | None = None,
    ) -> tuple[list[Any], int]:
        """The request's page of `listed` (`github_pages.paginate`), its pages linked under
        `linked` as api.github.com links them."""
        base = f"{request.url.origin()}{self.api_prefix}{linked}"
        return paginate(request, listed, base, headers, reachable)

    @web.middleware
    async def _record(
        self, request: web.Request, handler: Callable[[web.Request], Any]
    ) -> web.StreamResponse:
        response: web.StreamResponse = await handler(request)
        self.requests.append(
            ReceivedRequest(
                request.path, dict(request.query), dict(request.headers), response.status
            )
        )
        return response

    def create_app(self) -> web.Application:
        async def runners(request: web.Request) -> web.Response:
            return self._answer(request)

        async def unknown(request: web.Request) -> web.Response:
            return _error(404, "Not Found", "https://docs.github.com/rest", {})

        app = web.Application(middlewares=[self._record])
        prefix = self.api_prefix
        for path in (
            "/orgs/{org}",
            "/organizations/{org_id}",
            "/repos/{owner}/{repo}",
            "/repositories/{repo_id}",
            "/enterprises/{enterprise}",
        ):
            app.router.add_get(f"{prefix}{path}/actions/runners", runners)
        add_history_routes(app, self)
        apps.add_app_routes(app, self)
        app.router.add_route("*", "/{tail:.*}", unknown)
        return app

    # -- serving -------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Serve on `host:port` (0 picks a free port); `url` says where."""
        self._runner, self._url = await serve(self.create_app(), host, port, access_log=False)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._url = None

    async def __aenter__(self) -> GitHubSandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def url(self) -> str:
        """Base URL to use as GITHUB_API_URL: http://127.0.0.1:PORT, plus `api_prefix`."""
        if self._url is None:
            raise RuntimeError("the GitHub sandbox is not serving: call start() first")
        return f"{self._url}{self.api_prefix}"
