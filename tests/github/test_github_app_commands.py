"""queuebot's commands as a GitHub App, against the GitHub stand-in: `queuebot backfill` reads
the history with the App's installation token, `queuebot check` says the installation found on
each organization and the permissions it lacks (and a classic token's scopes), and the App's
settings GitHub could not use are refused at start, without repeating the key."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from bot.config import ConfigError, load_settings
from bot.config.github_app import app_private_key
from bot.store import open_store
from queuebot_lab.sandbox.github import GitHubSandbox, GitHubTokenKind
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.github import job_delivery
from testkit.harness import BOT_TOKEN
from tests.github.test_github_app import APP_ID, PRIVATE, TOKEN, asked, installed, pem_of, stand_in


def _app_env(sandbox: GitHubSandbox, database: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "QUEUEBOT_", "SLACK_", "GRAFANA_", "PROMETHEUS_"))
    }
    # As an env file often carries it: one line, its line breaks written \n.
    env |= {
        "GITHUB_APP_ID": str(APP_ID),
        "GITHUB_APP_PRIVATE_KEY": PRIVATE.replace("\n", "\\n"),
        "GITHUB_ORG": sandbox.org,
        "GITHUB_API_URL": sandbox.url,
        "QUEUEBOT_DATABASE": str(database),
    }
    return env | extra


async def _command(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    return process.returncode or 0, out.decode(), err.decode()


async def test_backfill_reads_the_history_with_the_apps_tokens(tmp_path: Path) -> None:
    end = datetime.now(UTC).replace(microsecond=0)
    async with stand_in() as sandbox:
        for number in range(6):
            created = end - timedelta(hours=number * 5 + 1)
            started, completed = created + timedelta(minutes=3), created + timedelta(minutes=30)
            body = job_delivery(
                "completed", 5000 + number * 10, created, started=started, completed=completed,
                repository=f"pytorch/repo-{number % 3}",
            )  # fmt: skip
            sandbox.history.add_bodies([body])
        code, _, said = await _command(
            _app_env(sandbox, tmp_path / "q.db"), "backfill", "--days", "2"
        )
    assert code == 0, said
    assert "3/3 repositories, 6 runs, 6 jobs (6 new)" in said
    store = await open_store(str(tmp_path / "q.db"))
    try:
        assert len(await store.job_spans(0, end.timestamp() + 60)) == 6
    finally:
        await store.close()
    read = [r for r in sandbox.requests if not r.path.startswith(("/app/", "/orgs/pytorch/inst"))]
    assert read and all(r.status == 200 for r in read)
    assert {r.headers["Authorization"] for r in read} == {
        f"Bearer {token}" for token in installed(sandbox).tokens
    }
    assert len(asked(sandbox, "/access_tokens")) == 1
    assert PRIVATE.splitlines()[1] not in said


def _check_env(slack: SlackSandbox, sandbox: GitHubSandbox, database: Path) -> dict[str, str]:
    return _app_env(
        sandbox, database, SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_SIGNING_SECRET="secret",
        SLACK_API_URL=slack.api_url, QUEUEBOT_CHANNEL="#queue-alerts",
        QUEUEBOT_WEBHOOK_TOKEN="check-webhook-token",
    )  # fmt: skip


async def test_check_names_each_permission_the_installation_lacks(tmp_path: Path) -> None:
    async with SlackSandbox(bot_token=BOT_TOKEN) as slack, stand_in() as sandbox:
        installed(sandbox).installations["pytorch"].permissions = {"metadata": "read"}
        code, out, _ = await _command(_check_env(slack, sandbox, tmp_path / "q.db"), "check")
    assert code == 1
    installation = installed(sandbox).installations["pytorch"].id
    assert (
        f"github app: FAILED: GitHub App 424242's installation {installation} on pytorch (found"
        " by GET /orgs/pytorch/installation; all repositories) lacks the organization permission"
        " 'Self-hosted runners: read' (the runners list), the repository permission 'Actions:"
        " read' (backfill and reconciliation)\n"
    ) in out
    assert (
        "github runners: FAILED: GitHub App 424242 needs the organization permission"
        " 'Self-hosted runners: read' to list the self-hosted runners of org pytorch"
    ) in out
    assert "ghs_" not in out and PRIVATE.splitlines()[1] not in out


async def test_check_says_each_organizations_installation(tmp_path: Path) -> None:
    """Over two organizations: the runners of both, and each installation with what it lacks."""
    async with SlackSandbox(bot_token=BOT_TOKEN) as slack, stand_in() as sandbox:
        sandbox.add_org("pytorch-labs")
        sandbox.add_runners("linux.2xlarge", idle=2)
        sandbox.add_runners("linux.2xlarge", busy=5, org="pytorch-labs")
        given = {"organization_self_hosted_runners": "write", "actions": "read"}
        labs = installed(sandbox).install("pytorch-labs", permissions=given)
        env = _check_env(slack, sandbox, tmp_path / "q.db")
        code, out, _ = await _command(env | {"GITHUB_ORG": "pytorch,pytorch-labs"}, "check")
    assert code == 1
    assert "github runners: ok (7 runners in 1 runner types, orgs pytorch, pytorch-labs)" in out
    assert "github app: ok (GitHub App 424242's installation 40000001 on pytorch" in out
    assert (
        f"github app: FAILED: GitHub App 424242's installation {labs.id} on pytorch-labs (found"
        " by GET /orgs/pytorch-labs/installation; all repositories) lacks the repository"
        " permission 'Metadata: read' (backfill and reconciliation)\n"
    ) in out


async def test_check_says_an_installation_with_every_permission_is_ok(tmp_path: Path) -> None:
    async with SlackSandbox(bot_token=BOT_TOKEN) as slack, stand_in() as sandbox:
        code, out, _ = await _command(_check_env(slack, sandbox, tmp_path / "q.db"), "check")
    assert code == 0, out
    assert "github app: ok (GitHub App 424242's installation" in out
    assert "has every permission queuebot needs)" in out
    assert "github runners: ok (0 runners" in out


@pytest.mark.parametrize(
    ("missing", "said"),
    [
        (False, "github token: ok (a classic token with the scopes: admin:org, repo)\n"),
        (True, "github token: FAILED: a classic token with the scopes: repo; the runners list"),
    ],
)
async def test_check_tells_a_classic_tokens_scopes(
    tmp_path: Path, missing: bool, said: str
) -> None:
    classic = GitHubSandbox(TOKEN, token_kind=GitHubTokenKind.CLASSIC)
    classic.missing_permission = missing
    async with SlackSandbox(bot_token=BOT_TOKEN) as slack, classic:
        env = _check_env(slack, classic, tmp_path / "q.db")
        del env["GITHUB_APP_ID"], env["GITHUB_APP_PRIVATE_KEY"]
        _, out, _ = await _command(env | {"GITHUB_TOKEN": TOKEN}, "check")
    assert said in out and TOKEN not in out


# -- settings ------------------------------------------------------------------------------------


def _written(tmp_path: Path, text: str) -> str:
    path = tmp_path / "app.pem"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("env", "said"),
    [
        (
            {"GITHUB_TOKEN": TOKEN, "GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY": PRIVATE},
            "GITHUB_TOKEN and GITHUB_APP_ID are set together",
        ),
        ({"GITHUB_APP_ID": "1"}, "GITHUB_APP_ID is set without the App's private key"),
        ({"GITHUB_APP_PRIVATE_KEY": PRIVATE}, "GITHUB_APP_PRIVATE_KEY set without GITHUB_APP_ID"),
        (
            {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----x"},
            "GITHUB_APP_PRIVATE_KEY is not an RSA private key in PEM",
        ),
        (
            {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY_FILE": "/nonexistent/app.pem"},
            "GITHUB_APP_PRIVATE_KEY_FILE (/nonexistent/app.pem) cannot be read",
        ),
        (
            {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY": PRIVATE, "GITHUB_ENTERPRISE": "e"},
            "GITHUB_ENTERPRISE is set with GITHUB_APP_ID",
        ),
        ({"GITHUB_APP_ID": "one"}, "GITHUB_APP_ID is malformed: must be a whole number"),
        (
            {
                "GITHUB_APP_ID": "1",
                "GITHUB_APP_PRIVATE_KEY": PRIVATE,
                "GITHUB_APP_INSTALLATION_ID": "7",
                "GITHUB_ORG": "pytorch,pytorch-labs",
            },
            "GITHUB_APP_INSTALLATION_ID names one installation",
        ),
    ],
)
def test_app_settings_github_cannot_use_are_refused_at_start(
    env: dict[str, str], said: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings(env)
    assert said in str(raised.value)
    assert PRIVATE.splitlines()[1] not in str(raised.value)


def test_a_key_file_that_is_no_rsa_key_is_refused(tmp_path: Path) -> None:
    other = pem_of(ec.generate_private_key(ec.SECP256R1()))
    env = {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY_FILE": _written(tmp_path, other)}
    with pytest.raises(ConfigError, match=r"app\.pem\) is not an RSA private key in PEM"):
        load_settings(env)


def test_a_key_is_taken_from_a_file_or_with_escaped_line_breaks(tmp_path: Path) -> None:
    from_file = load_settings(
        {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY_FILE": _written(tmp_path, PRIVATE)}
    )
    escaped = load_settings(
        {"GITHUB_APP_ID": "1", "GITHUB_APP_PRIVATE_KEY": PRIVATE.replace("\n", "\\n")}
    )
    assert app_private_key(from_file) == app_private_key(escaped) == PRIVATE
