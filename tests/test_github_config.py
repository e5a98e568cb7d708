"""The GitHub settings (GITHUB_TOKEN, GITHUB_ORG / GITHUB_REPOSITORY / GITHUB_ENTERPRISE,
GITHUB_API_URL) and the runner supply's client the app builds from them."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from bot.app import GITHUB_RUNNERS
from bot.clients import github_runners_client_for
from bot.config import ConfigError, Settings, load_settings
from bot.fleet.sources.github_access import RunnerScope, ScopeKind
from queuebot_lab.sandbox.github import GitHubSandbox
from testkit.harness import running_stack

TOKEN = "ghs_configTestToken0123456789"


def test_an_org_and_a_token() -> None:
    settings = load_settings({"GITHUB_TOKEN": TOKEN, "GITHUB_ORG": "pytorch"})
    assert settings.github_scope() == ("org", "pytorch")
    assert str(settings.github_api_url) == "https://api.github.com/"


@pytest.mark.parametrize(
    ("variable", "value", "scope"),
    [
        ("GITHUB_REPOSITORY", "pytorch/pytorch", ("repo", "pytorch/pytorch")),
        ("GITHUB_ENTERPRISE", "meta", ("enterprise", "meta")),
        ("GITHUB_ORG", "  ", None),
    ],
)
def test_the_scope_is_whichever_is_set(
    variable: str, value: str, scope: tuple[str, str] | None
) -> None:
    assert load_settings({variable: value}).github_scope() == scope


def test_two_scopes_are_refused_naming_both() -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings({"GITHUB_ORG": "pytorch", "GITHUB_REPOSITORY": "pytorch/pytorch"})
    assert str(raised.value).startswith(
        "GITHUB_ORG and GITHUB_REPOSITORY are set together: queuebot lists the runners of one"
    )


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("GITHUB_REPOSITORY", "pytorch", "must be owner/repo, like pytorch/pytorch"),
        ("GITHUB_REPOSITORY", "pytorch/../../user", "must be owner/repo"),
        ("GITHUB_ORG", "pytorch/pytorch", "must be a name"),
        ("GITHUB_ENTERPRISE", "../admin", "must be a name"),
    ],
)
def test_a_name_that_is_no_name_is_refused(variable: str, value: str, said: str) -> None:
    """The names become a path on GitHub's API: they cannot carry one."""
    with pytest.raises(ConfigError) as raised:
        load_settings({variable: value})
    assert str(raised.value).startswith(f"{variable} is malformed") and said in str(raised.value)


def test_credentials_in_the_api_url_are_refused_unsaid() -> None:
    with pytest.raises(ConfigError) as raised:
        load_settings({"GITHUB_API_URL": "https://user:pw-never-shown@ghe.example.com/api/v3"})
    assert "GITHUB_API_URL must not carry a user name or password" in str(raised.value)
    assert "pw-never-shown" not in str(raised.value)


async def test_no_client_without_a_token_a_scope_or_a_session() -> None:
    async with aiohttp.ClientSession() as session:
        assert github_runners_client_for(load_settings({"GITHUB_ORG": "x"}), session) is None
        assert github_runners_client_for(load_settings({"GITHUB_TOKEN": TOKEN}), session) is None
    both = load_settings({"GITHUB_TOKEN": TOKEN, "GITHUB_ORG": "x"})
    assert github_runners_client_for(both, None) is None


async def test_the_client_is_built_for_the_configured_scope_and_server() -> None:
    settings = Settings.model_validate(
        {
            "GITHUB_TOKEN": TOKEN,
            "GITHUB_REPOSITORY": "pytorch/pytorch",
            "GITHUB_API_URL": "https://ghe.example.com/api/v3",
        }
    )
    async with aiohttp.ClientSession() as session:
        client = github_runners_client_for(settings, session)
    assert client is not None
    assert client.scope == RunnerScope(ScopeKind.REPOSITORY, "pytorch/pytorch")
    assert client.base_url == "https://ghe.example.com/api/v3"


async def test_the_running_app_keeps_a_working_client(tmp_path: Path) -> None:
    """Built in the app's lifetime, kept under GITHUB_RUNNERS, listing over HTTP."""
    async with GitHubSandbox(TOKEN) as github:
        github.add_runners("linux.2xlarge", idle=2, busy=1)
        env = {"GITHUB_TOKEN": TOKEN, "GITHUB_ORG": "pytorch", "GITHUB_API_URL": github.url}
        async with running_stack(tmp_path, **env) as stack:
            client = stack.app[GITHUB_RUNNERS]
            assert client is not None
            fleet = await client.fleet()
    assert fleet.supply_for(["linux.2xlarge"])["linux.2xlarge"].idle == 2
    assert len(github.listings()) == 1


async def test_without_github_settings_the_app_keeps_none(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        assert stack.app[GITHUB_RUNNERS] is None
