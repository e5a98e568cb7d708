"""/queue-status across several GitHub organizations: signed slash commands to the running app,
GitHub's job events delivered signed, the runners listed by the GitHub stand-in, and the answer
as it arrives at the command's response_url in the local Slack workspace. `org NAME` narrows the
queue to one organization's jobs and runners; another name is answered in the ack; an
organization whose runners list fails leaves the others', said missing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.domain.clock import Clock
from bot.slack import blockkit
from bot.slack.contract import ActionId
from bot.status.request import StatusRequest, parse_request
from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.sandbox.slack import ONCALL_USER
from queuebot_lab.sandbox.slack.models import Ephemeral
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import Stack, running_stack

COMMAND = "/queue-status"
TOKEN = "ghs_queueStatusOrgsToken0123456789"
NOW = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
SHARED = "linux.2xlarge"
LABS_ONLY = "linux.g5.4xlarge.nvidia.gpu"


def _text(blocks: list[dict[str, Any]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


@asynccontextmanager
async def _stack(tmp_path: Path, orgs: str = "pytorch,pytorch-labs") -> AsyncIterator[Stack]:
    """pytorch: 3 runners of SHARED, two of its jobs waiting 37 and 20 minutes; pytorch-labs: 2
    runners of SHARED and 2 of LABS_ONLY, a job of each waiting 12 and 30 minutes."""
    async with GitHubSandbox(TOKEN) as github:
        github.add_org("pytorch-labs")
        github.add_runners(SHARED, idle=2, busy=1)
        github.add_runners(SHARED, idle=1, offline=1, org="pytorch-labs")
        github.add_runners(LABS_ONLY, busy=2, org="pytorch-labs")
        async with running_stack(
            tmp_path,
            clock=Clock.at(lambda: NOW),
            GITHUB_WEBHOOK_SECRET=HOOK_SECRET,
            GITHUB_TOKEN=TOKEN,
            GITHUB_ORG=orgs,
            GITHUB_API_URL=github.url,
        ) as stack:
            waiting = [
                ("pytorch", SHARED, 37),
                ("pytorch", SHARED, 20),
                ("pytorch-labs", SHARED, 12),
                ("pytorch-labs", LABS_ONLY, 30),
            ]
            for n, (org, runner_type, minutes) in enumerate(waiting):
                body = job_delivery(
                    "queued",
                    700 + n,
                    NOW - timedelta(minutes=minutes),
                    labels=("self-hosted", runner_type),
                    repository=f"{org}/ci",
                )
                body["repository"]["owner"]["login"] = org
                status, answer = await deliver(stack.http, stack.url, body)
                assert status == 202, answer
            yield stack


async def _command(stack: Stack, text: str) -> Ephemeral:
    before = len(stack.sandbox.ephemerals(ONCALL_USER))
    result = await stack.sandbox.slash_command(COMMAND, text, user_id=ONCALL_USER)
    assert result.status == 200 and result.body.strip() == ""
    return await stack.sandbox.wait_for(
        lambda: e[before] if len(e := stack.sandbox.ephemerals(ONCALL_USER)) > before else None,
        timeout=20,
    )


def test_org_comes_before_what_is_asked() -> None:
    assert parse_request("org pytorch-labs") == StatusRequest(org="pytorch-labs")
    assert parse_request("post org pytorch linux.g5") == StatusRequest(
        query="linux.g5", public=True, org="pytorch"
    )
    assert parse_request("ORG pytorch report 14") == StatusRequest(report_days=14, org="pytorch")
    assert StatusRequest(report_days=14, org="pytorch").words == "org pytorch report 14"
    assert StatusRequest(query="linux.g5", org="pytorch").words == "org pytorch linux.g5"


async def test_the_whole_fleet_counts_every_organization(tmp_path: Path) -> None:
    async with _stack(tmp_path) as stack:
        shown = _text((await _command(stack, "")).blocks)
    assert f"`{SHARED}` 3 queued · longest wait 37m (since 14:23 UTC) · 1/4 busy" in shown
    assert f"`{LABS_ONLY}` 1 queued · longest wait 30m (since 14:30 UTC) · 2/2 busy" in shown
    assert "Organization" not in shown


async def test_one_organizations_jobs_and_runners_only(tmp_path: Path) -> None:
    async with _stack(tmp_path) as stack:
        labs = _text((await _command(stack, "org pytorch-labs")).blocks)
        mine = _text((await _command(stack, "org PyTorch")).blocks)
    assert f"`{SHARED}` 1 queued · longest wait 12m (since 14:48 UTC) · 0/1 busy" in labs
    assert f"`{LABS_ONLY}` 1 queued · longest wait 30m (since 14:30 UTC) · 2/2 busy" in labs
    assert "Organization pytorch-labs only" in labs
    assert f"`{SHARED}` 2 queued · longest wait 37m (since 14:23 UTC) · 1/3 busy" in mine
    assert LABS_ONLY not in mine and "Organization pytorch only" in mine


async def test_an_organization_not_watched_is_answered_in_the_ack(tmp_path: Path) -> None:
    async with _stack(tmp_path) as stack:
        result = await stack.sandbox.slash_command(COMMAND, "org meta-pytorch")
        assert result.status == 200
        assert result.json()["response_type"] == "ephemeral"
        (shown,) = stack.sandbox.ephemerals(ONCALL_USER)
        assert stack.sandbox.response_posts == []
    assert (
        f"`{COMMAND} org meta-pytorch`: queuebot watches no such organization; it watches"
        " `pytorch`, `pytorch-labs`."
    ) in shown.text
    assert f"`{COMMAND} org pytorch`" in shown.text  # the usage, with the org line
    assert blockkit.validate_message(shown.text, shown.blocks) == []


async def test_help_names_the_organizations(tmp_path: Path) -> None:
    async with _stack(tmp_path) as stack:
        result = await stack.sandbox.slash_command(COMMAND, "help")
        assert result.status == 200
        (shown,) = stack.sandbox.ephemerals(ONCALL_USER)
    assert f"`{COMMAND} org pytorch` (or `org pytorch linux.g5`" in shown.text
    assert "one organization's jobs and runners only, of `pytorch`, `pytorch-labs`" in shown.text


async def test_without_organizations_org_is_answered_in_the_ack(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        result = await stack.sandbox.slash_command(COMMAND, "org pytorch")
        assert result.status == 200
        (shown,) = stack.sandbox.ephemerals(ONCALL_USER)
    assert "queuebot watches no organizations by name here (GITHUB_ORG is not set)" in shown.text


async def test_sharing_keeps_the_organization(tmp_path: Path) -> None:
    async with _stack(tmp_path) as stack:
        answer = await _command(stack, "org pytorch-labs")
        click = await stack.sandbox.click(
            stack.sandbox.channel_id, answer.ts, ActionId.SHARE_STATUS.value
        )
        assert click.status == 200
        (shared,) = await stack.sandbox.wait_for(
            lambda: [m for m in stack.sandbox.messages() if "CI queue" in _text(m.blocks)],
            timeout=20,
        )
    shown = _text(shared.blocks)
    assert "Organization pytorch-labs only" in shown and f"shared by <@{ONCALL_USER}>" in shown
    assert f"`{SHARED}` 1 queued" in shown


async def test_an_organization_whose_runners_fail_is_said_missing(tmp_path: Path) -> None:
    """GitHub does not know ghost-org (404): the others' runners are shown, and its are said to
    be missing."""
    async with _stack(tmp_path, orgs="pytorch,pytorch-labs,ghost-org") as stack:
        shown = _text((await _command(stack, "")).blocks)
    assert f"`{SHARED}` 3 queued · longest wait 37m (since 14:23 UTC) · 1/4 busy" in shown
    assert "no data for the runners of org ghost-org" in shown


async def test_one_organizations_runner_type_in_detail_with_its_chart(tmp_path: Path) -> None:
    async with _stack(tmp_path) as stack:
        detail = await _command(stack, "org pytorch-labs linux.g5")
        (chart,) = await stack.sandbox.wait_for(
            lambda: [f for f in stack.sandbox.files if f.completed], timeout=30
        )
    shown = _text(detail.blocks)
    assert LABS_ONLY in shown and "Organization pytorch-labs only" in shown
    assert chart.content is not None and chart.content.startswith(b"\x89PNG")
    (share,) = [
        e
        for b in detail.blocks
        if b.get("type") == "actions"
        for e in b["elements"]
        if e["action_id"] == ActionId.SHARE_STATUS.value
    ]
    assert share["value"] == "org pytorch-labs linux.g5"
