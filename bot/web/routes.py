"""The bot's HTTP routes, and the handlers behind them once the app has started.

Routes are added when the application is built; their handlers (which need the store and the
services) are made when it starts, in `create_app`'s lifetime, and found through `EDGES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

from bot.store import Store
from bot.web import paths
from bot.web.github_webhook import GitHubWebhook
from bot.web.grafana_webhook import WebhookHandler
from bot.web.health import Health
from bot.web.openapi import serve_openapi
from bot.web.slack_events import SlackEvents


@dataclass
class Edges:
    """What the routes (and tests) reach once the app has started."""

    store: Store
    webhook: WebhookHandler
    github: GitHubWebhook
    health: Health
    #: None in Socket Mode without a signing secret: nothing could verify an HTTP request.
    slack_events: SlackEvents | None


EDGES = web.AppKey("edges", Edges)


def add_routes(app: web.Application, *, slack_over_http: bool) -> None:
    if slack_over_http:
        app.router.add_post(paths.SLACK_EVENTS_PATH, _slack_events)
    app.router.add_post(paths.GRAFANA_WEBHOOK_PATH, _grafana_webhook)
    app.router.add_post(paths.GITHUB_WEBHOOK_PATH, _github_webhook)
    app.router.add_get(paths.HEALTHZ_PATH, _healthz)
    app.router.add_get(paths.METRICS_PATH, _metrics)
    app.router.add_get(paths.OPENAPI_PATH, serve_openapi)


async def _slack_events(request: web.Request) -> web.Response:
    handler = request.app[EDGES].slack_events
    if handler is None:
        raise web.HTTPNotFound()
    return await handler(request)


async def _grafana_webhook(request: web.Request) -> web.Response:
    return await request.app[EDGES].webhook(request)


async def _github_webhook(request: web.Request) -> web.Response:
    return await request.app[EDGES].github(request)


async def _healthz(request: web.Request) -> web.Response:
    return await request.app[EDGES].health.healthz(request)


async def _metrics(request: web.Request) -> web.Response:
    return await request.app[EDGES].health.metrics(request)
