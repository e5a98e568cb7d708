"""The job history of a fleet spread over two organizations, read as a GitHub App installed on
each (an installation per organization, its token good for that organization only), over
HTTP against the GitHub stand-in. Each organization holds a fleet of the second model
(`fleetmodel`): `queuebot backfill` fills an empty store with both organizations' jobs as a
store fed every delivery has them, and the serving bot's first reconciliation pass puts right
the deliveries lost in both, so /metrics gives each runner type's queue as the two fleets' own
jobs say; every request about an organization's resources carries its own installation's
token."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.domain.clock import Clock
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import Store, open_store
from fleetmodel import Case, FleetRun
from fleetmodel.github import newest_deliveries
from queuebot_lab.sandbox.github import GitHubSandbox, ReceivedRequest
from queuebot_lab.sandbox.github_apps import SandboxApp
from testkit.github import HOOK_SECRET
from testkit.harness import running_stack
from testkit.second_model import counts, drawn_for, lost, truth
from tests.github.test_github_app import APP_ID, PRIVATE, PUBLIC, TOKEN
from tests.github.test_reconcile import (
    after_first_pass,
    assert_the_alerts_numbers,
    early_warning_reads,
)

ORGS = ("northwind", "globex-eng")
#: Added to the second fleet's job, run and runner ids: GitHub's ids are unique across
#: organizations, and the two fleets are drawn from the same bases.
SHIFT = 1_000_000_000
_OWNED = re.compile(r"^/(?:repos|orgs)/([^/]+)/")
_BY_ID = re.compile(r"^/(organizations|repositories)/(\d+)/")


def _fleet(case: Case, seed: int, types: int, end: datetime) -> FleetRun:
    return drawn_for(end, case, seed=seed, types=types, days=2)


def _in_org(fleet: FleetRun, org: str, shift: int) -> FleetRun:
    """`fleet` as `org`'s, its ids moved by `shift`."""
    fleet.plan = replace(fleet.plan, org=org)
    for job in fleet.jobs:
        job.id, job.run_id = job.id + shift, job.run_id + shift
    for runner in fleet.runners:
        runner.id += shift
    return fleet


def _fleets(end: datetime) -> tuple[FleetRun, FleetRun]:
    """Five runner types queueing in the first organization (an outage), two in the second (a
    mix); one type, linux-x64-highmem-32cpu, in both."""
    first = _in_org(_fleet(Case.OUTAGE, 4, 6, end), ORGS[0], 0)
    second = _in_org(_fleet(Case.MIX, 3, 2, end), ORGS[1], SHIFT)
    return first, second


def _both(first: FleetRun, second: FleetRun) -> FleetRun:
    """The two fleets' jobs as one fleet's, for what the model says of them together."""
    return FleetRun(first.plan, [*first.jobs, *second.jobs])


def _stand_in() -> GitHubSandbox:
    """The stand-in knowing both organizations, the App installed on each."""
    sandbox = GitHubSandbox(TOKEN, org=ORGS[0])
    sandbox.add_org(ORGS[1])
    sandbox.app = SandboxApp(APP_ID, PUBLIC)
    for org in ORGS:
        sandbox.app.install(org)
    return sandbox


def _app_settings(sandbox: GitHubSandbox) -> dict[str, str]:
    """The App's settings for both organizations, its key on one line as env files carry it."""
    return {
        "GITHUB_APP_ID": str(APP_ID),
        "GITHUB_APP_PRIVATE_KEY": PRIVATE.replace("\n", "\\n"),
        "GITHUB_ORG": ",".join(ORGS),
        "GITHUB_API_URL": sandbox.url,
    }


async def _backfill(sandbox: GitHubSandbox, database: Path, *args: str) -> tuple[int, str]:
    """`python -m bot backfill ARGS` as the App, into `database`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "QUEUEBOT_", "SLACK_", "GRAFANA_", "PROMETHEUS_"))
    }
    env |= _app_settings(sandbox) | {"QUEUEBOT_DATABASE": str(database)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "backfill", *args, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await process.communicate()
    return process.returncode or 0, err.decode()


def _owner(sandbox: GitHubSandbox, path: str) -> str | None:
    """Whose resources a request was about; None for the App's own endpoints (its JWT)."""
    if path.startswith("/app/") or path.endswith("/installation"):
        return None
    if named := _OWNED.match(path):
        return named[1]
    by_id = _BY_ID.match(path)
    assert by_id is not None, path
    kind, number = by_id.groups()
    if kind == "organizations":
        ids = {sandbox.org_id: sandbox.org} | {i: n for n, (i, _) in sandbox.orgs.items()}
        return ids[int(number)]
    (repository,) = [r for r in sandbox.history.repositories.values() if r.id == int(number)]
    return repository.owner


def _tokens_by_owner(sandbox: GitHubSandbox) -> dict[str, set[str]]:
    """For each owner asked about, the accounts whose installation issued the tokens asked
    with; every request answered 200."""
    assert sandbox.app is not None
    seen: dict[str, set[str]] = defaultdict(set)
    asked: list[ReceivedRequest] = []
    for request in sandbox.requests:
        if (owner := _owner(sandbox, request.path)) is None:
            continue
        asked.append(request)
        token = request.headers["Authorization"].removeprefix("Bearer ")
        seen[owner].add(sandbox.app.tokens[token].installation.account)
    assert asked and all(r.status == 200 for r in asked), {r.status for r in asked}
    return dict(seen)


async def _spans(store: Store, since: float, until: float) -> list[tuple[Any, ...]]:
    spans = await store.job_spans(since, until)
    found = [
        (s.runner_type, s.repository, s.created_at, s.started_at, s.completed_at) for s in spans
    ]
    return sorted(found, key=repr)


@pytest.mark.timeout(300)
async def test_backfill_over_two_orgs_gives_what_a_fed_store_has(tmp_path: Path) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    first, second = _fleets(end)
    bodies = [*newest_deliveries(first, until=end.timestamp())]
    bodies += newest_deliveries(second, until=end.timestamp())
    fed = await open_store(str(tmp_path / "fed.db"))
    await load_history(fed, bodies, JobsConfig(), remember_until=end.timestamp() + 86400)
    database = tmp_path / "backfilled.db"
    async with _stand_in() as sandbox:
        sandbox.history.add_bodies(bodies)
        code, said = await _backfill(sandbox, database, "--days", "2")
    assert code == 0, said
    repositories = len({body["repository"]["full_name"] for body in bodies})
    assert f"{repositories}/{repositories} repositories" in said
    # Each organization listed with its own installation's token, and read only with it.
    assert [r.path for r in sandbox.requests if r.path.endswith("/repos")] == [
        f"/orgs/{org}/repos" for org in ORGS
    ]
    assert _tokens_by_owner(sandbox) == {org: {org} for org in ORGS}
    # Each installation's hour paid for its own organization's requests.
    assert sandbox.app is not None
    for org in ORGS:
        spent = [r for r in sandbox.requests if _owner(sandbox, r.path) == org]
        installation = sandbox.app.installations[org]
        assert installation.remaining == installation.rate_limit - len(spent)

    backfilled = await open_store(str(database))
    try:
        since = (end - timedelta(days=2)).timestamp()
        ours = await _spans(backfilled, since, end.timestamp())
        assert ours == await _spans(fed, since, end.timestamp())
        assert {span[1].partition("/")[0] for span in ours} == set(ORGS)
    finally:
        await backfilled.close()
        await fed.close()


def _only(fleet: FleetRun, other: FleetRun) -> set[str]:
    """The runner types of `fleet` that `other` has none of."""
    return {j.runner_type for j in fleet.jobs} - {j.runner_type for j in other.jobs}


@pytest.mark.timeout(300)
async def test_the_first_pass_reconciles_both_orgs_with_each_orgs_token(tmp_path: Path) -> None:
    end = datetime.now(UTC).replace(second=0, microsecond=0)
    at = end.timestamp()
    first, second = _fleets(end)
    expected = truth(_both(first, second), at)
    database = tmp_path / "bot" / "queuebot.db"
    database.parent.mkdir(parents=True)
    store = await open_store(str(database))
    try:
        delivered = [*lost(first, end, seed=4), *lost(second, end, seed=3)]
        await load_history(store, delivered, JobsConfig(), remember_until=0.0)
        before = counts(await early_warning_reads(store, at))
    finally:
        await store.close()
    # The lost deliveries left each organization's own runner types wrong.
    for fleet, other in ((first, second), (second, first)):
        only = _only(fleet, other)
        assert {n: j for n, j in before.items() if n in only} != {
            n: j for n, j in counts(expected).items() if n in only
        }, fleet.plan.org

    async with _stand_in() as sandbox:
        sandbox.history.add_bodies(newest_deliveries(first, until=at))
        sandbox.history.add_bodies(newest_deliveries(second, until=at))
        async with running_stack(
            tmp_path / "bot",
            clock=Clock.at(end),
            GITHUB_WEBHOOK_SECRET=HOOK_SECRET,
            QUEUEBOT_RECONCILE_SECONDS="3600",
            **_app_settings(sandbox),
        ) as stack:
            samples = await after_first_pass(stack)
    assert_the_alerts_numbers(samples, expected)
    # Both organizations' repositories were asked about, each with its own installation's
    # token (an installation's token is refused by another organization's endpoints).
    asked = {_owner(sandbox, r.path) for r in sandbox.requests if "/actions/" in r.path}
    assert asked >= set(ORGS)
    assert _tokens_by_owner(sandbox) == {org: {org} for org in ORGS}
