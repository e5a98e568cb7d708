"""The composition root: `create_app` builds the application and owns the lifetime of every
part (what the parts are made of is `bot.assembly`'s).

One aiohttp application serves Slack (`/slack/events`, through Bolt), the Grafana webhook,
`/healthz` and `/metrics` (routes in `bot.web`). The store, the clients, the services and the
background tasks (the outbox worker, the silence watcher) are created in `cleanup_ctx`, one
context per concern, and closed or cancelled on shutdown; nothing lives at module level. The
outside clients are built by `bot.clients` and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.assembly import Outbound, Services, build_services, start_tasks
from bot.capacity.composing import worker_process
from bot.clients import github_credentials_for, github_runners_client_for, slack_client_for
from bot.config import ConfigError, Settings, check_url_credentials, check_webhook_auth
from bot.config.github_app import has_github_rest
from bot.domain.clock import SYSTEM, Clock
from bot.fleet.sources.runner_supply import RunnersSource
from bot.store import Store, open_store
from bot.telemetry.metrics import Metrics
from bot.web import paths
from bot.web.bodies import READ_TIMEOUT
from bot.web.grafana_webhook import MAX_BODY_BYTES, WebhookAuth
from bot.web.routes import add_routes

log = logging.getLogger(__name__)


#: The runner supply's client, for the services that read it (None when GitHub's runners list
#: is not configured).
GITHUB_RUNNERS: web.AppKey[RunnersSource | None] = web.AppKey("github_runners")
STORE: web.AppKey[Store] = web.AppKey("store")
OUTBOUND: web.AppKey[Outbound] = web.AppKey("outbound")
SERVICES: web.AppKey[Services] = web.AppKey("services")


def create_app(
    settings: Settings,
    *,
    slack_client: AsyncWebClient | None = None,
    clock: Clock = SYSTEM,
) -> web.Application:
    """Build the bot's aiohttp application from `settings`.

    `slack_client` replaces the client built from SLACK_BOT_TOKEN and SLACK_API_URL. What it
    runs on starts in its lifetime, one cleanup context per concern, in order: the store, the
    outbound clients, the services, the background tasks, Socket Mode. Each is closed in the
    reverse order on shutdown; a start that fails closes what had started, so nothing is left
    running and the store is closed.
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
    if not auth.enabled:
        log.warning(
            "QUEUEBOT_WEBHOOK_AUTH=none: anyone who can reach %s can post alerts",
            paths.GRAFANA_WEBHOOK_PATH,
        )

    async def store(app: web.Application) -> AsyncIterator[None]:
        app[STORE] = await open_store(settings.database, clock)
        try:
            yield
        finally:
            await app[STORE].close()

    async def outbound(app: web.Application) -> AsyncIterator[None]:
        # GitHub's REST API (a token or an App): the runners list, reconciliation, backfill.
        uses_github = has_github_rest(settings)
        session = (
            aiohttp.ClientSession()
            if settings.grafana_url or settings.prometheus_url or uses_github
            else None
        )
        # Built for the diagnostics and /queue-status readers of the runner supply.
        credentials = github_credentials_for(settings, session)
        runners = github_runners_client_for(settings, session, credentials)
        app[GITHUB_RUNNERS] = runners
        app[OUTBOUND] = Outbound(session, runners, worker_process(), credentials)
        try:
            yield
        finally:
            try:
                if runners is not None:
                    await runners.close()
            finally:
                if session is not None:
                    await session.close()
                composer = app[OUTBOUND].composer
                await asyncio.to_thread(composer.shutdown, wait=True, cancel_futures=True)

    async def services(app: web.Application) -> AsyncIterator[None]:
        app[SERVICES] = build_services(
            app, app[STORE], app[OUTBOUND], settings, client, metrics, auth, clock
        )
        try:
            yield
        finally:
            await app[SERVICES].diagnoser.close()

    async def background(app: web.Application) -> AsyncIterator[None]:
        parts = app[SERVICES]
        parts.tasks.update(start_tasks(app[STORE], parts, settings, metrics, clock))
        try:
            yield
        finally:
            for task in [*parts.tasks.values(), *parts.chores]:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def socket_mode(app: web.Application) -> AsyncIterator[None]:
        if settings.slack_app_token is None:
            yield
            return
        socket = AsyncSocketModeHandler(
            app[SERVICES].bolt, settings.slack_app_token.get_secret_value()
        )
        try:
            # A token Slack refuses fails the start, said plainly: the client would retry it
            # forever. (Slack unreachable is left to the client, which retries.)
            try:
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    socket.client.wss_uri = await socket.client.issue_new_wss_url()
            except SlackApiError as exc:
                refused = exc.response.get("error")
                raise ConfigError(
                    f"Slack refused SLACK_APP_TOKEN ({refused}): Socket Mode cannot start"
                ) from exc
            await socket.connect_async()  # type: ignore[no-untyped-call]
            log.info("Slack traffic uses Socket Mode")
            yield
        finally:
            await socket.close_async()  # type: ignore[no-untyped-call]

    concerns = (store, outbound, services, background, socket_mode)

    async def lifetime(app: web.Application) -> AsyncIterator[None]:
        # aiohttp cleans up the contexts of a start that succeeded; `web.run_app` runs no
        # cleanup at all when the start fails. The stack closes what had started, in reverse.
        async with contextlib.AsyncExitStack() as started:
            for concern in concerns:
                await started.enter_async_context(contextlib.asynccontextmanager(concern)(app))
            yield

    app.cleanup_ctx.append(lifetime)
    # Without a signing secret (Socket Mode only) nothing could verify an HTTP request.
    add_routes(app, slack_over_http=settings.slack_signing_secret is not None)
    return app
