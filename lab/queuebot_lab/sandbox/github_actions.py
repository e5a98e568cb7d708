"""What `GitHubSandbox` knows of GitHub Actions' history: the repositories of every organization
it knows (`GitHubSandbox.org` and those of `add_org`), keyed by their `owner/name`, their
workflow runs and each run's jobs, every attempt, answered as api.github.com answers them. The
facts, from docs.github.com ("REST API endpoints for repositories", "… for workflow runs",
"… for workflow jobs") unless said otherwise:

- `GET /orgs/{org}/repos` and its pages `/organizations/{org_id}/repos`: the repositories the
  organization owns, as `github_repos` says; 404 "Not Found" for an organization the sandbox
  does not know.
- `GET /repos/{owner}/{repo}/actions/runs`: `{"total_count", "workflow_runs": [...]}`, newest
  first. `created` takes GitHub's search syntax for dates (`YYYY-MM-DD`, a time in ISO 8601,
  `>=`, `<=`, `>`, `<`, `A..B`, `A..*`, `*..B`; a date alone is its whole day). With `created`
  (or `status`, `branch`, `event`, `actor`, `head_sha`, `check_suite_id`) "this API will return up
  to 1,000 results for each search": `total_count` says how many match, and pages past the
  thousandth run are empty.
- `GET /repos/{owner}/{repo}/actions/runs/{run_id}/jobs`: `{"total_count", "jobs": [...]}`;
  `filter=latest` (the default) the jobs of the run's latest attempt, `filter=all` every
  attempt's.
- `GET /repos/{owner}/{repo}`: the repository ("Get a repository"), 404 when the token may not
  see it.
- `GET /repos/{owner}/{repo}/actions/jobs/{job_id}`: the job, the same fields as a
  `workflow_job` delivery's; 404 "Not Found" once GitHub no longer has it (`forget`).

A job is given as a `workflow_job` delivery's `workflow_job` (the REST job has the same fields);
its run is made from its jobs: created with the first attempt's first job, its status the least
advanced of its latest attempt's jobs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from aiohttp import web

from queuebot_lab.sandbox.github_repos import (
    ORG_REPOS_DOCS,
    SandboxRepository,
    next_repository,
    org_repositories,
)

if TYPE_CHECKING:
    from queuebot_lab.sandbox.github import GitHubSandbox

#: "This API will return up to 1,000 results for each search" with a filter such as `created`.
SEARCH_CAP = 1000
#: The filters the cap applies with.
_CAPPED = ("actor", "branch", "check_suite_id", "created", "event", "head_sha", "status")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_STATUS_ORDER = {"waiting": 0, "queued": 1, "in_progress": 2, "completed": 3}


class BadQuery(ValueError):
    """A `created` GitHub would not understand (it answers 422 Validation Failed)."""


def _moment(text: str, *, upper: bool) -> datetime | None:
    """One side of a range: `*` is open; a date alone is its first (or last) moment."""
    text = text.strip()
    if text == "*":
        return None
    try:
        if _DATE.fullmatch(text):
            day = datetime.fromisoformat(text).replace(tzinfo=UTC)
            return day + timedelta(days=1) - timedelta(microseconds=1) if upper else day
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadQuery(f"{text!r} is not a date") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def created_range(query: str) -> tuple[datetime | None, datetime | None]:
    """`created=…` as an inclusive range (None: open)."""
    query = query.strip()
    for sign in (">=", "<=", ">", "<"):
        if query.startswith(sign):
            rest = query[len(sign) :]
            tiny = timedelta(microseconds=1)
            if sign == ">=":
                return _moment(rest, upper=False), None
            if sign == "<=":
                return None, _moment(rest, upper=True)
            moment = _moment(rest, upper=sign == ">")
            assert moment is not None
            return (moment + tiny, None) if sign == ">" else (None, moment - tiny)
    if ".." in query:
        low, _, high = query.partition("..")
        return _moment(low, upper=False), _moment(high, upper=True)
    return _moment(query, upper=False), _moment(query, upper=True)


def _when(stamp: str | None) -> datetime:
    assert stamp is not None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


class ActionsHistory:
    """Repositories, of any owner, by `owner/name`, and their runs and jobs."""

    def __init__(self) -> None:
        self.repositories: dict[str, SandboxRepository] = {}
        self._jobs: dict[int, tuple[SandboxRepository, dict[str, Any]]] = {}

    def repository(self, full_name: str, **kind: Any) -> SandboxRepository:
        """The repository, added (with `kind`: private, archived, hidden) when new."""
        key = full_name.lower()
        if key not in self.repositories:
            self.repositories[key] = next_repository(full_name, len(self.repositories))
        found = self.repositories[key]
        for name, value in kind.items():
            setattr(found, name, value)
        return found

    def add_jobs(self, repository: str, jobs: Iterable[dict[str, Any]]) -> None:
        """Jobs of `repository` as GitHub has them now (a `workflow_job` each); a job given
        again replaces what was known of it."""
        repo = self.repository(repository)
        for job in jobs:
            known = self._jobs.get(job["id"])
            if known is not None:
                known[0].runs[known[1]["run_id"]].remove(known[1])
            repo.runs.setdefault(job["run_id"], []).append(job)
            self._jobs[job["id"]] = (repo, job)

    def add_bodies(self, bodies: Iterable[dict[str, Any]]) -> None:
        """Each `workflow_job` delivery's job, in its delivery's repository."""
        for body in bodies:
            self.add_jobs(body["repository"]["full_name"], [body["workflow_job"]])

    def forget(self, job_id: int) -> None:
        """GitHub no longer has the job (its run deleted, or past its retention)."""
        repo, job = self._jobs.pop(job_id)
        jobs = repo.runs[job["run_id"]]
        jobs.remove(job)
        if not jobs:
            del repo.runs[job["run_id"]]

    def jobs(self) -> int:
        return len(self._jobs)

    # -- answers -------------------------------------------------------------------------------

    def listed_repositories(self, org: str, query: dict[str, str]) -> list[dict[str, Any]]:
        """What `GET /orgs/{org}/repos` lists for `query`."""
        return org_repositories(self.repositories.values(), org, query)

    def find(self, full_name: str) -> SandboxRepository | None:
        repo = self.repositories.get(full_name.lower())
        return None if repo is None or repo.hidden else repo

    def run_json(self, repo: SandboxRepository, run_id: int) -> dict[str, Any]:
        jobs = repo.runs[run_id]
        attempt = max(job.get("run_attempt", 1) for job in jobs)
        latest = [job for job in jobs if job.get("run_attempt", 1) == attempt]
        first = min(jobs, key=lambda job: (job.get("run_attempt", 1), job["created_at"]))
        status = min((job["status"] for job in latest), key=lambda s: _STATUS_ORDER.get(s, 0))
        conclusions = {job.get("conclusion") for job in latest}
        conclusion = None
        if status == "completed":
            conclusion = "failure" if "failure" in conclusions else "success"
            if conclusions == {"cancelled"}:
                conclusion = "cancelled"
        updated = max(
            job.get("completed_at") or job.get("started_at") or job["created_at"] for job in jobs
        )
        api = f"https://api.github.com/repos/{repo.full_name}/actions/runs/{run_id}"
        return {
            "id": run_id,
            "name": first.get("workflow_name"),
            "node_id": f"WFR_kwLO{run_id:x}",
            "head_branch": first.get("head_branch"),
            "head_sha": first.get("head_sha"),
            "run_number": run_id % 100_000,
            "run_attempt": attempt,
            "event": "push",
            "status": status,
            "conclusion": conclusion,
            "workflow_id": 1,
            "url": api,
            "html_url": f"https://github.com/{repo.full_name}/actions/runs/{run_id}",
            "jobs_url": f"{api}/jobs",
            "created_at": first["created_at"],
            "updated_at": updated,
            "run_started_at": max(job["created_at"] for job in latest),
            "repository": repo.json(),
        }

    def listed_runs(
        self, repo: SandboxRepository, query: dict[str, str]
    ) -> tuple[list[dict[str, Any]], int | None]:
        """The runs the query selects, newest first, and how many of them pages may reach
        (None: all of them)."""
        low, high = created_range(query["created"]) if "created" in query else (None, None)
        runs = [self.run_json(repo, run_id) for run_id in repo.runs]
        if status := query.get("status"):
            runs = [r for r in runs if status in (r["status"], r["conclusion"])]
        runs = [
            run
            for run in runs
            if (low is None or _when(run["created_at"]) >= low)
            and (high is None or _when(run["created_at"]) <= high)
        ]
        runs.sort(key=lambda run: (run["created_at"], run["id"]), reverse=True)
        capped = any(name in query for name in _CAPPED)
        return runs, SEARCH_CAP if capped else None

    def listed_jobs(
        self, repo: SandboxRepository, run_id: int, every_attempt: bool
    ) -> list[dict[str, Any]] | None:
        jobs = repo.runs.get(run_id)
        if jobs is None:
            return None
        attempt = max(job.get("run_attempt", 1) for job in jobs)
        chosen = [job for job in jobs if every_attempt or job.get("run_attempt", 1) == attempt]
        return sorted(chosen, key=lambda job: (job.get("run_attempt", 1), job["id"]))

    def job(self, repo: SandboxRepository, job_id: int) -> dict[str, Any] | None:
        found = self._jobs.get(job_id)
        return found[1] if found is not None and found[0] is repo else None


def github_error(
    status: int, message: str, documentation_url: str, headers: dict[str, str]
) -> web.Response:
    """GitHub's error body: `message`, `documentation_url`, `status` (a string)."""
    body = {"message": message, "documentation_url": documentation_url, "status": str(status)}
    return web.json_response(body, status=status, headers=headers)


_REST_DOCS = "https://docs.github.com/rest"


def organization(sandbox: GitHubSandbox, request: web.Request) -> tuple[str, int] | None:
    """The organization a request names (`{org}`, any case, or `{org_id}`), with its id; None
    for one the sandbox does not know."""
    found = request.match_info
    known = [(sandbox.org, sandbox.org_id)]
    known += [(name, org_id) for name, (org_id, _) in sandbox.orgs.items()]
    for name, org_id in known:
        if found.get("org", "").lower() == name.lower() or found.get("org_id") == str(org_id):
            return name, org_id
    return None


def add_history_routes(app: web.Application, sandbox: GitHubSandbox) -> None:
    """The history's endpoints on the sandbox's app, behind its token and rate limit."""
    history = sandbox.history

    def answer(body: object, headers: dict[str, str]) -> web.Response:
        return web.json_response(body, headers=headers, content_type="application/json")

    def repository(request: web.Request) -> SandboxRepository | None:
        found = request.match_info
        if "repo_id" in found:
            by_id = [r for r in history.repositories.values() if str(r.id) == found["repo_id"]]
            return history.find(by_id[0].full_name) if by_id else None
        return history.find(f"{found['owner']}/{found['repo']}")

    async def repos(request: web.Request) -> web.Response:
        headers = sandbox.gate(request)
        if isinstance(headers, web.Response):
            return headers
        if (org := organization(sandbox, request)) is None:
            return github_error(404, "Not Found", ORG_REPOS_DOCS, headers)
        name, org_id = org
        listed = history.listed_repositories(name, dict(request.query))
        shown, _ = sandbox.page(request, listed, f"/organizations/{org_id}/repos", headers)
        return answer(shown, headers)

    async def runs(request: web.Request) -> web.Response:
        headers = sandbox.gate(request)
        if isinstance(headers, web.Response):
            return headers
        if (repo := repository(request)) is None:
            return github_error(404, "Not Found", _REST_DOCS, headers)
        try:
            listed, reachable = history.listed_runs(repo, dict(request.query))
        except BadQuery as exc:
            return github_error(422, f"Validation Failed: {exc}", _REST_DOCS, headers)
        linked = f"/repositories/{repo.id}/actions/runs"
        shown, total = sandbox.page(request, listed, linked, headers, reachable)
        return answer({"total_count": total, "workflow_runs": shown}, headers)

    async def jobs(request: web.Request) -> web.Response:
        headers = sandbox.gate(request)
        if isinstance(headers, web.Response):
            return headers
        run_id = request.match_info["run_id"]
        repo = repository(request)
        every = request.query.get("filter", "latest")
        if every not in ("latest", "all"):
            return github_error(422, "Validation Failed", _REST_DOCS, headers)
        listed = None
        if repo is not None and run_id.isdigit():
            listed = history.listed_jobs(repo, int(run_id), every == "all")
        if repo is None or listed is None:
            return github_error(404, "Not Found", _REST_DOCS, headers)
        linked = f"/repositories/{repo.id}/actions/runs/{run_id}/jobs"
        shown, total = sandbox.page(request, listed, linked, headers)
        return answer({"total_count": total, "jobs": shown}, headers)

    async def job(request: web.Request) -> web.Response:
        headers = sandbox.gate(request)
        if isinstance(headers, web.Response):
            return headers
        repo, job_id = repository(request), request.match_info["job_id"]
        found = history.job(repo, int(job_id)) if repo is not None and job_id.isdigit() else None
        if found is None:
            return github_error(404, "Not Found", _REST_DOCS, headers)
        return answer(found, headers)

    async def one_repository(request: web.Request) -> web.Response:
        # "Get a repository": 404 "Not Found" for one the token may not see.
        headers = sandbox.gate(request)
        if isinstance(headers, web.Response):
            return headers
        if (repo := repository(request)) is None:
            return github_error(404, "Not Found", _REST_DOCS, headers)
        return answer(repo.json(), headers)

    prefix = sandbox.api_prefix
    app.router.add_get(f"{prefix}/orgs/{{org}}/repos", repos)
    app.router.add_get(f"{prefix}/organizations/{{org_id}}/repos", repos)
    for owner in ("/repos/{owner}/{repo}", "/repositories/{repo_id}"):
        app.router.add_get(f"{prefix}{owner}", one_repository)
        app.router.add_get(f"{prefix}{owner}/actions/runs", runs)
        app.router.add_get(f"{prefix}{owner}/actions/runs/{{run_id}}/jobs", jobs)
        app.router.add_get(f"{prefix}{owner}/actions/jobs/{{job_id}}", job)
