"""Heads-ups in Slack before the alert: job events sent signed to the bot's GitHub webhook, the
clock moved as the queue grows, and the channel read back from the local Slack: a heads-up
posted once, edited when the threshold is crossed (pointing to the alert's message, with a
reply in the alert's thread), or edited to back to normal when the queue drains."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.delivery.heads_up import HEADS_UP_EVENT
from bot.domain.clock import Clock
from bot.forecast.warnings import CLEAR_CHECKS
from bot.slack.contract import ActionId
from queuebot_lab.sandbox.slack import ONCALL_USER, PostedMessage
from queuebot_lab.simulator.deliveries import SimulatedJob, delivery, workflow_job_body
from testkit.github import HOOK_SECRET
from testkit.harness import CHANNEL_NAME, Stack, running_stack, top_level
from testkit.payloads import reference, refired

START = datetime(2026, 11, 24, 18, 0, tzinfo=UTC)
TYPE = "linux.2xlarge"
#: The local workspace's channel, by its id.
CHANNEL_ID = "C0QUEUEALERTS"
RUNBOOK = "https://runbooks.example.com/queueing"


def _config(tmp_path: Path) -> str:
    path = tmp_path / "queuebot.yml"
    path.write_text(
        "early_warning:\n"
        f"  - channel: '#{CHANNEL_NAME}'\n"
        "    wait_minutes: 60\n"
        "    queued: 5\n"
        "    horizon_minutes: 30\n"
        f"    runbook_url: {RUNBOOK}\n",
        encoding="utf-8",
    )
    return str(path)


def _job(n: int, created: datetime, runner_type: str = TYPE) -> SimulatedJob:
    return SimulatedJob(
        id=41_000_000_000 + n,
        run_id=12_000_000_000 + n,
        runner_type=runner_type,
        repository="pytorch/pytorch",
        workflow="pull",
        name=f"test ({n})",
        created=int(created.timestamp()),
        started=None,
        completed=None,
        failed=False,
        runner_id=None,
        runner_name=None,
    )


async def _send(stack: Stack, job: SimulatedJob, action: str) -> None:
    headers, raw = delivery(workflow_job_body(job, action), HOOK_SECRET)
    async with stack.http.post(f"{stack.url}/webhooks/github", data=raw, headers=headers) as answer:
        assert answer.status in (200, 202), await answer.text()


def _heads_ups(stack: Stack) -> list[PostedMessage]:
    return [
        m
        for m in stack.sandbox.messages()
        if (m.metadata or {}).get("event_type") == HEADS_UP_EVENT
    ]


def _text(stack: Stack, message: PostedMessage) -> str:
    current = stack.sandbox.message(None, message.ts) or message
    return json.dumps(current.blocks) + current.text


async def _queue_growing(stack: Stack, runner_type: str = TYPE) -> list[SimulatedJob]:
    """Eight jobs queued 40 minutes down to 5, none taken: the oldest reaches 60 minutes in
    about 20."""
    jobs = [_job(n, START - timedelta(minutes=40 - 5 * n), runner_type) for n in range(8)]
    for job in jobs:
        await _send(stack, job, "queued")
    return jobs


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "GITHUB_WEBHOOK_SECRET": HOOK_SECRET,
        "QUEUEBOT_CONFIG": _config(tmp_path),
        "QUEUEBOT_FORECAST_CHECK_SECONDS": "0.1",
    }


async def test_a_growing_queue_gets_one_heads_up_then_points_to_the_alert(tmp_path: Path) -> None:
    now = [START]
    async with running_stack(tmp_path, clock=Clock.at(lambda: now[0]), **_env(tmp_path)) as stack:
        await _queue_growing(stack)
        (posted,) = await stack.sandbox.wait_for(lambda: _heads_ups(stack), timeout=10)
        text = _text(stack, posted)
        assert f"Heads-up: {TYPE}" in text and "longest wait *40 min*" in text
        assert "*60 min* in about *20 min*" in text and RUNBOOK in text
        # The alert fires and its message is posted; then the threshold is crossed.
        now[0] = START + timedelta(minutes=21)
        alert = refired(reference(), now[0] - timedelta(minutes=1))
        assert (await stack.webhook(alert)).status == 202
        (parent,) = await stack.sandbox.wait_for(lambda: top_level(stack.sandbox)[0], timeout=10)
        # The crossing may be shown before the alert's message is posted (a busy machine); a
        # later check links it (`_link_late_alerts`).
        await stack.sandbox.wait_for(
            lambda: (
                "crossed the alert's threshold" in _text(stack, posted)
                and "The alert's message" in _text(stack, posted)
            ),
            timeout=10,
        )
        replies = await stack.sandbox.wait_for(
            lambda: [r for r in stack.sandbox.replies(None, parent.ts) if "warned" in r.text],
            timeout=10,
        )
        assert TYPE in replies[0].text
        # Checks go on (ten of them): no second heads-up while the alert's condition holds.
        now[0] += timedelta(minutes=5)
        await stack.passes("early warning", 10)
        assert len(_heads_ups(stack)) == 1


async def test_a_queue_that_drains_is_back_to_normal_without_flapping(tmp_path: Path) -> None:
    now = [START]
    async with running_stack(tmp_path, clock=Clock.at(lambda: now[0]), **_env(tmp_path)) as stack:
        jobs = await _queue_growing(stack)
        (posted,) = await stack.sandbox.wait_for(lambda: _heads_ups(stack), timeout=10)
        # Runners come: every job is taken.
        now[0] = START + timedelta(minutes=2)
        for job in jobs:
            taken = SimulatedJob(**{**job.__dict__, "started": int(now[0].timestamp()) - 30})
            await _send(stack, taken, "in_progress")
        await stack.sandbox.wait_for(
            lambda: "Back to normal" in _text(stack, posted), timeout=5 + CLEAR_CHECKS
        )
        assert "stopped heading for the threshold" in _text(stack, posted)
        assert len(_heads_ups(stack)) == 1


async def test_runner_type_names_are_escaped_in_a_heads_up(tmp_path: Path) -> None:
    now = [START]
    hostile = "linux.<!channel>.<https://evil.example|x>"
    async with running_stack(tmp_path, clock=Clock.at(lambda: now[0]), **_env(tmp_path)) as stack:
        await _queue_growing(stack, hostile)
        (posted,) = await stack.sandbox.wait_for(lambda: _heads_ups(stack), timeout=10)
        assert "<!channel>" not in posted.text
        for block in posted.blocks:
            if block.get("type") in ("section", "context"):
                shown = json.dumps(block)
                assert "<!channel>" not in shown and "<https://evil" not in shown


async def test_an_alert_posted_after_the_crossing_is_linked_when_it_comes(tmp_path: Path) -> None:
    """Grafana's rule fires minutes after the threshold is crossed (its pending period): the
    heads-up first says it was crossed, then links the alert's message once it is posted."""
    now = [START]
    async with running_stack(tmp_path, clock=Clock.at(lambda: now[0]), **_env(tmp_path)) as stack:
        await _queue_growing(stack)
        (posted,) = await stack.sandbox.wait_for(lambda: _heads_ups(stack), timeout=10)
        now[0] = START + timedelta(minutes=21)
        await stack.sandbox.wait_for(
            lambda: "crossed the alert's threshold" in _text(stack, posted), timeout=10
        )
        assert "The alert's message" not in _text(stack, posted)
        now[0] = START + timedelta(minutes=24)
        alert = refired(reference(), START + timedelta(minutes=22))
        assert (await stack.webhook(alert)).status == 202
        (parent,) = await stack.sandbox.wait_for(lambda: top_level(stack.sandbox)[0], timeout=10)
        await stack.sandbox.wait_for(
            lambda: "The alert's message" in _text(stack, posted), timeout=10
        )
        warned = await stack.sandbox.wait_for(
            lambda: [r for r in stack.sandbox.replies(None, parent.ts) if "warned" in r.text],
            timeout=10,
        )
        await stack.passes("early warning", 10)
        assert len([r for r in stack.sandbox.replies(None, parent.ts) if "warned" in r.text]) == 1
        assert TYPE in warned[0].text and len(_heads_ups(stack)) == 1


async def test_show_queue_answers_the_clicker_with_the_runner_types_detail(
    tmp_path: Path,
) -> None:
    now = [START]
    async with running_stack(tmp_path, clock=Clock.at(lambda: now[0]), **_env(tmp_path)) as stack:
        await _queue_growing(stack)
        (posted,) = await stack.sandbox.wait_for(lambda: _heads_ups(stack), timeout=10)
        click = await stack.sandbox.click(
            stack.sandbox.channel_id, posted.ts, ActionId.SHOW_QUEUE.value
        )
        assert click.status == 200
        answer = await stack.sandbox.wait_for(
            lambda: (stack.sandbox.ephemerals(ONCALL_USER) or [None])[0], timeout=20
        )
        shown = json.dumps(answer.blocks, ensure_ascii=False)
        # Jobs count as waiting after 5 minutes, as the alert counts them: 7 of the 8.
        assert f"CI queue: {TYPE}" in shown and "7 waiting · longest wait 40m" in shown
        assert any(block["type"] == "image" for block in answer.blocks)
        # Only the clicker sees it; the channel has the heads-up alone.
        assert len(stack.sandbox.messages()) == 1


async def test_a_heads_up_whose_answer_was_lost_is_found_not_posted_again(
    tmp_path: Path,
) -> None:
    now = [START]
    config = tmp_path / "by-id.yml"
    # The channel by its id, as Slack shows it: a lost answer can be looked for there.
    config.write_text(f"early_warning:\n  - channel: {CHANNEL_ID}\n")
    env = {**_env(tmp_path), "QUEUEBOT_CONFIG": str(config)}
    async with running_stack(tmp_path, clock=Clock.at(lambda: now[0]), **env) as stack:
        assert stack.sandbox.channel_id == CHANNEL_ID
        # Slack takes the post, and its answer is lost on the way back.
        stack.sandbox.faults.add("chat.postMessage", status=500, after=True)
        await _queue_growing(stack)
        (posted,) = await stack.sandbox.wait_for(lambda: _heads_ups(stack), timeout=10)
        # The writer tries again (every 5 s at most) and adopts the message it finds.
        await stack.sandbox.wait_for(
            lambda: (stack.sandbox.message(None, posted.ts) or posted).edited_by is not None,
            timeout=20,
        )
        assert len(_heads_ups(stack)) == 1
