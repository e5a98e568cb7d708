"""User groups in the sandbox: usergroups.users.list and usergroups.list, over HTTP."""

from slack_sdk.web.async_client import AsyncWebClient

from lab_tests.sandbox.slack.conftest import refusal
from queuebot_lab.sandbox.slack import ONCALL_USER, SECOND_USER, SlackSandbox
from queuebot_lab.sandbox.slack.server import DEFAULT_SCOPES, SANDBOX_BOT_TOKEN


async def test_usergroups_users_list_answers_the_members(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """usergroups.users.list answers the IDs of the group's members, in the order added."""
    group = sandbox.add_usergroup("oncall", [ONCALL_USER, SECOND_USER])
    answer = await client.usergroups_users_list(usergroup=group.id)
    assert answer.data == {"ok": True, "users": [ONCALL_USER, SECOND_USER]}


async def test_add_usergroup_generates_a_subteam_id_unless_one_is_given(
    sandbox: SlackSandbox,
) -> None:
    """A generated id starts with S as Slack's do; a given id is kept."""
    generated = sandbox.add_usergroup("oncall", [ONCALL_USER])
    given = sandbox.add_usergroup("@sre", [SECOND_USER], usergroup_id="S0SRE", name="SRE")
    assert generated.id.startswith("S0SBX")
    assert (generated.handle, generated.name) == ("oncall", "oncall")
    assert (given.id, given.handle, given.name) == ("S0SRE", "sre", "SRE")


async def test_unknown_usergroup_is_no_such_subteam(client: AsyncWebClient) -> None:
    """An ID that names no group is refused with no_such_subteam."""
    body = await refusal(client.usergroups_users_list(usergroup="S0NOWHERE"))
    assert body["error"] == "no_such_subteam"


async def test_missing_usergroup_argument_is_no_such_subteam(client: AsyncWebClient) -> None:
    """usergroups.users.list without `usergroup` is refused as naming no group."""
    body = await refusal(client.api_call("usergroups.users.list", http_verb="GET", params={}))
    assert body["error"] == "no_such_subteam"


async def test_usergroups_methods_without_usergroups_read_are_missing_scope() -> None:
    """Without usergroups:read both methods are missing_scope naming what is needed."""
    scopes = [s for s in DEFAULT_SCOPES if s != "usergroups:read"]
    async with SlackSandbox(scopes=scopes) as sandbox:
        group = sandbox.add_usergroup("oncall", [ONCALL_USER])
        client = AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url)
        members = await refusal(client.usergroups_users_list(usergroup=group.id))
        groups = await refusal(client.usergroups_list())
    assert (members["error"], members["needed"]) == ("missing_scope", "usergroups:read")
    assert (groups["error"], groups["needed"]) == ("missing_scope", "usergroups:read")


async def test_usergroups_list_answers_usergroup_objects_without_users(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """usergroups.list answers each group as a usergroup object, leaving out members by default."""
    group = sandbox.add_usergroup("oncall", [ONCALL_USER], name="On-call")
    (listed,) = (await client.usergroups_list())["usergroups"]
    assert listed["id"] == group.id
    assert listed["team_id"] == sandbox.identity.team_id
    assert (listed["name"], listed["handle"]) == ("On-call", "oncall")
    assert listed["is_usergroup"] is True
    assert listed["date_delete"] == 0
    assert "users" not in listed
    assert "user_count" not in listed


async def test_usergroups_list_with_include_users_lists_members(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """include_users adds each group's member IDs."""
    sandbox.add_usergroup("oncall", [ONCALL_USER, SECOND_USER])
    (listed,) = (await client.usergroups_list(include_users=True))["usergroups"]
    assert listed["users"] == [ONCALL_USER, SECOND_USER]


async def test_usergroups_list_with_include_count_counts_members(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """include_count adds each group's number of members."""
    sandbox.add_usergroup("oncall", [ONCALL_USER, SECOND_USER])
    (listed,) = (await client.usergroups_list(include_count=True))["usergroups"]
    assert listed["user_count"] == 2


async def test_disabled_usergroup_members_are_no_such_subteam_without_include_disabled(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A disabled group's members are refused with no_such_subteam unless include_disabled."""
    group = sandbox.add_usergroup("oncall", [ONCALL_USER])
    sandbox.disable_usergroup(group.id)
    body = await refusal(client.usergroups_users_list(usergroup=group.id))
    assert body["error"] == "no_such_subteam"


async def test_disabled_usergroup_members_are_listed_with_include_disabled(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """With include_disabled a disabled group still answers its members."""
    group = sandbox.add_usergroup("oncall", [ONCALL_USER])
    sandbox.disable_usergroup(group.id)
    answer = await client.usergroups_users_list(usergroup=group.id, include_disabled=True)
    assert answer["users"] == [ONCALL_USER]


async def test_usergroups_list_shows_disabled_groups_only_with_include_disabled(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A disabled group is listed only with include_disabled, with a non-zero date_delete."""
    kept = sandbox.add_usergroup("oncall", [ONCALL_USER])
    gone = sandbox.add_usergroup("retired", [SECOND_USER])
    sandbox.disable_usergroup(gone.id)
    default = (await client.usergroups_list())["usergroups"]
    everything = (await client.usergroups_list(include_disabled=True))["usergroups"]
    assert [g["id"] for g in default] == [kept.id]
    assert {g["id"]: g["date_delete"] != 0 for g in everything} == {kept.id: False, gone.id: True}
