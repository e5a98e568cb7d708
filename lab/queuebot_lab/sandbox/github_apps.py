"""A GitHub App as `GitHubSandbox` knows it: its public key, its installations (per org or
user, each with its permissions and its own rate limit), the JSON Web Tokens it signs and the
installation tokens they are exchanged for, answered as api.github.com answers them. The facts,
from docs.github.com unless said otherwise:

- The JWT ("Generating a JSON Web Token (JWT) for a GitHub App"): signed RS256 with the App's
  private key, `iss` the App's id, `exp` "no more than 10 minutes into the future". GitHub's
  refusals, as octokit/auth-app.js#698, probot#1426, sigmavirus24/github3.py#1050 and
  backstage#12887 quote them: 401 "A JSON web token could not be decoded" (not a JWT, not
  RS256, signed with another key); 401 "'Expiration time' claim ('exp') must be a numeric value
  representing the future time at which the assertion expires" (expired, or none); 401
  "'Expiration time' claim ('exp') is too far in the future"; 404 "Integration not found" (`iss`
  names no App; probot/probot#4 shows its status).
- `GET /orgs/{org}/installation` (an organization's) and `GET /users/{username}/installation`
  (any account's) with the JWT ("REST API endpoints for GitHub Apps"): the installation (`id`,
  `account`, `repository_selection`, `access_tokens_url`, `app_id`, `target_id`,
  `target_type`, `permissions`, `events`, …); 404 "Not Found" where the App is not installed
  (actions/create-github-app-token#76).
- `POST /app/installations/{installation_id}/access_tokens` with the JWT: 201 `{"token":
  "ghs_…", "expires_at", "permissions", "repository_selection"}`; "Installation tokens expire
  one hour from the time you create them. Using an expired token produces a status code of 401"
  ("Bad credentials", as for any token GitHub does not know). `token_lifetime` shortens the
  hour for a test.
- An installation token reaches its installation's account only: another organization's
  endpoints answer 403 "Resource not accessible by integration" (actions-runner-controller#931
  and #42), another owner's repositories 404 "Not Found"; a permission the installation was not
  given, 403 "Resource not accessible by integration" with `X-Accepted-GitHub-Permissions`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import jwt
from aiohttp import web

from queuebot_lab.sandbox.github_actions import github_error

if TYPE_CHECKING:
    from queuebot_lab.sandbox.github import GitHubSandbox

_APPS_DOCS = "https://docs.github.com/rest/apps/apps"
_REST_DOCS = "https://docs.github.com/rest"
_DENIED = "Resource not accessible by integration"
#: The permissions an installation is given unless a test says otherwise: queuebot's least.
LEAST_PERMISSIONS = {
    "organization_self_hosted_runners": "read",
    "actions": "read",
    "metadata": "read",
}
#: "The time must be no more than 10 minutes into the future."
_MAX_JWT_AHEAD = timedelta(minutes=10)


@dataclass
class SandboxInstallation:
    """The App installed on one account, with its own hourly rate limit."""

    id: int
    account: str
    account_id: int
    target_type: str = "Organization"
    permissions: dict[str, str] = field(default_factory=lambda: dict(LEAST_PERMISSIONS))
    repository_selection: str = "all"
    rate_limit: int = 5000
    remaining: int | None = None
    reset_at: datetime | None = None

    def json(self, app: SandboxApp, origin: str) -> dict[str, Any]:
        settings = "https://github.com/settings"
        if self.target_type == "Organization":
            settings = f"https://github.com/organizations/{self.account}/settings"
        return {
            "id": self.id,
            "account": {"login": self.account, "id": self.account_id, "type": self.target_type},
            "repository_selection": self.repository_selection,
            "access_tokens_url": f"{origin}/app/installations/{self.id}/access_tokens",
            "repositories_url": f"{origin}/installation/repositories",
            "html_url": f"{settings}/installations/{self.id}",
            "app_id": app.app_id,
            "app_slug": app.slug,
            "target_id": self.account_id,
            "target_type": self.target_type,
            "permissions": dict(self.permissions),
            "events": ["workflow_job"],
            "created_at": "2026-01-05T10:00:00Z",
            "updated_at": "2026-01-05T10:00:00Z",
            "single_file_name": None,
            "has_multiple_single_files": False,
            "single_file_paths": [],
            "suspended_by": None,
            "suspended_at": None,
        }


@dataclass(frozen=True)
class IssuedToken:
    installation: SandboxInstallation
    expires_at: datetime


class SandboxApp:
    """One GitHub App: `public_key` (PEM) verifies its JWTs."""

    def __init__(
        self,
        app_id: int,
        public_key: str,
        *,
        slug: str = "queuebot-fleet",
        token_lifetime: timedelta = timedelta(hours=1),
    ) -> None:
        self.app_id = app_id
        self.public_key = public_key
        self.slug = slug
        #: How long an installation token lasts (GitHub's hour; shorter in a test).
        self.token_lifetime = token_lifetime
        self.installations: dict[str, SandboxInstallation] = {}
        #: Every installation token issued, live or expired.
        self.tokens: dict[str, IssuedToken] = {}

    def install(
        self,
        account: str,
        *,
        permissions: dict[str, str] | None = None,
        user: bool = False,
    ) -> SandboxInstallation:
        """Install the App on `account` (an organization, or a user with `user`)."""
        number = len(self.installations) + 1
        installation = SandboxInstallation(
            id=40_000_000 + number,
            account=account,
            account_id=90_000 + number,
            target_type="User" if user else "Organization",
            permissions=dict(LEAST_PERMISSIONS if permissions is None else permissions),
        )
        self.installations[account.lower()] = installation
        return installation

    def revoke(self, token: str) -> None:
        """GitHub no longer takes `token` (revoked, or the installation's key rotated)."""
        self.tokens.pop(token, None)

    def holder(self, credential: str, now: datetime) -> SandboxInstallation | None:
        """The installation a live installation token belongs to; None for any other."""
        issued = self.tokens.get(credential)
        if issued is None or now >= issued.expires_at:
            return None
        return issued.installation

    def refusal(self, credential: str, now: datetime) -> web.Response | None:
        """Why the App's JWT in `credential` is refused; None when it is good."""
        try:
            claims = jwt.decode(credential, options={"verify_signature": False})
            issuer = int(str(claims.get("iss")))
        except (jwt.PyJWTError, ValueError):
            return github_error(401, "A JSON web token could not be decoded", _REST_DOCS, {})
        if issuer != self.app_id:
            return github_error(404, "Integration not found", _REST_DOCS, {})
        try:
            # The times are checked against the sandbox's clock below, not this machine's.
            jwt.decode(
                credential,
                self.public_key,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )
        except jwt.PyJWTError:
            return github_error(401, "A JSON web token could not be decoded", _REST_DOCS, {})
        expiry = claims.get("exp")
        if not isinstance(expiry, int | float) or expiry <= now.timestamp():
            message = (
                "'Expiration time' claim ('exp') must be a numeric value representing the future"
                " time at which the assertion expires"
            )
            return github_error(401, message, _REST_DOCS, {})
        if expiry > (now + _MAX_JWT_AHEAD).timestamp():
            message = "'Expiration time' claim ('exp') is too far in the future"
            return github_error(401, message, _REST_DOCS, {})
        return None

    def issue(self, installation: SandboxInstallation, now: datetime) -> dict[str, Any]:
        token = "ghs_" + secrets.token_hex(18)
        expires_at = now.replace(microsecond=0) + self.token_lifetime
        self.tokens[token] = IssuedToken(installation, expires_at)
        return {
            "token": token,
            "expires_at": expires_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "permissions": dict(installation.permissions),
            "repository_selection": installation.repository_selection,
        }


def _owner(sandbox: GitHubSandbox, request: web.Request) -> tuple[str | None, bool]:
    """Whose resources a request is about, and whether it is an organization's own endpoint
    (else a repository's)."""
    found = request.match_info
    if "org" in found:
        return found["org"], True
    if "org_id" in found:
        ids = {str(sandbox.org_id): sandbox.org}
        ids |= {str(org_id): name for name, (org_id, _) in sandbox.orgs.items()}
        return ids.get(found["org_id"]), True
    if "owner" in found:
        return found["owner"], False
    if "repo_id" in found:
        if found["repo_id"] == str(sandbox.repository_id):
            return sandbox.repository.partition("/")[0], False
        named = [r for r in sandbox.history.repositories.values() if str(r.id) == found["repo_id"]]
        return (named[0].full_name.partition("/")[0] if named else None), False
    return None, True


def _needed(path: str, organization: bool) -> tuple[str, str]:
    """The permission a path takes: its name and its X-Accepted-GitHub-Permissions."""
    if path.endswith("/actions/runners"):
        name = "organization_self_hosted_runners" if organization else "administration"
    elif path.endswith("/repos"):
        name = "metadata"
    else:
        name = "actions"
    return name, f"{name}=read"


def installation_refusal(
    sandbox: GitHubSandbox,
    installation: SandboxInstallation,
    request: web.Request,
    headers: dict[str, str],
) -> web.Response | None:
    """Why an installation token may not have what it asks for; None when it may."""
    owner, organization = _owner(sandbox, request)
    if owner is None or owner.lower() != installation.account.lower():
        if organization:
            return github_error(403, _DENIED, _REST_DOCS, headers)
        return github_error(404, "Not Found", _REST_DOCS, headers)
    name, accepted = _needed(request.path, organization)
    if name not in installation.permissions:
        return github_error(
            403, _DENIED, _REST_DOCS, headers | {"X-Accepted-GitHub-Permissions": accepted}
        )
    return None


def add_app_routes(app: web.Application, sandbox: GitHubSandbox) -> None:
    """The App's endpoints, which take its JWT, on the sandbox's app."""

    def refused(request: web.Request) -> tuple[SandboxApp, None] | tuple[None, web.Response]:
        scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
        known = sandbox.app
        if known is None or scheme.lower() != "bearer":
            return None, github_error(401, "A JSON web token could not be decoded", _REST_DOCS, {})
        refusal = known.refusal(credential, sandbox.clock())
        return (known, None) if refusal is None else (None, refusal)

    def found(request: web.Request, *, orgs_only: bool) -> web.Response:
        known, refusal = refused(request)
        if known is None:
            assert refusal is not None
            return refusal
        account = request.match_info["account"].lower()
        installation = known.installations.get(account)
        if installation is None or (orgs_only and installation.target_type != "Organization"):
            return github_error(404, "Not Found", _APPS_DOCS, {})
        origin = f"{request.url.origin()}{sandbox.api_prefix}"
        return web.json_response(installation.json(known, origin))

    async def org_installation(request: web.Request) -> web.Response:
        return found(request, orgs_only=True)

    async def user_installation(request: web.Request) -> web.Response:
        return found(request, orgs_only=False)

    async def access_token(request: web.Request) -> web.Response:
        known, refusal = refused(request)
        if known is None:
            assert refusal is not None
            return refusal
        wanted = request.match_info["installation_id"]
        chosen = [i for i in known.installations.values() if str(i.id) == wanted]
        if not chosen:
            return github_error(404, "Not Found", _APPS_DOCS, {})
        return web.json_response(known.issue(chosen[0], sandbox.clock()), status=201)

    prefix = sandbox.api_prefix
    app.router.add_get(f"{prefix}/orgs/{{account}}/installation", org_installation)
    app.router.add_get(f"{prefix}/users/{{account}}/installation", user_installation)
    app.router.add_post(
        f"{prefix}/app/installations/{{installation_id}}/access_tokens", access_token
    )
