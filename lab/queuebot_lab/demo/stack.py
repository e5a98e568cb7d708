"""`Demo`: everything `queuebot demo` runs, started and stopped as one (the tests use it too).

The local Slack-compatible workspace, a local Grafana silence API (unless `GRAFANA_URL` and
`GRAFANA_TOKEN` name a real one), a simulated fleet as GitHub tells of it (queuebot_lab.demo.fleet:
job events at the bot's webhook, signed, and a GitHub REST stand-in serving its runners list), and
the bot itself, the same application `queuebot serve` runs; with `PROMETHEUS_URL` set, the bot
reads that Prometheus beside the job events. `GITHUB_*` settings in the environment are not
used: the demo's GitHub is always its own. Plus the controls on the workspace's page that fire,
resolve and refire alerts. The controls are the workspace's own `/ui/control/...` endpoints, so
they answer only JSON from the page's own origin under the address the workspace listens on
(lab/queuebot_lab/sandbox/slack/guard.py): another web page cannot fire.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
from aiohttp import web

from bot.app import create_app
from bot.config import TIMING_VARIABLES, load_settings
from bot.domain.clock import Clock
from bot.domain.notifications import parse_webhook
from bot.fleet.sources.job_events import queued_now
from bot.fleet.sources.job_history import load_history
from bot.fleet.sources.jobs_config import JobsConfig
from bot.store import Store, open_store
from bot.web import paths
from queuebot_lab.demo.alerts import REFERENCE_RESOLVED, reference_alert, surge_alert
from queuebot_lab.demo.feed import Feed
from queuebot_lab.demo.fleet import DemoFleet
from queuebot_lab.sandbox.github import GitHubSandbox
from queuebot_lab.sandbox.grafana import PREFIX as GRAFANA_API
from queuebot_lab.sandbox.grafana import GrafanaSandbox
from queuebot_lab.sandbox.serving import serve
from queuebot_lab.sandbox.slack import SlackSandbox
from queuebot_lab.sandbox.slack.web import UiControl

DEMO_CHANNEL = "ci-infra-alerts"


class Demo:
    """Everything `queuebot demo` runs, started and stopped as one (the tests use it too)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 3000,
        slack_port: int = 0,
        environ: Mapping[str, str] | None = None,
        scratch: Path,
        at: datetime | None = None,
    ) -> None:
        self.host, self.port, self.slack_port = host, port, slack_port
        #: The demo's moment: `at` when it starts (now unless given), moving on as the wall
        #: clock does. The fleet, its deliveries, the alert and the bot's clock all keep it;
        #: the local Slack workspace, which only carries messages, keeps the wall clock's.
        self._at = at
        self._offset = timedelta(0)
        self.environ = dict(os.environ if environ is None else environ)
        self.scratch = scratch
        bot_token = "xoxb-demo-" + secrets.token_hex(8)
        signing_secret = secrets.token_hex(16)
        self._bot_token, self._signing_secret = bot_token, signing_secret
        #: What the demo's Grafana (the controls, the story, a curl) sends the bot's webhook.
        self.webhook_token = secrets.token_hex(16)
        self.sandbox = SlackSandbox(
            bot_token=bot_token, signing_secret=signing_secret, channel_name=DEMO_CHANNEL
        )
        self.grafana: GrafanaSandbox | None = None
        #: GitHub's webhook secret and token, as the demo's GitHub and the bot share them.
        self.hook_secret = secrets.token_hex(20)
        self.github = GitHubSandbox("ghs_" + secrets.token_hex(18))
        self.fleet: DemoFleet | None = None
        self.feed: Feed | None = None
        #: Jobs of the history loaded into the store before the bot started.
        self.loaded = 0
        #: Deliveries sent while starting (the last `REPLAYED` minutes and the start itself).
        self.replayed = 0
        #: A real Prometheus the bot reads beside the job events (PROMETHEUS_URL), or "".
        self.prometheus_url = ""
        self.bot_url = ""
        self._jobs = JobsConfig()
        self._store: Store | None = None
        self._runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        self._live: asyncio.Task[None] | None = None

    def now(self) -> datetime:
        """The demo's clock."""
        return datetime.now(UTC) + self._offset

    @property
    def webhook_url(self) -> str:
        return f"{self.bot_url}{paths.GRAFANA_WEBHOOK_PATH}"

    async def start(self) -> None:
        """Start the workspace, the stand-ins, the fleet and the bot; raises OSError if `port`
        is taken. Returns once the fleet's deliveries due so far have reached the bot.

        The bot and the workspace (its page, the controls, the Slack API) listen on `host`;
        the stand-ins for Grafana and GitHub, which only the bot calls, on loopback."""
        if self._at is not None:
            self._offset = self._at.astimezone(UTC) - datetime.now(UTC)
        await self.sandbox.start(host=self.host, port=self.slack_port)
        env = self.environ
        grafana_url, grafana_token = env.get("GRAFANA_URL"), env.get("GRAFANA_TOKEN")
        if not (grafana_url and grafana_token):
            # Alerts the demo plays stay firing until resolved (Alertmanager would let a silent
            # one lapse after resolve_timeout and the bot would take it as resolved).
            self.grafana = GrafanaSandbox(
                token=secrets.token_hex(16), resolve_timeout=timedelta(days=1), clock=self.now
            )
            await self.grafana.start()
            grafana_url, grafana_token = self.grafana.url, self.grafana.token or ""
        self.prometheus_url = env.get("PROMETHEUS_URL", "")
        await self.github.start()
        config = self.scratch / "queuebot.yml"
        # The demo shows what the Run diagnostics button does, so it is not run by itself.
        config.write_text("auto_diagnose: false\n")
        database = self.scratch / "queuebot.db"
        settings = load_settings(
            {
                "SLACK_BOT_TOKEN": self._bot_token,
                "SLACK_SIGNING_SECRET": self._signing_secret,
                "SLACK_API_URL": self.sandbox.api_url,
                "QUEUEBOT_CHANNEL": f"#{DEMO_CHANNEL}",
                "QUEUEBOT_DATABASE": str(database),
                "QUEUEBOT_CONFIG": str(config),
                "GRAFANA_URL": grafana_url,
                "GRAFANA_TOKEN": grafana_token,
                "GITHUB_WEBHOOK_SECRET": self.hook_secret,
                "GITHUB_TOKEN": self.github.token,
                "GITHUB_ORG": self.github.org,
                "GITHUB_API_URL": self.github.url,
                "QUEUEBOT_SILENCE_CHECK_SECONDS": "5",
                "QUEUEBOT_WEBHOOK_TOKEN": self.webhook_token,
            }
            | ({"PROMETHEUS_URL": self.prometheus_url} if self.prometheus_url else {})
            # Leases, pacing and pollers as the environment sets them (docs/settings.md, "Timings").
            | {
                variable: env[variable] for variable in TIMING_VARIABLES.values() if variable in env
            },
            for_serve=True,
        )
        self._jobs = settings.file.jobs
        self.fleet = fleet = await asyncio.to_thread(DemoFleet.simulate, self.now())
        # Kept open beside the bot's: the surge control reads the queue from it.
        self._store = await open_store(str(database))
        # Loaded once, so its deliveries need not be recognised again.
        self.loaded = await load_history(
            self._store,
            fleet.history(self._jobs.queued_after_seconds),
            self._jobs,
            remember_until=0.0,
        )
        self._runner, self.bot_url = await serve(
            create_app(settings, clock=Clock.at(self.now)), self.host, self.port, access_log=False
        )
        self.sandbox.request_url = f"{self.bot_url}{paths.SLACK_EVENTS_PATH}"
        self._http = aiohttp.ClientSession()
        self.feed = Feed(
            fleet,
            url=f"{self.bot_url}{paths.GITHUB_WEBHOOK_PATH}",
            secret=self.hook_secret,
            http=self._http,
            github=self.github,
            clock=lambda: self.now().timestamp(),
        )
        self.replayed = await self.feed.catch_up()
        self._live = asyncio.create_task(self.feed.run(), name="demo-github-deliveries")
        self._add_controls()

    async def stop(self) -> None:
        if self._live is not None:
            self._live.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._live
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._store is not None:
            await self._store.close()
        await self.sandbox.stop()
        if self.grafana is not None:
            await self.grafana.stop()
        await self.github.stop()

    # -- alerts ------------------------------------------------------------------------------

    async def fire(self, body: bytes) -> int:
        """Post a webhook body to the bot as Grafana would; the HTTP status it answered."""
        assert self._http is not None
        headers = {
            "Content-Type": "application/json",
            "Authorization": f"Bearer {self.webhook_token}",
        }
        async with self._http.post(self.webhook_url, data=body, headers=headers) as answer:
            return answer.status

    async def play_reference(self) -> int:
        """The reference alert, also put into the local Grafana so silences match it."""
        if self.grafana is not None:
            await self._grafana_knows(reference_alert())
        return await self.fire(reference_alert())

    async def _grafana_knows(self, body: bytes) -> None:
        """Put an alert into the local Grafana as Grafana's own Alertmanager holds it (with
        the rule UID label the webhook leaves out), so silences match it."""
        assert self.grafana is not None and self._http is not None
        lead = parse_webhook(body).lead
        labels = {"__alert_rule_uid__": lead.rule_uid, **lead.labels}
        async with self._http.post(
            f"{self.grafana.url}{GRAFANA_API}/alerts",
            json=[{"labels": labels, "annotations": lead.annotations}],
            headers={"Authorization": f"Bearer {self.grafana.token}"},
        ) as answer:
            answer.raise_for_status()

    def surge_type(self) -> str:
        """The runner type the simulated fleet surges on (the busiest, before it is simulated)."""
        return self.fleet.surge_type() if self.fleet is not None else "linux-2xlarge"

    async def fire_surge(self) -> str:
        name = self.surge_type()
        queued, wait = await self._fleet_now(name)
        body = surge_alert(name, queued, wait / 60, self.now())
        if self.grafana is not None:
            await self._grafana_knows(body)
        status = await self.fire(body)
        return f"Fired a surge alert on {name} (webhook answered {status})"

    async def resolve_reference(self) -> str:
        status = await self.fire(reference_alert(REFERENCE_RESOLVED))
        return f"Resolved the reference alert (webhook answered {status})"

    async def refire_reference(self) -> str:
        status = await self.play_reference()
        return f"Fired the reference alert (webhook answered {status})"

    async def _fleet_now(self, name: str) -> tuple[float, float]:
        """Queued jobs and longest wait (seconds) of `name` now, from the job events the bot
        holds: the alert rule's two numbers."""
        assert self._store is not None
        now = self.now().timestamp()
        queued = (await queued_now(self._store, self._jobs, now)).get(name, [])
        return float(len(queued)), (now - queued[0].created_at) if queued else 0.0

    def _add_controls(self) -> None:
        surge = self.surge_type()
        self.sandbox.ui.controls.update(
            {
                "surge": UiControl(
                    f"Fire a surge alert on {surge}",
                    self.fire_surge,
                    "Grafana's queueing rule, narrowed to the runner type the fleet surges on",
                ),
                "resolve": UiControl(
                    "Resolve the reference alert",
                    self.resolve_reference,
                    "Grafana's resolved notification for the reference alert",
                ),
                "reference": UiControl(
                    "Fire the reference alert",
                    self.refire_reference,
                    "P2, pytorch-dev-infra, max queue time 114 min, max queue size 14",
                ),
            }
        )
