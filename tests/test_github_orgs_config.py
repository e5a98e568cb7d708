"""Several GitHub organizations in the settings: GITHUB_ORG as a list or the YAML file's
`github.orgs`, each organization's hook secrets from the environment, and the runners client
the app builds for them (one per organization)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from bot.clients import github_runners_client_for
from bot.config import ConfigError, load_settings
from bot.fleet.sources.github_access import RunnerScope, ScopeKind
from bot.fleet.sources.github_runners import GitHubRunnersClient
from bot.fleet.sources.orgs import OrgRunners

TOKEN = "ghs_orgsConfigTestToken0123456789"


def _yaml(tmp_path: Path, text: str) -> dict[str, str]:
    path = tmp_path / "queuebot.yml"
    path.write_text(text)
    return {"QUEUEBOT_CONFIG": str(path)}


class TestGitHubOrg:
    def test_a_comma_separated_list_names_several(self) -> None:
        settings = load_settings({"GITHUB_ORG": " pytorch, pytorch-labs ,meta-pytorch"})
        assert settings.github_orgs == ("pytorch", "pytorch-labs", "meta-pytorch")
        assert settings.github_scope() == ("org", "pytorch,pytorch-labs,meta-pytorch")

    def test_one_name_still_names_one(self) -> None:
        settings = load_settings({"GITHUB_ORG": "pytorch"})
        assert settings.github_orgs == ("pytorch",)
        assert settings.github_scope() == ("org", "pytorch")

    def test_none_is_no_organization(self) -> None:
        assert load_settings({}).github_orgs == ()

    @pytest.mark.parametrize(
        ("value", "said"),
        [
            ("pytorch,PyTorch", "GITHUB_ORG names PyTorch twice"),
            ("pytorch,,labs", "GITHUB_ORG is malformed: must be a name"),
            ("pytorch,labs/x", "or names separated by commas: pytorch,pytorch-labs"),
            ("pytorch;labs", "GITHUB_ORG is malformed: must be a name"),
        ],
    )
    def test_a_list_that_is_no_list_of_names_is_refused(self, value: str, said: str) -> None:
        with pytest.raises(ConfigError) as raised:
            load_settings({"GITHUB_ORG": value})
        assert said in str(raised.value)

    def test_a_list_with_a_repository_is_refused_as_one_name_is(self) -> None:
        with pytest.raises(ConfigError) as raised:
            load_settings({"GITHUB_ORG": "pytorch,labs", "GITHUB_REPOSITORY": "pytorch/pytorch"})
        assert str(raised.value).startswith("GITHUB_ORG and GITHUB_REPOSITORY are set together")


class TestTheYamlFile:
    def test_it_lists_the_organizations(self, tmp_path: Path) -> None:
        env = _yaml(tmp_path, "github:\n  orgs: [pytorch, {name: pytorch-labs}]\n")
        settings = load_settings(env)
        assert settings.github_orgs == ("pytorch", "pytorch-labs")
        assert settings.github_scope() == ("org", "pytorch,pytorch-labs")

    def test_it_and_github_org_are_refused_together(self, tmp_path: Path) -> None:
        env = _yaml(tmp_path, "github:\n  orgs: [pytorch]\n") | {"GITHUB_ORG": "pytorch"}
        with pytest.raises(ConfigError, match=r"GITHUB_ORG and the YAML file's github\.orgs are"):
            load_settings(env)

    def test_it_and_an_enterprise_are_refused_together(self, tmp_path: Path) -> None:
        env = _yaml(tmp_path, "github:\n  orgs: [pytorch]\n") | {"GITHUB_ENTERPRISE": "meta"}
        with pytest.raises(ConfigError, match=r"github\.orgs and GITHUB_ENTERPRISE are set"):
            load_settings(env)

    @pytest.mark.parametrize(
        ("text", "said"),
        [
            ("github:\n  orgs: [pytorch, PYTORCH]\n", "github.orgs names PYTORCH twice"),
            ("github:\n  orgs: [py/torch]\n", "github.orgs.0.name is malformed: must be a name"),
            ("github:\n  org: [pytorch]\n", "github.org is not a setting queuebot knows"),
        ],
    )
    def test_its_mistakes_are_named(self, tmp_path: Path, text: str, said: str) -> None:
        with pytest.raises(ConfigError) as raised:
            load_settings(_yaml(tmp_path, text))
        assert said in str(raised.value)

    def test_a_secret_written_in_it_is_refused_unrepeated(self, tmp_path: Path) -> None:
        """The file names the variables holding secrets: a secret itself is no variable's name,
        and is not shown back."""
        text = "github:\n  orgs:\n    - name: pytorch\n      webhook_secret_env: 's3cr3t-v@lue!'\n"
        with pytest.raises(ConfigError) as raised:
            load_settings(_yaml(tmp_path, text))
        assert "names environment variables (like PYTORCH_HOOK_SECRET)" in str(raised.value)
        assert "s3cr3t-v@lue!" not in str(raised.value)


class TestHookSecrets:
    def test_each_organizations_own_is_read_from_its_variable(self) -> None:
        settings = load_settings(
            {
                "GITHUB_ORG": "pytorch,pytorch-labs",
                "GITHUB_WEBHOOK_SECRET_PYTORCH_LABS": "labs-secret",
            }
        )
        assert {
            org: [s.get_secret_value() for s in secrets]
            for org, secrets in settings.github_org_secrets.items()
        } == {"pytorch-labs": ["labs-secret"]}

    def test_a_variable_for_no_organization_watched_is_refused(self) -> None:
        """A typo would leave that organization's deliveries refused without a word."""
        env = {"GITHUB_ORG": "pytorch", "GITHUB_WEBHOOK_SECRET_PYTORH": "x-secret-value"}
        with pytest.raises(ConfigError) as raised:
            load_settings(env)
        assert "GITHUB_WEBHOOK_SECRET_PYTORH is set, but queuebot watches no such" in str(
            raised.value
        )
        assert "x-secret-value" not in str(raised.value)

    def test_a_named_variable_unset_stops_serve(self, tmp_path: Path) -> None:
        text = "github:\n  orgs:\n    - name: pytorch\n      webhook_secret_env: HOOK_A\n"
        env = _yaml(tmp_path, text) | {
            "SLACK_BOT_TOKEN": "xoxb-1",
            "SLACK_SIGNING_SECRET": "s",
            "QUEUEBOT_CHANNEL": "C0123ABCD",
            "QUEUEBOT_WEBHOOK_AUTH": "none",
        }
        assert load_settings(env).github_org_secrets == {}
        with pytest.raises(ConfigError, match="names HOOK_A for pytorch's webhook secrets, but"):
            load_settings(env, for_serve=True)

    def test_the_capacity_report_names_watched_organizations_only(self, tmp_path: Path) -> None:
        text = "capacity_report:\n  orgs: [pytorch-labs]\n"
        with pytest.raises(ConfigError, match="capacity_report names pytorch-labs, not among"):
            load_settings(_yaml(tmp_path, text) | {"GITHUB_ORG": "pytorch"})
        settings = load_settings(_yaml(tmp_path, text) | {"GITHUB_ORG": "pytorch,pytorch-labs"})
        assert settings.file.capacity_report.orgs == ("pytorch-labs",)


async def test_several_organizations_get_a_runners_client_each() -> None:
    settings = load_settings(
        {"GITHUB_TOKEN": TOKEN, "GITHUB_ORG": "pytorch,pytorch-labs", "GITHUB_API_URL": "http://x"}
    )
    async with aiohttp.ClientSession() as session:
        built = github_runners_client_for(settings, session)
        one = github_runners_client_for(
            load_settings({"GITHUB_TOKEN": TOKEN, "GITHUB_ORG": "pytorch"}), session
        )
    assert isinstance(built, OrgRunners) and built.orgs == ("pytorch", "pytorch-labs")
    labs = built.of("PyTorch-Labs")
    assert labs is not None and labs.scope == RunnerScope(ScopeKind.ORG, "pytorch-labs")
    assert isinstance(one, GitHubRunnersClient)
