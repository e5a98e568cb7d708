"""response_url targets: what a POST to them does, and Slack's five-uses limit."""

from typing import Any

import aiohttp

from queuebot_lab.sandbox.slack import ONCALL_USER, SECOND_USER, SlackSandbox


def alert(sandbox: SlackSandbox) -> str:
    """An app message in the channel, as if a button on it had been clicked."""
    return sandbox.workspace.post(sandbox.default_channel, sandbox.bot_user_id, "alert", []).ts


def response_url(sandbox: SlackSandbox, user: str, source_ts: str | None) -> str:
    target = sandbox.workspace.issue_response_url(sandbox.channel_id, user, source_ts)
    return f"{sandbox.url}/response/{target.id}"


async def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as answer:
        return answer.status, await answer.json()


async def test_replace_original_edits_the_source_message(sandbox: SlackSandbox) -> None:
    """replace_original edits the message the interaction came from, in place."""
    ts = alert(sandbox)
    answer = await post(
        response_url(sandbox, ONCALL_USER, ts), {"replace_original": True, "text": "done"}
    )
    assert answer == (200, {"ok": True})
    assert [m.text for m in sandbox.messages()] == ["done"]
    assert sandbox.response_posts[0].outcome == "replaced"


async def test_replace_original_as_string_is_understood(sandbox: SlackSandbox) -> None:
    """A hand-written "true" for replace_original counts like the boolean."""
    ts = alert(sandbox)
    await post(response_url(sandbox, ONCALL_USER, ts), {"replace_original": "true", "text": "done"})
    assert sandbox.messages()[0].text == "done"


async def test_default_is_an_ephemeral_for_the_user(sandbox: SlackSandbox) -> None:
    """Without response_type, the post is ephemeral to the user who acted."""
    await post(response_url(sandbox, SECOND_USER, alert(sandbox)), {"text": "working on it"})
    assert [e.text for e in sandbox.ephemerals(SECOND_USER)] == ["working on it"]
    assert [m.text for m in sandbox.messages()] == ["alert"]


async def test_in_channel_with_thread_ts_replies_in_the_thread(sandbox: SlackSandbox) -> None:
    """response_type in_channel with thread_ts posts a thread reply as the app."""
    ts = alert(sandbox)
    body = {"response_type": "in_channel", "thread_ts": ts, "text": "findings"}
    await post(response_url(sandbox, ONCALL_USER, ts), body)
    [reply] = sandbox.replies(None, ts)
    assert (reply.text, reply.user) == ("findings", sandbox.bot_user_id)


async def test_slash_command_replace_original_posts_anew(sandbox: SlackSandbox) -> None:
    """A slash command's response_url has no message to replace, so it posts a new one."""
    body = {"replace_original": True, "response_type": "in_channel", "text": "second"}
    await post(response_url(sandbox, ONCALL_USER, None), body)
    assert [m.text for m in sandbox.messages()] == ["second"]


async def test_delete_original_removes_the_message(sandbox: SlackSandbox) -> None:
    """delete_original deletes the source message."""
    await post(response_url(sandbox, ONCALL_USER, alert(sandbox)), {"delete_original": True})
    assert sandbox.messages() == []


async def test_five_uses_then_expired_url(sandbox: SlackSandbox) -> None:
    """A response_url takes five posts; the sixth is refused with expired_url."""
    url = response_url(sandbox, ONCALL_USER, alert(sandbox))
    statuses = [(await post(url, {"text": str(i)}))[0] for i in range(5)]
    assert statuses == [200] * 5
    assert await post(url, {"text": "6"}) == (404, {"ok": False, "error": "expired_url"})
    assert len(sandbox.ephemerals()) == 5


async def test_older_than_thirty_minutes_is_expired_url(sandbox: SlackSandbox) -> None:
    """A response_url used after 30 minutes is refused with expired_url."""
    target = sandbox.workspace.issue_response_url(sandbox.channel_id, ONCALL_USER)
    target.created_at -= 30 * 60 + 1
    answer = await post(f"{sandbox.url}/response/{target.id}", {"text": "late"})
    assert answer == (404, {"ok": False, "error": "expired_url"})


async def test_refuses_invalid_blocks(sandbox: SlackSandbox) -> None:
    """Blocks Slack would refuse are refused here too, with the problem listed."""
    header = {"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}
    status, body = await post(response_url(sandbox, ONCALL_USER, None), {"blocks": [header]})
    assert (status, body["error"]) == (400, "invalid_blocks")
    assert body["errors"] == ["must be less than 151 characters [json-pointer:/blocks/0/text/text]"]


async def test_refuses_an_empty_message(sandbox: SlackSandbox) -> None:
    """Neither text nor blocks is no_text."""
    status, body = await post(
        response_url(sandbox, ONCALL_USER, None), {"response_type": "in_channel"}
    )
    assert (status, body["error"]) == (400, "no_text")
