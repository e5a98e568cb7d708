"""The sandbox's modal and file methods: views.open/update and the external upload flow."""

from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from queuebot_lab.sandbox.slack import ONCALL_USER, SandboxEventKind, SlackSandbox

SILENCE_MODAL: dict[str, Any] = {
    "type": "modal",
    "callback_id": "silence",
    "title": {"type": "plain_text", "text": "Silence alert"},
    "submit": {"type": "plain_text", "text": "Silence"},
    "private_metadata": "incident-1",
    "blocks": [
        {
            "type": "input",
            "block_id": "duration",
            "label": {"type": "plain_text", "text": "For how long"},
            "element": {"type": "plain_text_input", "action_id": "minutes"},
        }
    ],
}


async def refused_with(call: Any) -> str:
    with pytest.raises(SlackApiError) as raised:
        await call
    error: str = raised.value.response["error"]
    return error


async def test_views_open_with_a_fresh_trigger_opens_the_modal(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """views.open exchanges a trigger the sandbox issued and answers the view with id and hash."""
    trigger = sandbox.workspace.issue_trigger(ONCALL_USER)
    answer = await client.views_open(trigger_id=trigger.id, view=SILENCE_MODAL)
    [opened] = sandbox.views
    assert answer["view"]["id"] == opened.id
    assert answer["view"]["hash"] == opened.hash
    assert answer["view"]["private_metadata"] == "incident-1"
    assert opened.user == ONCALL_USER


async def test_views_open_with_unknown_trigger_is_invalid_trigger_id(
    client: AsyncWebClient,
) -> None:
    """A trigger_id the sandbox never issued is invalid_trigger_id."""
    error = await refused_with(client.views_open(trigger_id="1.2.abc", view=SILENCE_MODAL))
    assert error == "invalid_trigger_id"


async def test_trigger_used_twice_is_exchanged_trigger_id(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A trigger_id works once; the second views.open is exchanged_trigger_id."""
    trigger = sandbox.workspace.issue_trigger(ONCALL_USER)
    await client.views_open(trigger_id=trigger.id, view=SILENCE_MODAL)
    error = await refused_with(client.views_open(trigger_id=trigger.id, view=SILENCE_MODAL))
    assert error == "exchanged_trigger_id"


async def test_trigger_older_than_three_seconds_is_expired_trigger_id(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A trigger_id used more than 3 s after it was issued is expired_trigger_id."""
    trigger = sandbox.workspace.issue_trigger(ONCALL_USER)
    trigger.issued_at -= 3.5
    error = await refused_with(client.views_open(trigger_id=trigger.id, view=SILENCE_MODAL))
    assert error == "expired_trigger_id"


async def test_invalid_view_is_invalid_arguments_with_messages(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A modal title over 24 characters is refused with the schema message."""
    trigger = sandbox.workspace.issue_trigger(ONCALL_USER)
    view = {**SILENCE_MODAL, "title": {"type": "plain_text", "text": "t" * 25}}
    with pytest.raises(SlackApiError) as raised:
        await client.views_open(trigger_id=trigger.id, view=view)
    assert raised.value.response["error"] == "invalid_arguments"
    assert raised.value.response["response_metadata"]["messages"] == [
        "[ERROR] must be less than 25 characters [json-pointer:/view/title/text]"
    ]
    assert not trigger.used


async def test_views_update_replaces_the_view_and_checks_the_hash(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """views.update with the current hash succeeds; a stale hash is hash_conflict."""
    trigger = sandbox.workspace.issue_trigger(ONCALL_USER)
    opened = (await client.views_open(trigger_id=trigger.id, view=SILENCE_MODAL))["view"]
    changed = {**SILENCE_MODAL, "private_metadata": "incident-2"}
    updated = await client.views_update(view_id=opened["id"], view=changed, hash=opened["hash"])
    assert updated["view"]["private_metadata"] == "incident-2"
    stale = client.views_update(view_id=opened["id"], view=changed, hash=opened["hash"])
    assert await refused_with(stale) == "hash_conflict"


async def test_views_update_by_external_id(sandbox: SlackSandbox, client: AsyncWebClient) -> None:
    """views.update finds a view by the external_id it was opened with."""
    trigger = sandbox.workspace.issue_trigger(ONCALL_USER)
    await client.views_open(trigger_id=trigger.id, view={**SILENCE_MODAL, "external_id": "s-1"})
    answer = await client.views_update(external_id="s-1", view=SILENCE_MODAL)
    assert answer["view"]["external_id"] == "s-1"


async def test_views_update_of_unknown_view_is_not_found(client: AsyncWebClient) -> None:
    """views.update of a view that does not exist is not_found."""
    assert (
        await refused_with(client.views_update(view_id="V0NONE", view=SILENCE_MODAL)) == "not_found"
    )


async def test_upload_v2_shares_the_file_in_the_thread(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """files_upload_v2's three steps land the bytes and a file message in the thread."""
    parent = await client.chat_postMessage(channel=sandbox.channel_id, text="alert")
    events = sandbox.subscribe()
    answer = await client.files_upload_v2(
        content=b"\x89PNG chart",
        filename="queue.png",
        title="Queue depth",
        channel=sandbox.channel_id,
        thread_ts=parent["ts"],
        initial_comment="Queue depth by runner type",
    )
    [upload] = sandbox.files
    assert answer["file"]["id"] == upload.id
    assert upload.content == b"\x89PNG chart"
    assert (upload.title, upload.completed) == ("Queue depth", True)
    [reply] = sandbox.replies(None, parent["ts"])
    assert reply.text == "Queue depth by runner type"
    assert reply.files[0]["id"] == upload.id
    shared = [
        e
        for e in [events.get_nowait() for _ in range(events.qsize())]
        if e.kind == SandboxEventKind.FILE_SHARED
    ]
    assert shared[0].thread_ts == parent["ts"]


async def test_upload_step_one_sends_arguments_in_the_query(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """files.getUploadURLExternal arrives as query parameters and answers an upload URL here."""
    answer = await client.files_getUploadURLExternal(filename="a.txt", length=3)
    assert answer["upload_url"].startswith(f"{sandbox.url}/upload/v1/")
    [call] = sandbox.calls("files.getUploadURLExternal")
    assert call.params == {"filename": "a.txt", "length": "3"}


async def test_completing_an_upload_never_sent_is_file_not_found(
    client: AsyncWebClient,
) -> None:
    """files.completeUploadExternal before the bytes arrived is file_not_found."""
    ticket = await client.files_getUploadURLExternal(filename="a.txt", length=3)
    completing = client.files_completeUploadExternal(files=[{"id": ticket["file_id"]}])
    assert await refused_with(completing) == "file_not_found"


async def test_upload_url_takes_raw_bytes(sandbox: SlackSandbox, client: AsyncWebClient) -> None:
    """POSTing raw bytes to the upload URL answers 200 as files.slack.com does."""
    ticket = await client.files_getUploadURLExternal(filename="a.txt", length=3)
    async with (
        aiohttp.ClientSession() as session,
        session.post(ticket["upload_url"], data=b"abc") as reply,
    ):
        assert reply.status == 200
    assert sandbox.files[0].content == b"abc"


async def test_zero_length_upload_is_missing_argument(client: AsyncWebClient) -> None:
    """files.getUploadURLExternal with length 0 is missing_argument, as Slack documents."""
    assert await refused_with(client.files_getUploadURLExternal(filename="a", length=0)) == (
        "missing_argument"
    )
