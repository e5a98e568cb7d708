"""POST /webhooks/github with several organizations: each organization's hooks sign with its own
secret (GITHUB_WEBHOOK_SECRET_<ORG>, or the variables the YAML file names), the GitHub App's
webhook with the App's; a delivery is taken only when it is signed with a secret that may speak
for the organization whose jobs it would feed, and an organization not watched is refused with
the reason. Signed deliveries over HTTP to the running app, and what the store then holds."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.web.routes import EDGES
from testkit.github import deliver, job_delivery
from testkit.harness import Stack, running_stack

T0 = (datetime.now(UTC) - timedelta(days=1)).replace(minute=0, second=0, microsecond=0)
WEEK = 7 * 86400.0
PYTORCH_SECRET = "pytorch-org-hook-secret-0123"
LABS_SECRET = "labs-org-hook-secret-4567"
LABS_REPO_HOOK_SECRET = "labs-repo-hook-secret-89ab"
APP_SECRET = "the-github-app-webhook-secret"
SHARED_SECRET = "one-secret-for-every-hook"
SECRETS = (PYTORCH_SECRET, LABS_SECRET, LABS_REPO_HOOK_SECRET, APP_SECRET, SHARED_SECRET)
PER_ORG = {
    "GITHUB_ORG": "pytorch,pytorch-labs",
    "GITHUB_WEBHOOK_SECRET_PYTORCH": PYTORCH_SECRET,
    "GITHUB_WEBHOOK_SECRET_PYTORCH_LABS": LABS_SECRET,
    "GITHUB_APP_WEBHOOK_SECRET": APP_SECRET,
}


def org_delivery(
    org: str, job_id: int, *, repository: str | None = None, app: bool = False
) -> dict[str, Any]:
    """A queued job of a repository of `org`, as its organization hook sends it (with the
    `installation` a GitHub App's webhook adds, when `app`)."""
    body = job_delivery("queued", job_id, T0, repository=repository or f"{org}/ci")
    body["organization"] = {"login": org, "id": 21003710}
    body["repository"]["owner"] = {"login": org, "id": 21003710, "type": "Organization"}
    body.pop("installation", None)
    if app:
        body["installation"] = {"id": 4242, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u"}
    return body


async def queued_repositories(stack: Stack) -> list[str]:
    """The repositories of the jobs the store holds as queued."""
    at = (T0 + timedelta(minutes=10)).timestamp()
    jobs = await stack.app[EDGES].store.queued_jobs(at, 300.0, WEEK)
    return sorted(job.repository for job in jobs)


async def send(stack: Stack, body: object, secret: str, **more: Any) -> tuple[int, dict[str, Any]]:
    status, answer = await deliver(stack.http, stack.url, body, secret=secret, **more)  # type: ignore[arg-type]
    shown = json.dumps(answer)
    assert not any(known in shown for known in SECRETS), shown
    return status, answer


class TestEachOrganizationsOwnSecret:
    async def test_each_organizations_hook_is_taken_with_its_own_secret(
        self, tmp_path: Path
    ) -> None:
        async with running_stack(tmp_path, **PER_ORG) as stack:
            assert (await send(stack, org_delivery("pytorch", 11), PYTORCH_SECRET))[0] == 202
            assert (await send(stack, org_delivery("pytorch-labs", 21), LABS_SECRET))[0] == 202
            assert await queued_repositories(stack) == ["pytorch-labs/ci", "pytorch/ci"]

    async def test_another_organizations_secret_feeds_nothing(self, tmp_path: Path) -> None:
        """pytorch-labs's hook secret cannot put a job into pytorch's repositories."""
        async with running_stack(tmp_path, **PER_ORG) as stack:
            status, answer = await send(stack, org_delivery("pytorch", 11), LABS_SECRET)
            assert status == 401
            assert answer["error"] == "unauthorized: signature does not match the body"
            assert await queued_repositories(stack) == []

    async def test_a_wrong_signature_is_refused(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, **PER_ORG) as stack:
            status, answer = await send(stack, org_delivery("pytorch-labs", 21), "not-a-secret")
            assert status == 401 and "unauthorized" in answer["error"]
            assert await queued_repositories(stack) == []

    async def test_the_secret_is_that_of_the_repositorys_owner(self, tmp_path: Path) -> None:
        """A body naming pytorch-labs as its organization but a pytorch repository would feed
        pytorch's jobs: only pytorch's secret may sign it."""
        async with running_stack(tmp_path, **PER_ORG) as stack:
            body = org_delivery("pytorch-labs", 21, repository="pytorch/pytorch")
            assert (await send(stack, body, LABS_SECRET))[0] == 401
            assert await queued_repositories(stack) == []

    async def test_an_organization_not_watched_is_refused_with_the_reason(
        self, tmp_path: Path
    ) -> None:
        async with running_stack(tmp_path, **PER_ORG) as stack:
            status, answer = await send(stack, org_delivery("meta-pytorch", 31), PYTORCH_SECRET)
            assert status == 403
            assert answer["error"] == (
                "forbidden: meta-pytorch's deliveries are not taken: queuebot watches other"
                " organizations (GITHUB_ORG or the YAML file's github.orgs)"
            )
            assert await queued_repositories(stack) == []

    async def test_a_form_delivery_is_verified_with_the_organizations_secret(
        self, tmp_path: Path
    ) -> None:
        """A hook sending application/x-www-form-urlencoded signs the form as sent."""
        async with running_stack(tmp_path, **PER_ORG) as stack:
            raw = urlencode({"payload": json.dumps(org_delivery("pytorch-labs", 21))}).encode()
            form = "application/x-www-form-urlencoded"
            assert (await send(stack, raw, PYTORCH_SECRET, content_type=form))[0] == 401
            assert (await send(stack, raw, LABS_SECRET, content_type=form))[0] == 202
            assert await queued_repositories(stack) == ["pytorch-labs/ci"]


class TestTheSharedSecret:
    async def test_it_speaks_for_the_organizations_without_their_own(self, tmp_path: Path) -> None:
        env = {
            "GITHUB_ORG": "pytorch,pytorch-labs",
            "GITHUB_WEBHOOK_SECRET": SHARED_SECRET,
            "GITHUB_WEBHOOK_SECRET_PYTORCH_LABS": LABS_SECRET,
        }
        async with running_stack(tmp_path, **env) as stack:
            assert (await send(stack, org_delivery("pytorch", 11), SHARED_SECRET))[0] == 202
            # pytorch-labs has its own: the shared one no longer speaks for it.
            assert (await send(stack, org_delivery("pytorch-labs", 21), SHARED_SECRET))[0] == 401
            assert (await send(stack, org_delivery("pytorch-labs", 22), LABS_SECRET))[0] == 202
            status, answer = await send(stack, org_delivery("meta-pytorch", 31), SHARED_SECRET)
            assert status == 403 and "meta-pytorch" in answer["error"]
            assert await queued_repositories(stack) == ["pytorch-labs/ci", "pytorch/ci"]

    async def test_one_organization_with_the_shared_secret_as_before(self, tmp_path: Path) -> None:
        """The old single GITHUB_ORG: its hook's deliveries are taken, another's refused."""
        env = {"GITHUB_ORG": "pytorch", "GITHUB_WEBHOOK_SECRET": SHARED_SECRET}
        async with running_stack(tmp_path, **env) as stack:
            assert (await send(stack, org_delivery("pytorch", 11), SHARED_SECRET))[0] == 202
            assert (await send(stack, org_delivery("pytorch-labs", 21), SHARED_SECRET))[0] == 403
            assert await queued_repositories(stack) == ["pytorch/ci"]


class TestTheYamlFile:
    async def test_it_names_the_variables_of_each_hooks_secret(self, tmp_path: Path) -> None:
        """An organization hook and a repository hook, each with its own secret."""
        config = tmp_path / "queuebot.yml"
        config.write_text(
            "github:\n"
            "  orgs:\n"
            "    - pytorch\n"
            "    - name: pytorch-labs\n"
            "      webhook_secret_env: [LABS_ORG_HOOK, LABS_REPO_HOOK]\n"
        )
        env = {
            "QUEUEBOT_CONFIG": str(config),
            "LABS_ORG_HOOK": LABS_SECRET,
            "LABS_REPO_HOOK": LABS_REPO_HOOK_SECRET,
            "GITHUB_WEBHOOK_SECRET_PYTORCH": PYTORCH_SECRET,
        }
        async with running_stack(tmp_path, **env) as stack:
            assert (await send(stack, org_delivery("pytorch-labs", 21), LABS_SECRET))[0] == 202
            body = org_delivery("pytorch-labs", 22)
            assert (await send(stack, body, LABS_REPO_HOOK_SECRET))[0] == 202
            assert (await send(stack, org_delivery("pytorch-labs", 23), PYTORCH_SECRET))[0] == 401
            assert (await send(stack, org_delivery("pytorch", 11), PYTORCH_SECRET))[0] == 202
            assert await queued_repositories(stack) == [
                "pytorch-labs/ci",
                "pytorch-labs/ci",
                "pytorch/ci",
            ]


class TestTheGitHubAppsWebhook:
    async def test_an_installations_delivery_is_taken_with_the_apps_secret(
        self, tmp_path: Path
    ) -> None:
        async with running_stack(tmp_path, **PER_ORG) as stack:
            body = org_delivery("pytorch-labs", 21, app=True)
            assert (await send(stack, body, APP_SECRET))[0] == 202
            assert await queued_repositories(stack) == ["pytorch-labs/ci"]

    async def test_the_apps_secret_speaks_for_the_app_only(self, tmp_path: Path) -> None:
        """Without `installation` the body is an organization hook's: the App's secret does not
        sign it."""
        async with running_stack(tmp_path, **PER_ORG) as stack:
            assert (await send(stack, org_delivery("pytorch-labs", 21), APP_SECRET))[0] == 401
            assert await queued_repositories(stack) == []

    async def test_an_installation_on_an_organization_not_watched_is_refused(
        self, tmp_path: Path
    ) -> None:
        async with running_stack(tmp_path, **PER_ORG) as stack:
            body = org_delivery("meta-pytorch", 31, app=True)
            status, answer = await send(stack, body, APP_SECRET)
            assert status == 403 and "meta-pytorch's deliveries are not taken" in answer["error"]

    @pytest.mark.parametrize(("secret", "status"), [(APP_SECRET, 200), (PYTORCH_SECRET, 401)])
    async def test_the_apps_ping_is_answered_when_the_app_signed_it(
        self, tmp_path: Path, secret: str, status: int
    ) -> None:
        """GitHub pings an App's webhook URL when the App is registered: the hook is of type
        App, with no organization."""
        ping = {
            "zen": "Design for failure.",
            "hook_id": 109948940,
            "hook": {"type": "App", "id": 109948940, "app_id": 4242, "active": True},
        }
        async with running_stack(tmp_path, GITHUB_APP_WEBHOOK_SECRET=APP_SECRET) as stack:
            assert (await send(stack, ping, secret, event="ping"))[0] == status

    async def test_it_alone_turns_the_route_on(self, tmp_path: Path) -> None:
        async with running_stack(tmp_path, GITHUB_APP_WEBHOOK_SECRET=APP_SECRET) as stack:
            body = org_delivery("pytorch", 11, app=True)
            assert (await send(stack, body, APP_SECRET))[0] == 202
            assert (await send(stack, org_delivery("pytorch", 12), APP_SECRET))[0] == 401
