"""Tokens, scopes, unknown methods and the call log of the sandbox Web API, over HTTP."""

from slack_sdk.web.async_client import AsyncWebClient

from lab_tests.sandbox.slack.conftest import refusal
from queuebot_lab.sandbox.slack import SlackSandbox


async def test_auth_test_names_the_bot_and_reports_scopes(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """auth.test answers the bot's ids and the x-oauth-scopes header Bolt reads."""
    answer = await client.auth_test()
    assert answer["user_id"] == sandbox.bot_user_id
    assert answer["team_id"] == "T0QUEUEBOT"
    assert answer["bot_id"] == "B0QUEUEBOT"
    assert answer["url"] == f"{sandbox.url}/"
    assert "chat:write" in answer.headers["x-oauth-scopes"]


async def test_missing_token_is_not_authed(sandbox: SlackSandbox) -> None:
    """A call without a token is refused with not_authed."""
    anonymous = AsyncWebClient(base_url=sandbox.api_url)
    assert (await refusal(anonymous.auth_test()))["error"] == "not_authed"


async def test_wrong_token_is_invalid_auth(sandbox: SlackSandbox) -> None:
    """A token the workspace did not issue is refused with invalid_auth."""
    stranger = AsyncWebClient(token="xoxb-someone-else", base_url=sandbox.api_url)
    assert (await refusal(stranger.auth_test()))["error"] == "invalid_auth"


async def test_unknown_method_is_unknown_method(client: AsyncWebClient) -> None:
    """A method Slack does not have is refused with unknown_method."""
    body = await refusal(client.api_call("chat.teleport", json={"channel": "x"}))
    assert body["error"] == "unknown_method"


async def test_team_id_that_bolt_adds_is_tolerated(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """The extra team_id argument Bolt's per-request client sends does not disturb a call."""
    answer = await client.chat_postMessage(
        channel=sandbox.channel_id, text="x", team_id="T0QUEUEBOT"
    )
    assert answer["ok"]
    assert sandbox.calls("chat.postMessage")[0].params["team_id"] == "T0QUEUEBOT"


async def test_app_token_cannot_post() -> None:
    """An app-level token calling chat.postMessage is not_allowed_token_type."""
    async with SlackSandbox(app_token="xapp-sandbox") as sandbox:
        app_client = AsyncWebClient(token="xapp-sandbox", base_url=sandbox.api_url)
        body = await refusal(app_client.chat_postMessage(channel=sandbox.channel_id, text="x"))
    assert body["error"] == "not_allowed_token_type"


async def test_every_call_is_recorded(sandbox: SlackSandbox, client: AsyncWebClient) -> None:
    """Each call is kept with its method, arguments, HTTP status and arrival time."""
    await client.chat_postMessage(channel=sandbox.channel_id, text="x")
    await refusal(client.chat_postMessage(channel="C0NOWHERE", text="y"))
    first, second = sandbox.calls("chat.postMessage")
    assert (first.ok, first.status, first.params["text"]) == (True, 200, "x")
    assert (second.ok, second.error) == (False, "channel_not_found")
    assert first.received_at <= second.received_at
    assert "token" not in first.params


async def test_method_outside_the_granted_scopes_is_missing_scope(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """Without channels:join, conversations.join is missing_scope naming what is needed."""
    body = await refusal(client.conversations_join(channel=sandbox.channel_id))
    assert (body["error"], body["needed"]) == ("missing_scope", "channels:join")
