"""The capacity report of some GitHub organizations: composed from the jobs of their
repositories only (the YAML file's `capacity_report.orgs`, a weekly post's own `orgs`), and
`/queue-status org NAME report` signed to the running app and answered in the local Slack
workspace."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

from bot.capacity.report import CapacityReporter
from bot.capacity.schedule import WeeklyReports
from bot.capacity.settings import CapacitySettings, WeeklyPost
from bot.domain.capacity import CapacityReport
from bot.domain.clock import Clock
from bot.fleet.reading import FleetSources
from bot.slack.contract import ActionId
from bot.store import Store
from bot.store.sqlite import SQLiteStore
from queuebot_lab.sandbox.slack import ONCALL_USER
from testkit.github import HOOK_SECRET
from testkit.harness import running_stack
from testkit.jobs import BUSY, job_event, record, record_sample

#: A Monday, 09:00 UTC; the window is the day before.
UNTIL = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
SINCE = UNTIL - timedelta(days=1)
LABS = "pytorch-labs"
LABS_TYPE = "linux.g5.4xlarge.nvidia.gpu"


async def _store(path: Path) -> Store:
    """The sample's jobs in pytorch/pytorch (`record_sample`), and 20 of pytorch-labs's."""
    store = await SQLiteStore.open(str(path))
    await record_sample(store, SINCE.timestamp(), UNTIL.timestamp())
    labs = [
        job_event(
            1000 + i, LABS_TYPE, SINCE.timestamp() + 600 * i, 120.0, 900.0, repository=f"{LABS}/ci"
        )
        for i in range(20)
    ]
    await record(store, labs)
    return store


def _types(report: CapacityReport) -> list[str]:
    return [t.runner_type for t in report.types]


async def test_the_report_of_one_organization_counts_its_jobs_only(tmp_path: Path) -> None:
    store = await _store(tmp_path / "queuebot.db")
    try:
        sources = FleetSources(store=store)
        settings = CapacitySettings(days=1)
        reporter = CapacityReporter(sources, settings, clock=Clock.at(UNTIL))
        whole = (await reporter.compose()).report
        labs = (await reporter.compose(orgs=(LABS,))).report
        mine = (await reporter.compose(orgs=("PyTorch",))).report
    finally:
        await store.close()
    assert _types(whole) == [BUSY, LABS_TYPE, "linux.4xlarge"]
    assert _types(labs) == [LABS_TYPE]
    (labs_type,) = labs.types
    assert labs_type.jobs == 20 and labs_type.p95_seconds == 120.0
    assert labs.notes[0].startswith("Organization pytorch-labs only: their repositories' jobs")
    assert _types(mine) == [BUSY, "linux.4xlarge"]


async def test_the_settings_and_each_weekly_post_name_their_organizations(tmp_path: Path) -> None:
    store = await _store(tmp_path / "queuebot.db")
    try:
        posts = (
            WeeklyPost(channel="#ci-capacity", weekday="monday", at=time(9, 0)),
            WeeklyPost(channel="#labs-capacity", weekday="monday", at=time(9, 0), orgs=(LABS,)),
        )
        settings = CapacitySettings(days=1, orgs=("pytorch",), posts=posts)
        now = Clock.at(UNTIL + timedelta(minutes=1))
        reporter = CapacityReporter(FleetSources(store=store), settings, clock=now)
        assert _types((await reporter.compose()).report) == [BUSY, "linux.4xlarge"]
        slots = await WeeklyReports(store, reporter, clock=now).check()
        saved = {slot.split("@")[0]: await store.report(slot) for slot in slots}
    finally:
        await store.close()
    ci, labs = saved["#ci-capacity"], saved["#labs-capacity"]
    assert ci is not None and labs is not None
    assert _types(CapacityReport.from_json(ci.view_json)) == [BUSY, "linux.4xlarge"]
    assert _types(CapacityReport.from_json(labs.view_json)) == [LABS_TYPE]


async def test_org_report_in_slack(tmp_path: Path) -> None:
    store = await _store(tmp_path / "queuebot.db")
    await store.close()
    async with running_stack(
        tmp_path,
        clock=Clock.at(UNTIL),
        GITHUB_WEBHOOK_SECRET=HOOK_SECRET,
        GITHUB_ORG=f"pytorch,{LABS}",
    ) as stack:
        result = await stack.sandbox.slash_command("/queue-status", f"org {LABS} report 1")
        assert result.status == 200 and result.body.strip() == ""
        answer = await stack.sandbox.wait_for(
            lambda: (stack.sandbox.ephemerals(ONCALL_USER) or [None])[0], timeout=30
        )
    shown = json.dumps(answer.blocks, ensure_ascii=False)
    assert "CI capacity, last day" in shown and LABS_TYPE in shown and BUSY not in shown
    assert "Organization pytorch-labs only" in shown
    (share,) = [
        e
        for b in answer.blocks
        if b.get("type") == "actions"
        for e in b["elements"]
        if e["action_id"] == ActionId.SHARE_STATUS.value
    ]
    assert share["value"] == f"org {LABS} report 1"
