"""The `queuebot` command line: serve, demo, render, diagnose, simulate, check."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from aiohttp import web
from pydantic import ValidationError

from bot import __version__
from bot.cli.backup import add_commands as add_backup_commands
from bot.config import ConfigError, Settings, load_file_config, load_settings
from bot.domain.incidents import Incident, IncidentStatus
from bot.domain.notifications import parse_webhook
from bot.render.renderer import Renderer
from bot.render.values import DEFAULT_NAMING, ValueNaming
from bot.store import StoreError
from bot.telemetry.logs import setup_logging
from bot.telemetry.redaction import Redactor, known_secrets

log = logging.getLogger("bot")

#: On SIGTERM or SIGINT `serve` closes its listening socket at once, then gives the requests
#: already being answered this long to finish (Slack gives up on an answer after 3 s anyway);
#: aiohttp then cancels the rest and waits as long again for them (by default it waits 60 s
#: twice). With the store and clients closed after, the bot exits inside the 10 s that
#: `docker stop` and `podman stop` wait before SIGKILL.
STOP_GRACE_SECONDS = 3.0


def _setup_logging(verbose: bool, settings: Settings) -> None:
    # -v is the quick way to DEBUG, whatever QUEUEBOT_LOG_LEVEL says.
    level = "DEBUG" if verbose else settings.log_level
    setup_logging(level, settings.log_format, known_secrets(settings))


def cmd_serve(args: argparse.Namespace) -> int:
    from bot.app import create_app
    from bot.fleet.chart import load_matplotlib

    settings = load_settings(for_serve=True)
    _setup_logging(args.verbose, settings)
    # Held up as little as possible by a group of thousands of alerts (bench/loop_stall.py):
    # - it is parsed in a worker thread, which gives the event loop's thread the interpreter
    #   back within a millisecond instead of Python's default five;
    # - what was loaded to start (libraries, schemas, templates) lives as long as the process,
    #   so it is kept out of the garbage collector's passes, and full passes (which walk every
    #   object, thousands of alerts included, holding everything else up) are made rarer.
    sys.setswitchinterval(0.001)
    load_matplotlib()
    gc.freeze()
    gc.set_threshold(10_000, 20, 100)
    app = create_app(settings)
    log.info("queuebot %s listening on %s:%s", __version__, settings.host, settings.port)
    web.run_app(
        app,
        host=settings.host,
        port=settings.port,
        print=None,
        access_log=None,
        shutdown_timeout=STOP_GRACE_SECONDS,
    )
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    """Print the Block Kit JSON of the parent message for a webhook body."""
    path = Path(args.payload)
    try:
        raw = sys.stdin.buffer.read() if args.payload == "-" else path.read_bytes()
    except OSError as exc:
        print(f"queuebot: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        group = parse_webhook(raw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        print(f"queuebot: {path} is not a webhook body: {where}: {first['msg']}", file=sys.stderr)
        return 1
    status = IncidentStatus(group.status.value)
    incident = Incident(
        id=1,
        group_key=group.group_key,
        channel="render",
        status=status,
        group=group,
        started_at=group.started_at,
        resolved_at=group.ended_at if status is IncidentStatus.RESOLVED else None,
    )
    naming = DEFAULT_NAMING
    if config := os.environ.get("QUEUEBOT_CONFIG"):
        # The YAML file's `alert_values:` names the values as the bot would.
        try:
            naming = ValueNaming.of(load_file_config(Path(config)).alert_values)
        except ConfigError as exc:
            print(f"queuebot: {exc}", file=sys.stderr)
            return 1
    message = Renderer(naming=naming).incident(incident)
    print(
        json.dumps({"text": message.text, "blocks": message.blocks}, indent=2, ensure_ascii=False)
    )
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Validate the configuration and reach each configured service."""
    from bot.cli.check import run_check

    return asyncio.run(run_check(load_settings(for_serve=True)))


def cmd_backfill(args: argparse.Namespace) -> int:
    """Read the jobs GitHub still has into the store."""
    from bot.cli.backfill import run_backfill

    settings = load_settings()
    _setup_logging(args.verbose, settings)
    return asyncio.run(run_backfill(settings, days=args.days, max_requests=args.max_requests))


#: What `queuebot demo` and `queuebot simulate` say where the lab is not installed beside the
#: product (a production install has no local Slack workspace nor simulated fleet).
NO_LAB = (
    "queuebot: `queuebot {command}` comes with queuebot's lab, which is not installed here;"
    " from a checkout of queuebot: pip install . ./lab"
)


def _lab_missing(command: str, exc: ImportError) -> bool:
    """Whether `exc` is the lab itself missing (said on stderr), not an import inside it."""
    if exc.name is None or exc.name.split(".")[0] != "queuebot_lab":
        return False
    print(NO_LAB.format(command=command), file=sys.stderr)
    return True


def cmd_demo(args: argparse.Namespace) -> int:
    from bot.cli.diagnose import parse_time

    try:
        from queuebot_lab.demo import run_demo
    except ImportError as exc:
        if _lab_missing("demo", exc):
            return 2
        raise

    try:
        at = parse_time(args.at) if args.at else None
    except ValueError as exc:
        print(f"queuebot: {exc}", file=sys.stderr)
        return 2
    _setup_logging(args.verbose, load_settings())
    return asyncio.run(
        run_demo(
            host=args.host,
            port=args.port,
            slack_port=args.slack_port,
            story=not args.no_story,
            open_browser=args.open,
            at=at,
        )
    )


def cmd_diagnose(args: argparse.Namespace) -> int:
    """Print the diagnostics report for the configured metrics source."""
    from bot.cli.diagnose import parse_time, parse_window, run_diagnose

    try:
        at = parse_time(args.at) if args.at else None
        window = parse_window(args.window) if args.window else None
    except ValueError as exc:
        print(f"queuebot: {exc}", file=sys.stderr)
        return 2
    settings = load_settings()
    return asyncio.run(run_diagnose(settings, at=at, window=window, output=args.format))


def cmd_simulate(args: argparse.Namespace) -> int:
    """Write synthetic fleet history (OpenMetrics) for tests, demos and benchmarks."""
    from bot.cli.diagnose import parse_time

    try:
        from queuebot_lab.simulator.simulate import run_cli
    except ImportError as exc:
        if _lab_missing("simulate", exc):
            return 2
        raise

    try:
        end = parse_time(args.end) if args.end else None
    except ValueError as exc:
        print(f"queuebot: {exc}", file=sys.stderr)
        return 2
    return run_cli(
        scenario=args.scenario,
        hours=args.hours,
        runner_types=args.runner_types,
        seed=args.seed,
        out=Path(args.out),
        end=end,
        step_seconds=args.step,
        shape=args.shape,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="queuebot", description="Slack ChatOps for CI runner queueing alerts."
    )
    parser.add_argument("--version", action="version", version=f"queuebot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the bot (settings from the environment)")
    serve.add_argument("-v", "--verbose", action="store_true", help="log debug detail")
    serve.set_defaults(func=cmd_serve)

    demo = sub.add_parser("demo", help="run the bot against a local Slack workspace")
    demo.add_argument(
        "--host",
        default="127.0.0.1",
        help="where the bot and the workspace's page listen (default: this machine only;"
        " 0.0.0.0 lets other machines act in the page, with a warning)",
    )
    demo.add_argument("--port", type=int, default=3000, help="the bot's port (0: any free one)")
    demo.add_argument(
        "--slack-port",
        type=int,
        default=0,
        help="the local Slack workspace's port, where its web page is (0: any)",
    )
    demo.add_argument(
        "--no-story",
        action="store_true",
        help="only play the reference alert; alice does nothing by herself",
    )
    demo.add_argument("--open", action="store_true", help="open the workspace's page in a browser")
    demo.add_argument(
        "--at",
        help="play the demo as if it started at this moment (ISO 8601 or Unix seconds;"
        " default now): the fleet, its alert and the bot's clock",
    )
    demo.add_argument("-v", "--verbose", action="store_true", help="log debug detail")
    demo.set_defaults(func=cmd_demo)

    render = sub.add_parser("render", help="print the Block Kit JSON for a webhook body")
    render.add_argument("payload", help="a Grafana or Alertmanager webhook body (- for stdin)")
    render.set_defaults(func=cmd_render)

    diagnose = sub.add_parser("diagnose", help="print why jobs are queueing, from the metrics")
    diagnose.add_argument("--at", help="when (ISO 8601 or Unix seconds; default now)")
    diagnose.add_argument("--window", help="rate window, e.g. 10m (default from the query pack)")
    diagnose.add_argument("--format", choices=("text", "json"), default="text")
    diagnose.set_defaults(func=cmd_diagnose)

    simulate = sub.add_parser("simulate", help="write synthetic fleet history (OpenMetrics)")
    simulate.add_argument(
        "--scenario",
        required=True,
        choices=(
            "healthy",
            "surge",
            "capacity_cap",
            "slow_jobs",
            "scale_up_failure",
            "resource_starvation",
            "mix",
        ),
    )
    simulate.add_argument("--hours", type=float, default=48.0, help="history length")
    simulate.add_argument("--runner-types", type=int, default=8, help="how many runner types")
    simulate.add_argument("--seed", type=int, default=1)
    simulate.add_argument("--out", required=True, help="the OpenMetrics file to write")
    simulate.add_argument("--end", help="time of the last sample (default now)")
    simulate.add_argument("--step", type=int, default=60, help="seconds between samples")
    simulate.add_argument(
        "--shape",
        choices=("arc", "arc-lean"),
        default="arc",
        help="arc: actions-runner-controller's listener and controller metrics with every bucket,"
        " and cAdvisor; arc-lean: a lean scrape (assigned and running jobs, job counters,"
        " histograms' _sum/_count, a cluster label)",
    )
    simulate.set_defaults(func=cmd_simulate)

    check = sub.add_parser("check", help="validate the configuration and reach each service")
    check.set_defaults(func=cmd_check)
    backfill = sub.add_parser(
        "backfill", help="read the jobs GitHub still has into the store (GITHUB_TOKEN, GITHUB_ORG)"
    )
    backfill.add_argument(
        "--days", type=int, default=7, help="how many days back to read (default 7)"
    )
    backfill.add_argument(
        "--max-requests", type=int, default=None, help="stop after this many REST requests"
    )
    backfill.add_argument("-v", "--verbose", action="store_true", help="log debug detail")
    backfill.set_defaults(func=cmd_backfill)
    add_backup_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
    except ConfigError as exc:
        # A malformed URL setting is quoted back, and may hold user:password@ or ?token=.
        print(f"queuebot: configuration error: {Redactor(())(str(exc))}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"queuebot: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return code
