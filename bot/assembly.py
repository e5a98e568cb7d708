"""What the running bot is made of: the outbound clients and the services built on the store,
Slack's listeners registered, the web edges set, and the background tasks started. `bot.app`
calls these in its lifetime, one context per concern."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta

import aiohttp
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot import listeners
from bot.capacity.report import CapacityReporter
from bot.capacity.schedule import WeeklyReports
from bot.clients import (
    github_reader_for,
    grafana_client_for,
    prometheus_client_for,
)
from bot.config import Settings
from bot.delivery.heads_up import HeadsUpWriter
from bot.delivery.pacing import Pacer
from bot.delivery.report import ReportWriter
from bot.delivery.worker import Deliverer
from bot.diagnostics.service import Diagnoser
from bot.domain.clock import Clock
from bot.fleet.exported import FleetExport
from bot.fleet.reading import FleetSources
from bot.fleet.sources.backfill import Backfill
from bot.fleet.sources.first_backfill import FirstBackfill
from bot.fleet.sources.github_app import GitHubCredentials
from bot.fleet.sources.reconcile import Reconciler
from bot.fleet.sources.runner_supply import RunnersSource
from bot.forecast.watcher import EarlyWarningWatcher
from bot.incidents.service import IncidentService
from bot.listeners.actions import ActionHandlers
from bot.listeners.capacity import ReportAnswers
from bot.listeners.silence import SilenceHandlers
from bot.listeners.status import StatusHandlers
from bot.render.renderer import Renderer
from bot.render.values import ValueNaming
from bot.silencing.ledger import SilenceLedger
from bot.silencing.permissions import Permissions
from bot.silencing.service import Silencer
from bot.silencing.watcher import SilenceWatcher
from bot.slack.gateway import SlackGateway
from bot.status.reader import StatusReader
from bot.store import Pruned, Store
from bot.store.retention import keep_pruning
from bot.telemetry.metrics import Metrics
from bot.telemetry.passes import PassRecord
from bot.web.github_signatures import HookSecrets
from bot.web.github_webhook import GitHubWebhook
from bot.web.grafana_webhook import WebhookAuth, WebhookHandler
from bot.web.health import Health
from bot.web.routes import EDGES, Edges
from bot.web.slack_events import SlackEvents

log = logging.getLogger(__name__)

#: A silenced alert absent from Grafana for this many checks in a row has resolved (90 s at the
#: default 30 s: longer than a rule's usual 1-minute evaluation, so a Grafana restart that
#: empties its alert list for a moment resolves nothing).
RESOLVE_AFTER_CHECKS = 3


@dataclasses.dataclass
class Outbound:
    """What the bot reaches out with: one HTTP session for Grafana, Prometheus and GitHub (None
    when none is configured), GitHub's runners list, and the process capacity reports are
    composed in (not beside the event loop)."""

    session: aiohttp.ClientSession | None
    github_runners: RunnersSource | None
    composer: ProcessPoolExecutor
    #: What every request to GitHub's REST API is authorized with (one App's installation
    #: tokens for all its clients); None without REST access.
    github_credentials: GitHubCredentials | None = None


@dataclasses.dataclass
class Services:
    """The services, built once the store and the outbound clients are there."""

    bolt: AsyncApp
    deliverer: Deliverer
    diagnoser: Diagnoser
    watch: SilenceWatcher
    forecaster: EarlyWarningWatcher | None
    heads_ups: HeadsUpWriter
    weekly: WeeklyReports | None
    report_writer: ReportWriter
    retention: PassRecord
    #: Reconciliation with GitHub's REST API (None when it is off or cannot be done).
    reconciler: Reconciler | None = None
    #: The history read at first start (None unless QUEUEBOT_BACKFILL_ON_START_DAYS is set).
    first_backfill: FirstBackfill | None = None
    #: The background tasks by what /healthz calls them when one is not running.
    tasks: dict[str, asyncio.Task[None]] = dataclasses.field(default_factory=dict)
    #: Background work that ends by itself (the first start's backfill): cancelled on
    #: shutdown, never a reason on /healthz.
    chores: list[asyncio.Task[None]] = dataclasses.field(default_factory=list)


def count_pruned(metrics: Metrics, record: PassRecord, pruned: Pruned) -> None:
    """Retention's work on /metrics, a counter per kind of row."""
    record.succeeded()
    metrics.inc("queuebot_retention_passes_total")
    for what, count in dataclasses.asdict(pruned).items():
        metrics.add("queuebot_retention_pruned_total", count, what=what)


def build_services(
    app: web.Application,
    store: Store,
    out: Outbound,
    settings: Settings,
    client: AsyncWebClient,
    metrics: Metrics,
    auth: WebhookAuth,
    clock: Clock,
) -> Services:
    """Every service on the store and the outbound clients; Slack's listeners registered and
    the web edges (`bot.web.routes.EDGES`) set."""
    naming = ValueNaming.of(settings.file.alert_values)
    renderer = Renderer(naming=naming)
    slack = SlackGateway(client, metrics)
    timings = settings.timings
    prometheus = prometheus_client_for(settings, out.session)
    hooks = HookSecrets(
        settings.github_webhook_secret,
        settings.github_org_secrets,
        settings.github_app_webhook_secret,
        settings.github_orgs,
    )
    sources = FleetSources(
        # Job events are recorded when GitHub's webhook is set up to send them.
        store=store if hooks.enabled else None,
        jobs=settings.file.jobs,
        runners=out.github_runners,
        prometheus=prometheus,
        pack=settings.file.queries,
    )
    diagnoser = Diagnoser(
        store,
        sources,
        renderer,
        metrics,
        on_enqueued=lambda: deliverer.wake(),
        clock=clock,
        claim_seconds=timings.diagnosis_claim,
    )
    deliverer = Deliverer(
        store,
        slack,
        renderer,
        metrics,
        on_parent_posted=diagnoser.schedule if settings.file.auto_diagnose else None,
        timings=timings,
        clock=clock,
    )
    service = IncidentService(
        store,
        metrics=metrics,
        default_channel=settings.channel or "",
        routes=settings.file.routes,
        on_enqueued=deliverer.wake,
        clock=clock,
    )
    bolt = AsyncApp(
        # Named, bolt need not read the source of every caller's frame to name it.
        name="queuebot",
        client=client,
        signing_secret=(
            settings.slack_signing_secret.get_secret_value()
            if settings.slack_signing_secret
            else None
        ),
        request_verification_enabled=settings.slack_signing_secret is not None,
    )
    grafana = grafana_client_for(settings, out.session)
    ledger = SilenceLedger(store, deliverer.wake, clock)
    permissions = Permissions(settings.file.silence, slack)
    silencer = Silencer(store, grafana, permissions, metrics, ledger, clock=clock)
    watch = SilenceWatcher(
        store,
        grafana,
        ledger,
        metrics,
        resolve_after=timedelta(seconds=RESOLVE_AFTER_CHECKS * settings.silence_check_seconds),
        clock=clock,
    )
    reader = StatusReader(store, sources, clock=clock)
    reporter = CapacityReporter(
        sources,
        settings.file.capacity_report,
        clock=clock,
        apart=(out.composer, settings.database),
    )
    report_writer = ReportWriter(
        store,
        slack,
        renderer,
        Pacer(timings.posts_per_second, clock=clock, store=store),
        poll=timings.report_poll,
        record=PassRecord("capacity report writer", metrics),
        clock=clock,
    )
    weekly = WeeklyReports(
        store,
        reporter,
        on_saved=report_writer.wake,
        clock=clock,
        record=PassRecord("capacity report schedule", metrics),
    )
    warnings = settings.file.early_warning if sources.store is not None else []
    if settings.file.early_warning and not warnings:
        log.warning("early_warning needs GitHub's job events (GITHUB_WEBHOOK_SECRET): no heads-ups")
    heads_ups = HeadsUpWriter(
        store,
        slack,
        renderer,
        Pacer(timings.posts_per_second, clock=clock, store=store),
        PassRecord("heads-up writer", metrics),
        poll=timings.heads_up_poll,
        clock=clock,
    )
    forecaster = EarlyWarningWatcher(
        store,
        warnings,
        settings.file.jobs,
        on_saved=heads_ups.wake,
        clock=clock,
        record=PassRecord("early warning", metrics),
    )
    parts = Services(
        bolt=bolt,
        deliverer=deliverer,
        diagnoser=diagnoser,
        watch=watch,
        forecaster=forecaster if warnings else None,
        heads_ups=heads_ups,
        weekly=weekly if settings.file.capacity_report.posts else None,
        report_writer=report_writer,
        retention=PassRecord("retention", metrics),
    )
    records = [w.record for w in (watch, report_writer, heads_ups, forecaster, weekly)]
    records.append(parts.retention)
    if sources.store is not None:
        parts.reconciler, parts.first_backfill = job_history(settings, store, out, metrics, clock)
        if parts.reconciler is not None:
            records.append(parts.reconciler.record)
    listeners.register(
        bolt,
        ActionHandlers(slack, renderer, diagnoser),
        SilenceHandlers(silencer, slack, renderer, clock),
        StatusHandlers(
            reader,
            slack,
            renderer,
            reports=ReportAnswers(reporter, slack, renderer),
            fleet_wide=Permissions(settings.file.queue_status.as_policy(), slack),
            orgs=settings.github_orgs,
        ),
    )
    slack_events = (
        SlackEvents(
            bolt,
            SignatureVerifier(settings.slack_signing_secret.get_secret_value()),
            store,
        )
        if settings.slack_signing_secret
        else None
    )
    app[EDGES] = Edges(
        store=store,
        webhook=WebhookHandler(service, auth, metrics, clock, value_keys=naming.annotated),
        github=GitHubWebhook(
            store,
            hooks,
            settings.file.jobs,
            metrics,
            clock=clock,
        ),
        health=Health(
            store,
            metrics,
            background=lambda: {name: not task.done() for name, task in parts.tasks.items()},
            troubles=lambda: [
                problem for problem in [deliverer.problem, *(r.problem for r in records)] if problem
            ],
            max_outbox_age=settings.health_max_outbox_age,
            fleet=FleetExport(store, settings.file.jobs, out.github_runners, clock).families,
            clock=clock,
        ),
        slack_events=slack_events,
    )
    return parts


def job_history(
    settings: Settings, store: Store, out: Outbound, metrics: Metrics, clock: Clock
) -> tuple[Reconciler | None, FirstBackfill | None]:
    """What reads the job history from GitHub's REST API besides the webhook: reconciliation
    and the first start's backfill, each None when off or without REST access."""
    session, credentials = out.session, out.github_credentials
    if session is None or credentials is None:
        if settings.reconcile_seconds > 0:
            log.info(
                "reconciliation with GitHub is off: it needs REST access (GITHUB_TOKEN or a"
                " GitHub App) to GitHub's API"
            )
        return None, None
    reconciler = first = None
    if settings.reconcile_seconds > 0:
        # Reconciliation never waits for GitHub's rate limit: a pass that meets it ends.
        reader = github_reader_for(settings, session, max_wait=0.0, credentials=credentials)
        assert reader is not None
        reconciler = Reconciler(
            reader,
            store,
            settings.file.jobs,
            share=settings.reconcile_budget_share,
            clock=clock,
            record=PassRecord("reconciliation", metrics),
            on_corrected=lambda kind, jobs: metrics.add(
                "queuebot_jobs_corrected_total", jobs, correction=kind.value
            ),
        )
    if settings.backfill_on_start_days > 0 and settings.github_orgs:
        reader = github_reader_for(settings, session, credentials=credentials)
        assert reader is not None
        walk = Backfill(
            reader,
            store,
            settings.file.jobs,
            settings.github_orgs,
            days=settings.backfill_on_start_days,
            clock=clock,
        )
        first = FirstBackfill(walk, store, clock=clock)
    return reconciler, first


def start_tasks(
    store: Store, parts: Services, settings: Settings, metrics: Metrics, clock: Clock
) -> dict[str, asyncio.Task[None]]:
    """The background work, started: by what /healthz calls each when it is not running."""
    timings = settings.timings
    tasks = {
        "outbox worker": asyncio.create_task(parts.deliverer.run(), name="outbox"),
        "silence watcher": asyncio.create_task(
            parts.watch.run(timings.silence_check), name="silence-watch"
        ),
    }
    if parts.forecaster is not None:
        tasks["early warning"] = asyncio.create_task(
            parts.forecaster.run(timings.forecast_check), name="early-warning"
        )
        tasks["heads-up writer"] = asyncio.create_task(parts.heads_ups.run(), name="heads-ups")
    if parts.weekly is not None:
        tasks["capacity report schedule"] = asyncio.create_task(
            parts.weekly.run(timings.schedule_check), name="capacity-reports"
        )
        tasks["capacity report writer"] = asyncio.create_task(
            parts.report_writer.run(), name="capacity-report-writer"
        )
    if parts.first_backfill is not None:
        parts.chores.append(asyncio.create_task(parts.first_backfill.run(), name="first-backfill"))
    if parts.reconciler is not None:
        tasks["reconciliation"] = asyncio.create_task(
            parts.reconciler.run(settings.reconcile_seconds), name="reconcile"
        )
    tasks["diagnostics resumer"] = asyncio.create_task(
        parts.diagnoser.watch(timings.diagnosis_claim), name="diagnostics-resume"
    )
    tasks["retention"] = asyncio.create_task(
        keep_pruning(
            store,
            settings.retention_days * 86400,
            jobs_retention_seconds=settings.file.jobs.retention_days * 86400,
            on_pruned=functools.partial(count_pruned, metrics, parts.retention),
            on_failed=parts.retention.failed,
            # Jobs and incidents carry the times of the world the bot observes (the clock's
            # moment); what the store stamps, the machine's.
            clock=clock,
            every=timings.prune_interval,
        ),
        name="retention",
    )
    return tasks
