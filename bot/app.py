"""The composition root: `create_app` builds every part and owns its lifetime.

One aiohttp application serves Slack (`/slack/events`, through Bolt), the Grafana webhook,
`/healthz` and `/metrics` (routes in `bot.web`). The store, the clients, the services and the
background tasks (the outbox worker, the silence watcher) are created in `cleanup_ctx` and
closed or cancelled on shutdown; nothing lives at module level. The outside clients are built
here and nowhere else (`*_client_for`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import AsyncIterator
from datetime import timedelta

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot import listeners
from bot.capacity.composing import worker_process
from bot.capacity.report import CapacityReporter
from bot.capacity.schedule import WeeklyReports
from bot.config import ConfigError, Settings, check_url_credentials, check_webhook_auth
from bot.delivery.heads_up import HeadsUpWriter
from bot.delivery.pacing import Pacer
from bot.delivery.report import ReportWriter
from bot.delivery.worker import Deliverer
from bot.diagnostics.fleet import FleetSources
from bot.diagnostics.service import DIAGNOSIS_CLAIM_SECONDS, Diagnoser
from bot.diagnostics.sources.github_access import RunnerScope, ScopeKind
from bot.diagnostics.sources.github_runners import GitHubRunnersClient
from bot.diagnostics.sources.prometheus import PrometheusClient
from bot.domain.clock import Clock, utcnow
from bot.forecast.watcher import EarlyWarningWatcher
from bot.incidents.service import IncidentService
from bot.listeners.actions import ActionHandlers
from bot.listeners.capacity import ReportAnswers
from bot.listeners.silence import SilenceHandlers
from bot.listeners.status import StatusHandlers
from bot.render.renderer import Renderer
from bot.silencing.grafana import GrafanaClient
from bot.silencing.ledger import SilenceLedger
from bot.silencing.permissions import Permissions
from bot.silencing.service import Silencer
from bot.silencing.watcher import SilenceWatcher
from bot.slack.gateway import SlackGateway
from bot.status.reader import StatusReader
from bot.store import Pruned, open_store
from bot.store.retention import keep_pruning
from bot.telemetry.metrics import Metrics
from bot.telemetry.passes import PassRecord
from bot.web import paths
from bot.web.bodies import READ_TIMEOUT
from bot.web.github_webhook import GitHubWebhook
from bot.web.grafana_webhook import MAX_BODY_BYTES, WebhookAuth, WebhookHandler
from bot.web.health import Health
from bot.web.routes import EDGES, Edges, add_routes
from bot.web.slack_events import SlackEvents

log = logging.getLogger(__name__)


#: A silenced alert absent from Grafana for this many checks in a row has resolved (90 s at the
#: default 30 s: longer than a rule's usual 1-minute evaluation, so a Grafana restart that
#: empties its alert list for a moment resolves nothing).
RESOLVE_AFTER_CHECKS = 3
SLACK_TIMEOUT_SECONDS = 15
#: The runner supply's client, for the services that read it (None when GitHub's runners list
#: is not configured).
GITHUB_RUNNERS: web.AppKey[GitHubRunnersClient | None] = web.AppKey("github_runners")


def slack_client_for(settings: Settings) -> AsyncWebClient:
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    # A call slower than this is Slack in trouble; it also bounds how long a delivery holds
    # its outbox lease (delivery.LEASE_SECONDS), so a crashed bot's work is taken over soon.
    return AsyncWebClient(
        token=token, base_url=str(settings.slack_api_url), timeout=SLACK_TIMEOUT_SECONDS
    )


def grafana_client_for(
    settings: Settings, session: aiohttp.ClientSession | None
) -> GrafanaClient | None:
    """Grafana's client, when GRAFANA_URL and GRAFANA_TOKEN are both set (else silencing is
    off, and the Silence… button says how to turn it on)."""
    if session is None or settings.grafana_url is None or settings.grafana_token is None:
        return None
    return GrafanaClient(
        session, str(settings.grafana_url), settings.grafana_token.get_secret_value()
    )


def prometheus_client_for(
    settings: Settings, session: aiohttp.ClientSession | None
) -> PrometheusClient | None:
    """Prometheus directly (PROMETHEUS_URL), or through Grafana's datasource proxy."""
    if session is None:
        return None
    if settings.prometheus_url is not None:
        return PrometheusClient(session, str(settings.prometheus_url))
    if (
        settings.grafana_prometheus_datasource_uid
        and settings.grafana_url is not None
        and settings.grafana_token is not None
    ):
        return PrometheusClient.through_grafana(
            session,
            str(settings.grafana_url),
            settings.grafana_prometheus_datasource_uid,
            settings.grafana_token.get_secret_value(),
        )
    return None


def github_runners_client_for(
    settings: Settings, session: aiohttp.ClientSession | None
) -> GitHubRunnersClient | None:
    """GitHub's runners list, when GITHUB_TOKEN and one of GITHUB_ORG, GITHUB_REPOSITORY or
    GITHUB_ENTERPRISE are set (else the runner supply is not measured)."""
    scope = settings.github_scope()
    if session is None or scope is None or settings.github_token is None:
        return None
    kind, name = scope
    return GitHubRunnersClient(
        session,
        str(settings.github_api_url),
        settings.github_token.get_secret_value(),
        RunnerScope(ScopeKind(kind), name),
    )


def count_pruned(metrics: Metrics, record: PassRecord, pruned: Pruned) -> None:
    """Retention's work on /metrics, a counter per kind of row."""
    record.succeeded()
    metrics.inc("queuebot_retention_passes_total")
    for what, count in dataclasses.asdict(pruned).items():
        metrics.add("queuebot_retention_pruned_total", count, what=what)


def create_app(
    settings: Settings,
    *,
    slack_client: AsyncWebClient | None = None,
    clock: Clock = utcnow,
) -> web.Application:
    """Build the bot's aiohttp application from `settings`.

    `slack_client` replaces the client built from SLACK_BOT_TOKEN and SLACK_API_URL.
    """
    if settings.slack_signing_secret is None and settings.slack_app_token is None:
        raise ConfigError("SLACK_SIGNING_SECRET is not set: Slack requests cannot be verified")
    if not settings.channel:
        raise ConfigError("QUEUEBOT_CHANNEL is not set: alerts have nowhere to go")
    # keepalive_timeout closes a connection that has not sent a whole request's headers within
    # it, from when it opened or from the last answer: slow headers (slowloris) and idle
    # connections alike. The body has its own limit (bot.web.bodies).
    app = web.Application(
        client_max_size=MAX_BODY_BYTES,
        handler_args={"keepalive_timeout": settings.http_read_timeout},
    )
    app[READ_TIMEOUT] = settings.http_read_timeout
    metrics = Metrics()
    client = slack_client or slack_client_for(settings)
    auth = WebhookAuth(
        token=settings.webhook_token,
        hmac_secret=settings.webhook_hmac_secret,
        timestamp_header=settings.webhook_hmac_timestamp_header,
    )
    check_webhook_auth(settings)
    check_url_credentials(settings)
    github_scope = settings.github_scope()
    if not auth.enabled:
        log.warning(
            "QUEUEBOT_WEBHOOK_AUTH=none: anyone who can reach %s can post alerts",
            paths.GRAFANA_WEBHOOK_PATH,
        )

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        store = await open_store(settings.database)
        renderer = Renderer()
        slack = SlackGateway(client, metrics)
        uses_github = github_scope is not None and settings.github_token is not None
        outbound = (
            aiohttp.ClientSession()
            if settings.grafana_url or settings.prometheus_url or uses_github
            else None
        )
        prometheus = prometheus_client_for(settings, outbound)
        # Built for the diagnostics and /queue-status readers of the runner supply.
        github_runners = github_runners_client_for(settings, outbound)
        app[GITHUB_RUNNERS] = github_runners
        sources = FleetSources(
            # Job events are recorded when GitHub's webhook is set up to send them.
            store=store if settings.github_webhook_secret is not None else None,
            jobs=settings.file.jobs,
            runners=github_runners,
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
        )
        deliverer = Deliverer(
            store,
            slack,
            renderer,
            metrics,
            on_parent_posted=diagnoser.schedule if settings.file.auto_diagnose else None,
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
            client=client,
            signing_secret=(
                settings.slack_signing_secret.get_secret_value()
                if settings.slack_signing_secret
                else None
            ),
            request_verification_enabled=settings.slack_signing_secret is not None,
        )
        grafana = grafana_client_for(settings, outbound)
        ledger = SilenceLedger(store, deliverer.wake)
        permissions = Permissions(settings.file.silence, slack)
        silencer = Silencer(store, grafana, permissions, metrics, ledger, clock=clock)
        interval = settings.silence_check_seconds
        watch = SilenceWatcher(
            store,
            grafana,
            ledger,
            metrics,
            resolve_after=timedelta(seconds=RESOLVE_AFTER_CHECKS * interval),
            clock=clock,
        )
        reader = StatusReader(store, sources, clock=clock)
        composer = worker_process()  # reports are composed there, not beside the loop
        reporter = CapacityReporter(
            sources, settings.file.capacity_report, clock=clock, apart=(composer, settings.database)
        )
        report_writer = ReportWriter(
            store,
            slack,
            renderer,
            Pacer(store=store),
            record=PassRecord("capacity report writer", metrics),
        )
        weekly = WeeklyReports(store, reporter, on_saved=report_writer.wake, clock=clock)
        warnings = settings.file.early_warning if sources.store is not None else []
        if settings.file.early_warning and not warnings:
            log.warning(
                "early_warning needs GitHub's job events (GITHUB_WEBHOOK_SECRET): no heads-ups"
            )
        heads_ups = HeadsUpWriter(
            store, slack, renderer, Pacer(store=store), PassRecord("heads-up writer", metrics)
        )
        forecaster = EarlyWarningWatcher(
            store,
            warnings,
            settings.file.jobs,
            on_saved=heads_ups.wake,
            clock=clock,
            record=PassRecord("early warning", metrics),
        )
        retention = PassRecord("retention", metrics)
        records = [w.record for w in (watch, report_writer, heads_ups, forecaster)] + [retention]
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
            webhook=WebhookHandler(service, auth, metrics),
            github=GitHubWebhook(
                store,
                settings.github_webhook_secret,
                settings.file.jobs,
                metrics,
                clock=lambda: clock().timestamp(),
            ),
            health=Health(
                store,
                metrics,
                background=lambda: {name: not task.done() for name, task in tasks.items()},
                troubles=lambda: [
                    problem
                    for problem in [deliverer.problem, *(r.problem for r in records)]
                    if problem
                ],
                max_outbox_age=settings.health_max_outbox_age,
            ),
            slack_events=slack_events,
        )
        # By what /healthz calls them when one is not running.
        tasks = {
            "outbox worker": asyncio.create_task(deliverer.run(), name="outbox"),
            "silence watcher": asyncio.create_task(watch.run(interval), name="silence-watch"),
            **(
                {
                    "early warning": asyncio.create_task(
                        forecaster.run(settings.forecast_check_seconds), name="early-warning"
                    ),
                    "heads-up writer": asyncio.create_task(heads_ups.run(), name="heads-ups"),
                }
                if warnings
                else {}
            ),
            **(
                {
                    "capacity report schedule": asyncio.create_task(
                        weekly.run(), name="capacity-reports"
                    ),
                    "capacity report writer": asyncio.create_task(
                        report_writer.run(), name="capacity-report-writer"
                    ),
                }
                if settings.file.capacity_report.posts
                else {}
            ),
            "diagnostics resumer": asyncio.create_task(
                diagnoser.watch(DIAGNOSIS_CLAIM_SECONDS), name="diagnostics-resume"
            ),
            "retention": asyncio.create_task(
                keep_pruning(
                    store,
                    settings.retention_days * 86400,
                    jobs_retention_seconds=settings.file.jobs.retention_days * 86400,
                    on_pruned=functools.partial(count_pruned, metrics, retention),
                    on_failed=retention.failed,
                    # Jobs and incidents carry the times of the world the bot observes.
                    clock=lambda: clock().timestamp(),
                ),
                name="retention",
            ),
        }
        socket = None
        if settings.slack_app_token is not None:
            socket = AsyncSocketModeHandler(bolt, settings.slack_app_token.get_secret_value())
            await socket.connect_async()  # type: ignore[no-untyped-call]
            log.info("Slack traffic uses Socket Mode")
        try:
            yield
        finally:
            try:
                if socket is not None:
                    await socket.close_async()  # type: ignore[no-untyped-call]
                for task in tasks.values():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                await diagnoser.close()
                if github_runners is not None:
                    await github_runners.close()
            finally:
                if outbound is not None:
                    await outbound.close()
                await asyncio.to_thread(composer.shutdown, wait=True, cancel_futures=True)
                await store.close()

    app.cleanup_ctx.append(lifetime)
    # Without a signing secret (Socket Mode only) nothing could verify an HTTP request.
    add_routes(app, slack_over_http=settings.slack_signing_secret is not None)
    return app
