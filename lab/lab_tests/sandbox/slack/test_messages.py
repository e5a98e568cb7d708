"""Messages, threads, edits, ephemerals and permalinks, driven over HTTP by slack_sdk."""

from typing import Any

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from lab_tests.sandbox.slack.conftest import refusal
from queuebot_lab.sandbox.slack import ONCALL_USER, SlackSandbox
from queuebot_lab.sandbox.slack.server import SANDBOX_BOT_TOKEN

BUTTONS: list[dict[str, Any]] = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Queue time 114 min*"}},
    {
        "type": "actions",
        "elements": [
            {
                "type": "button",
                "text": {"type": "plain_text", "text": "Run diagnostics"},
                "action_id": "run_diagnostics",
                "value": "incident-1",
            }
        ],
    },
]


async def test_post_by_name_answers_channel_id_and_stores_message(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.postMessage to '#name' answers the channel ID and the stored message."""
    answer = await client.chat_postMessage(channel="#queue-alerts", text="alert", blocks=BUTTONS)
    assert answer["channel"] == sandbox.channel_id
    [stored] = sandbox.messages()
    assert stored.ts == answer["ts"] == answer["message"]["ts"]
    assert stored.blocks[1]["elements"][0]["action_id"] == "run_diagnostics"
    assert all(block["block_id"] for block in stored.blocks)


async def test_name_without_hash_also_resolves(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.postMessage accepts a channel name without '#'."""
    answer = await client.chat_postMessage(channel="queue-alerts", text="alert")
    assert answer["channel"] == sandbox.channel_id


async def test_ts_values_are_unique_and_increasing(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """Message ts strings have Slack's form and strictly increase."""
    stamps = [
        (await client.chat_postMessage(channel=sandbox.channel_id, text=str(i)))["ts"]
        for i in range(5)
    ]
    assert stamps == sorted(set(stamps), key=float)
    assert all(len(ts.split(".")[1]) == 6 for ts in stamps)


async def test_unknown_channel_is_channel_not_found(client: AsyncWebClient) -> None:
    """Posting to a channel the workspace lacks is refused with channel_not_found."""
    body = await refusal(client.chat_postMessage(channel="C0NOWHERE", text="x"))
    assert body["error"] == "channel_not_found"


async def test_channel_without_the_bot_is_not_in_channel(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """Without chat:write.public, posting where the bot is not a member is not_in_channel."""
    sandbox.add_channel("elsewhere", "C0ELSEWHERE", members=[ONCALL_USER])
    body = await refusal(client.chat_postMessage(channel="C0ELSEWHERE", text="x"))
    assert body["error"] == "not_in_channel"


async def test_message_without_text_or_blocks_is_no_text(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A message with neither text nor blocks is refused with no_text."""
    body = await refusal(client.api_call("chat.postMessage", json={"channel": sandbox.channel_id}))
    assert body["error"] == "no_text"


async def test_invalid_blocks_list_problems_like_slack(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """Too many blocks: invalid_blocks with errors and response_metadata.messages."""
    blocks = [{"type": "divider"}] * 51
    body = await refusal(
        client.chat_postMessage(channel=sandbox.channel_id, text="x", blocks=blocks)
    )
    assert body["error"] == "invalid_blocks"
    assert body["errors"] == ["no more than 50 items allowed [json-pointer:/blocks]"]
    assert body["response_metadata"]["messages"] == [f"[ERROR] {body['errors'][0]}"]
    assert sandbox.messages() == []


async def test_oversized_blocks_are_msg_blocks_too_long(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """Blocks within every per-block limit but long in total get msg_blocks_too_long."""
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 2900}}
    body = await refusal(
        client.chat_postMessage(channel=sandbox.channel_id, text="x", blocks=[section] * 5)
    )
    assert body["error"] == "msg_blocks_too_long"


async def test_blocks_as_json_string_are_accepted(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A form-style JSON-encoded blocks argument is read like the structured one."""
    answer = await client.api_call(
        "chat.postMessage",
        data={"channel": sandbox.channel_id, "text": "x", "blocks": '[{"type": "divider"}]'},
    )
    assert answer["message"]["blocks"][0]["type"] == "divider"


async def test_very_long_text_is_truncated_with_a_warning(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """Text beyond 40,000 characters is cut, not refused, and warned about."""
    answer = await client.chat_postMessage(channel=sandbox.channel_id, text="y" * 40_500)
    assert answer["warning"] == "message_truncated"
    assert len(sandbox.messages()[0].text) == 40_000


async def test_metadata_is_stored_and_returned(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.postMessage metadata is kept on the message."""
    metadata = {"event_type": "queuebot_incident", "event_payload": {"incident": "abc"}}
    answer = await client.chat_postMessage(channel=sandbox.channel_id, text="x", metadata=metadata)
    assert answer["message"]["metadata"] == metadata
    assert sandbox.messages()[0].metadata == metadata


async def test_reply_lands_in_the_thread(sandbox: SlackSandbox, client: AsyncWebClient) -> None:
    """A reply names its parent in thread_ts and is counted on the parent."""
    parent = await client.chat_postMessage(channel=sandbox.channel_id, text="alert")
    reply = await client.chat_postMessage(
        channel=sandbox.channel_id, text="finding", thread_ts=parent["ts"]
    )
    assert reply["message"]["thread_ts"] == parent["ts"]
    assert [r.text for r in sandbox.replies(None, parent["ts"])] == ["finding"]
    assert [m.ts for m in sandbox.messages()] == [parent["ts"]]
    history = await client.conversations_replies(channel=sandbox.channel_id, ts=parent["ts"])
    assert history["messages"][0]["reply_count"] == 1


async def test_reply_to_a_reply_joins_the_root_thread(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A reply's ts used as thread_ts files the new message under the thread's root."""
    parent = await client.chat_postMessage(channel=sandbox.channel_id, text="alert")
    first = await client.chat_postMessage(
        channel=sandbox.channel_id, text="1", thread_ts=parent["ts"]
    )
    second = await client.chat_postMessage(
        channel=sandbox.channel_id, text="2", thread_ts=first["ts"]
    )
    assert second["message"]["thread_ts"] == parent["ts"]
    assert [r.text for r in sandbox.replies(None, parent["ts"])] == ["1", "2"]


async def test_thread_ts_naming_no_message_is_accepted_but_shown_nowhere(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """As on Slack, a thread_ts that names no message is ok but the reply is invisible."""
    parent = await client.chat_postMessage(channel=sandbox.channel_id, text="alert")
    answer = await client.chat_postMessage(
        channel=sandbox.channel_id, text="lost", thread_ts="1600000000.000100"
    )
    assert answer["ok"]
    assert sandbox.replies(None, parent["ts"]) == []
    assert [m.text for m in sandbox.messages()] == ["alert"]
    assert [m.text for m in sandbox.orphans()] == ["lost"]


async def test_update_edits_in_place_and_keeps_history_and_replies(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.update replaces the content, records the version and keeps the thread."""
    parent = await client.chat_postMessage(
        channel=sandbox.channel_id, text="firing", blocks=BUTTONS
    )
    await client.chat_postMessage(channel=sandbox.channel_id, text="reply", thread_ts=parent["ts"])
    answer = await client.chat_update(channel=sandbox.channel_id, ts=parent["ts"], text="resolved")
    assert answer["text"] == "resolved"
    message = sandbox.message(None, parent["ts"])
    assert message is not None
    assert [v.text for v in message.versions] == ["firing", "resolved"]
    assert message.blocks[1]["type"] == "actions"  # blocks not sent are kept
    assert len(sandbox.replies(None, parent["ts"])) == 1


async def test_update_by_channel_name_is_channel_not_found(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.update needs the channel ID; a name is channel_not_found."""
    parent = await client.chat_postMessage(channel=sandbox.channel_id, text="x")
    body = await refusal(client.chat_update(channel="#queue-alerts", ts=parent["ts"], text="y"))
    assert body["error"] == "channel_not_found"


async def test_update_of_unknown_ts_is_message_not_found(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.update of a ts that names no message is message_not_found."""
    body = await refusal(client.chat_update(channel=sandbox.channel_id, ts="1.000001", text="y"))
    assert body["error"] == "message_not_found"


async def test_update_of_someone_elses_message_is_cant_update_message(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.update of a message the bot did not post is cant_update_message."""
    human = sandbox.workspace.post(sandbox.default_channel, ONCALL_USER, "mine", [])
    body = await refusal(client.chat_update(channel=sandbox.channel_id, ts=human.ts, text="y"))
    assert body["error"] == "cant_update_message"


async def test_ephemeral_reaches_only_its_user(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.postEphemeral stores a message for one user, not in the channel."""
    answer = await client.chat_postEphemeral(
        channel=sandbox.channel_id, user=ONCALL_USER, text="only you", thread_ts="1.000001"
    )
    [ephemeral] = sandbox.ephemerals(ONCALL_USER)
    assert ephemeral.ts == answer["message_ts"]
    assert ephemeral.thread_ts == "1.000001"
    assert sandbox.messages() == []


async def test_ephemeral_to_non_member_is_user_not_in_channel(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.postEphemeral to a user outside the channel is user_not_in_channel."""
    sandbox.add_user("U0OUTSIDER", "carol")
    body = await refusal(
        client.chat_postEphemeral(channel=sandbox.channel_id, user="U0OUTSIDER", text="x")
    )
    assert body["error"] == "user_not_in_channel"


async def test_permalink_of_a_reply_names_its_thread_and_is_served(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.getPermalink gives a sandbox URL; a reply's carries thread_ts and cid."""
    parent = await client.chat_postMessage(channel=sandbox.channel_id, text="the alert")
    reply = await client.chat_postMessage(
        channel=sandbox.channel_id, text="r", thread_ts=parent["ts"]
    )
    top = await client.chat_getPermalink(channel=sandbox.channel_id, message_ts=parent["ts"])
    threaded = await client.chat_getPermalink(channel=sandbox.channel_id, message_ts=reply["ts"])
    digits = parent["ts"].replace(".", "")
    assert top["permalink"] == f"{sandbox.url}/archives/{sandbox.channel_id}/p{digits}"
    assert threaded["permalink"].endswith(f"?thread_ts={parent['ts']}&cid={sandbox.channel_id}")
    async with aiohttp.ClientSession() as session, session.get(top["permalink"]) as page:
        assert page.status == 200
        assert "the alert" in await page.text()


async def test_permalink_of_unknown_ts_is_message_not_found(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """chat.getPermalink of a ts that names no message is message_not_found."""
    body = await refusal(
        client.chat_getPermalink(channel=sandbox.channel_id, message_ts="1.000002")
    )
    assert body["error"] == "message_not_found"


async def test_broadcast_reply_shows_in_the_channel_too(
    sandbox: SlackSandbox, client: AsyncWebClient
) -> None:
    """A reply with reply_broadcast is in the thread and among the channel's messages."""
    parent = await client.chat_postMessage(channel=sandbox.channel_id, text="alert")
    reply = await client.chat_postMessage(
        channel=sandbox.channel_id, text="resolved", thread_ts=parent["ts"], reply_broadcast=True
    )
    assert [m.text for m in sandbox.messages()] == ["alert", "resolved"]
    assert [r.ts for r in sandbox.replies(None, parent["ts"])] == [reply["ts"]]


async def test_joining_a_channel_lets_the_bot_post_there() -> None:
    """conversations.join adds the bot, after which not_in_channel no longer applies."""
    async with SlackSandbox(scopes=["chat:write", "channels:join"]) as sandbox:
        client = AsyncWebClient(token=SANDBOX_BOT_TOKEN, base_url=sandbox.api_url)
        sandbox.add_channel("elsewhere", "C0ELSEWHERE", members=[ONCALL_USER])
        joined = await client.conversations_join(channel="C0ELSEWHERE")
        posted = await client.chat_postMessage(channel="C0ELSEWHERE", text="hello")
    assert joined["channel"]["is_member"]
    assert posted["ok"]
