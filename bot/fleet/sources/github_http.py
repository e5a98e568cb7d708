"""GitHub's REST API as every client of it speaks it: the errors, by what the caller should do
about them, the headers every request carries, one request answered within a time limit, a
200's JSON with the rate limit it tells, and the `Link` header's next page (docs.github.com,
"Getting started with the REST API", "Using pagination in the REST API", "Rate limits for the
REST API").

    GitHubError
    ├── GitHubUnavailable           try again later: unreachable, timed out, 5xx, answer lost
    ├── GitHubRateLimited           GitHub may not be asked before `retry_at`
    ├── GitHubDenied                the credentials cannot do this; the message says what an
    │   │                           admin must change
    │   ├── GitHubBadCredentials    401: the token is wrong, expired or revoked (or the
    │   │                           GitHub App's key or id is)
    │   ├── GitHubMissingPermission 403: a permission or scope is missing (`needed` names it)
    │   └── GitHubNotFound          404: no such org, repository or enterprise for these
    │                               credentials (GitHubAppNotInstalled: no installation)
    └── GitHubRejected              another answer: another 4xx, not what was asked for, a
                                    Link to another host

Credentials go out in the Authorization header only; no error or log line carries them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from bot import __version__
from bot.fleet.sources.github_budget import RateBudget
from bot.telemetry.redaction import host_of

GITHUB_API_VERSION = "2022-11-28"
GITHUB_TIMEOUT_SECONDS = 10.0
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="([^"]*)"')


class GitHubError(Exception):
    """GitHub did not answer as asked."""

    def __init__(self, detail: str, status: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status


class GitHubUnavailable(GitHubError):
    pass


class GitHubRateLimited(GitHubError):
    def __init__(self, detail: str, retry_at: datetime, status: int | None = None) -> None:
        super().__init__(detail, status)
        self.retry_at = retry_at


class GitHubDenied(GitHubError):
    pass


class GitHubBadCredentials(GitHubDenied):
    pass


class GitHubMissingPermission(GitHubDenied):
    def __init__(self, detail: str, needed: str, status: int | None = 403) -> None:
        super().__init__(detail, status)
        self.needed = needed


class GitHubNotFound(GitHubDenied):
    pass


class GitHubRejected(GitHubError):
    pass


def api_base(base_url: str) -> tuple[str, str]:
    """GITHUB_API_URL as requests go to it, and where GitHub is in words. Settings refuse
    credentials in it (bot.config); any that reach here are dropped all the same, so that a URL
    shown or logged never carries a password."""
    netloc = host_of(base_url)
    return urlsplit(base_url.rstrip("/"))._replace(netloc=netloc).geturl(), f"GitHub at {netloc}"


def request_headers(authorization: str) -> dict[str, str]:
    """What every request to GitHub's REST API carries; the credential in Authorization only
    (`authorization` is that header's value)."""
    return {
        "Authorization": authorization,
        "Accept": "application/vnd.github+json",
        "X-GitHub-Api-Version": GITHUB_API_VERSION,
        "User-Agent": f"queuebot/{__version__}",
    }


async def send(
    session: aiohttp.ClientSession,
    url: str,
    headers: Mapping[str, str],
    limit: float,
    where: str,
    *,
    method: str = "GET",
) -> tuple[int, Mapping[str, str], str]:
    """One request (a GET unless said), answered within `limit` seconds: its status, headers
    and text. Raises GitHubUnavailable when no answer came."""
    try:
        async with session.request(
            method, url, headers=headers, timeout=aiohttp.ClientTimeout(total=limit)
        ) as response:
            return response.status, response.headers, await response.text(errors="replace")
    except TimeoutError as exc:
        raise GitHubUnavailable(f"no answer from {where} within {limit:g}s") from exc
    except (aiohttp.ClientConnectorError, aiohttp.InvalidURL) as exc:
        raise GitHubUnavailable(f"cannot reach {where} ({type(exc).__name__})") from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise GitHubUnavailable(f"lost the answer from {where} ({type(exc).__name__})") from exc


def json_answer(
    budget: RateBudget, status: int, headers: Mapping[str, str], text: str, where: str
) -> Any | None:
    """An answer's rate limit noted in `budget`, and a 200's JSON (None for another status).
    Raises GitHubRejected on a 200 that is not JSON."""
    if status != 401:
        # A 401 carries the unauthenticated budget of the caller's address, not the token's.
        budget.note(headers)
    if status != 200:
        return None
    budget.strikes = 0
    try:
        return json.loads(text)
    except ValueError:
        raise GitHubRejected(
            f"{where} answered HTTP 200 with something that is not JSON (is"
            " GITHUB_API_URL GitHub's API: https://api.github.com, or"
            " https://HOST/api/v3 for GitHub Enterprise Server?)",
            status,
        ) from None


def next_page(link: str, base_url: str, where: str) -> str | None:
    """The `Link` header's `rel="next"`, exactly as GitHub gives it, and only under `base_url`
    (GITHUB_API_URL): the token goes nowhere else."""
    for target, rel in _LINK.findall(link):
        if "next" in rel.split():
            if not target.startswith(f"{base_url}/"):
                raise GitHubRejected(
                    f"{where} linked its next page outside GITHUB_API_URL;"
                    " not followed, so that the token goes nowhere else"
                )
            return str(target)
    return None


def rate_limited(headers: Mapping[str, str], message: str) -> bool:
    """A 403 that is a rate limit, not a permission (GitHub answers both with 403)."""
    return (
        "Retry-After" in headers
        or headers.get("X-RateLimit-Remaining") == "0"
        or "rate limit" in message.lower()
    )


def github_message(body: str) -> str:
    """GitHub's `{"message": …}`, or the start of whatever else answered."""
    try:
        data = json.loads(body)
    except ValueError:
        return " ".join(body.split())[:200] or "no message"
    if isinstance(data, dict) and isinstance(message := data.get("message"), str):
        return message[:300]
    return str(data)[:200]
