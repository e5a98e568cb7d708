"""Command-line logging: the JSON lines, the redaction of secrets, and a whole `queuebot serve`
run, as a real process, whose every log line is JSON and holds no secret."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import signal
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.config import ConfigError, load_settings
from bot.domain.notifications import parse_webhook
from bot.slack.contract import ActionId, SilenceInput
from bot.telemetry.logs import QUIETED, JsonFormatter, RedactionFilter, setup_logging
from bot.telemetry.redaction import REDACTED, known_secrets
from bot.web import paths
from bot.web.grafana_webhook import SIGNATURE_HEADER
from queuebot_lab.sandbox.grafana import PREFIX as GRAFANA_API
from queuebot_lab.sandbox.grafana import GrafanaSandbox
from queuebot_lab.sandbox.slack import ONCALL_USER, SlackSandbox
from queuebot_lab.sandbox.slack.models import ViewState
from testkit.harness import watched
from testkit.payloads import encoded, reference
from testkit.servers import free_port

REPO = Path(__file__).parents[2]
RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
DOCUMENTED_KEYS = {"time", "level", "logger", "message"}
SLACK_TOKEN = "xoxb-1234-5678-abcdEFGH"


def _record(
    msg: str,
    args: Any = None,
    *,
    level: int = logging.INFO,
    exc: BaseException | None = None,
    **extra: Any,
) -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    record = logging.LogRecord("bot.test", level, __file__, 1, msg, args, exc_info)
    record.__dict__.update(extra)
    return record


def _raised(exc: BaseException) -> BaseException:
    """`exc` with a traceback, as a log call in an except block sees it."""
    try:
        raise exc
    except BaseException as caught:
        return caught


def _redacted(record: logging.LogRecord, known: tuple[str, ...] = ()) -> str:
    """The text a handler with the filter writes for `record` (the text format)."""
    assert RedactionFilter(known).filter(record)
    return logging.Formatter("%(message)s").format(record)


class TestJsonFormatter:
    def test_one_object_with_the_documented_keys(self) -> None:
        line = JsonFormatter().format(_record("posted %s in %d s", ("it", 2), level=logging.DEBUG))
        assert "\n" not in line
        entry = json.loads(line)
        assert set(entry) == DOCUMENTED_KEYS
        assert RFC3339_UTC.fullmatch(entry["time"])
        assert entry["level"] == "DEBUG" and entry["logger"] == "bot.test"
        assert entry["message"] == "posted it in 2 s"

    def test_the_traceback_is_exc(self) -> None:
        exc = _raised(ValueError("the store is gone"))
        entry = json.loads(JsonFormatter().format(_record("failed", exc=exc, level=logging.ERROR)))
        assert entry["message"] == "failed"
        assert entry["exc"].startswith("Traceback (most recent call last):")
        assert "ValueError: the store is gone" in entry["exc"]

    def test_serialisable_extra_fields_are_kept(self) -> None:
        record = _record("done", incident=7, labels={"team": "ci"}, handle=object())
        entry = json.loads(JsonFormatter().format(record))
        assert entry["incident"] == 7 and entry["labels"] == {"team": "ci"}
        assert "handle" not in entry

    def test_extra_fields_do_not_replace_the_documented_ones(self) -> None:
        record = _record("done")
        record.__dict__.update({"time": "then", "level": "nope", "logger": "x", "exc": "none"})
        entry = json.loads(JsonFormatter().format(record))
        assert entry["time"] != "then" and "exc" not in entry
        assert (entry["level"], entry["logger"]) == ("INFO", "bot.test")


class TestRedaction:
    def test_a_token_inside_the_message(self) -> None:
        text = _redacted(_record(f"auth.test with {SLACK_TOKEN} failed"))
        assert text == f"auth.test with {REDACTED} failed"

    def test_a_token_in_the_arguments(self) -> None:
        text = _redacted(
            _record("calling %s with %r", ("chat.postMessage", {"token": SLACK_TOKEN}))
        )
        assert SLACK_TOKEN not in text and REDACTED in text and "chat.postMessage" in text

    def test_a_token_in_an_exceptions_text(self) -> None:
        exc = _raised(RuntimeError(f"refused: token={SLACK_TOKEN}"))
        record = _record("request failed", exc=exc, level=logging.ERROR)
        assert RedactionFilter(()).filter(record)
        line = JsonFormatter().format(record)
        entry = json.loads(line)
        assert SLACK_TOKEN not in line
        assert f"RuntimeError: refused: token={REDACTED}" in entry["exc"]

    def test_an_authorization_header_in_the_message(self) -> None:
        text = _redacted(_record("sent Authorization: Bearer x to Grafana"))
        assert text == f"sent Authorization: Bearer {REDACTED} to Grafana"

    @pytest.mark.parametrize(
        "credential",
        [
            "xoxp-1-2-3-abc",
            "xoxa-2-abc",
            "xoxr-abc",
            "xoxs-abc",
            "xoxo-abc",
            "xapp-1-A0QUEUEBOT-123-abcdef",
            "glsa_AbCdEf0123456789_abcdef01",
        ],
    )
    def test_token_shapes(self, credential: str) -> None:
        assert _redacted(_record("value=%s;", (credential,))) == f"value={REDACTED};"

    def test_basic_credentials(self) -> None:
        pair = base64.b64encode(b"grafana:hunter22").decode()
        text = _redacted(_record("Authorization: Basic %s", (pair,)))
        assert text == f"Authorization: Basic {REDACTED}"

    def test_prose_about_schemes_stays(self) -> None:
        prose = "missing credentials: send Authorization: Bearer <token> or Basic auth"
        assert _redacted(_record(prose)) == prose

    def test_known_secrets_and_their_base64(self) -> None:
        secret = "webhook-shared-secret"
        b64 = base64.b64encode(secret.encode()).decode()
        text = _redacted(_record("got %s then %s", (secret, b64)), (secret,))
        assert text == f"got {REDACTED} then {REDACTED}"

    def test_the_longer_of_two_overlapping_secrets_goes_whole(self) -> None:
        text = _redacted(_record("abcd-secret-long"), ("abcd", "abcd-secret-long"))
        assert text == REDACTED

    def test_extra_fields_are_redacted(self) -> None:
        record = _record("call", headers={"Authorization": "Bearer abc.def"}, token=SLACK_TOKEN)
        assert RedactionFilter(()).filter(record)
        entry = json.loads(JsonFormatter().format(record))
        assert entry["headers"] == {"Authorization": f"Bearer {REDACTED}"}
        assert entry["token"] == REDACTED

    def test_a_log_call_with_wrong_arguments_still_redacts(self) -> None:
        text = _redacted(_record("only %s here", (SLACK_TOKEN, "extra")))
        assert SLACK_TOKEN not in text and "only %s here" in text


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Undo what setup_logging does to the process-wide logging state."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quieted = {name: logging.getLogger(name).level for name in [*QUIETED, "slack_bolt.AsyncApp"]}
    try:
        yield
    finally:
        for handler in root.handlers:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
        for name, was in quieted.items():
            logging.getLogger(name).setLevel(was)
        logging.captureWarnings(False)


@pytest.mark.usefixtures("restored_logging")
class TestSetup:
    def test_json_on_stderr_redacted_and_sdks_quiet(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        setup_logging("DEBUG", "json", ["s3cret-value"])
        logging.getLogger("bot.x").debug("using %s", "s3cret-value")
        logging.getLogger("slack_sdk.web").debug("Sending a request - headers: Bearer xoxb-1")
        logging.getLogger("slack_bolt.App").info("chatty")
        out, err = capsys.readouterr()
        assert out == ""
        (line,) = err.splitlines()
        assert json.loads(line)["message"] == f"using {REDACTED}"

    def test_bolts_own_logger_stays_quiet(self, capsys: pytest.CaptureFixture[str]) -> None:
        setup_logging("DEBUG", "json", [])
        # Bolt sets its app logger to the root's level when the app is made.
        app_logger = logging.getLogger("slack_bolt.AsyncApp")
        app_logger.setLevel(logging.DEBUG)
        app_logger.debug("Responding with status: 200")
        app_logger.warning("As you gave `client` as well, `token` will be unused.")
        logging.getLogger("aiosqlite").debug("executing a statement")
        (line,) = capsys.readouterr().err.splitlines()
        assert json.loads(line)["level"] == "WARNING"

    def test_the_level_holds_for_the_sdks_too(self, capsys: pytest.CaptureFixture[str]) -> None:
        setup_logging("WARNING", "text", [])
        logging.getLogger("bot.x").info("not shown")
        logging.getLogger("slack_sdk").info("not shown either")
        logging.getLogger("bot.x").warning("shown with %s", SLACK_TOKEN)
        (line,) = capsys.readouterr().err.splitlines()
        assert line.endswith(f"WARNING bot.x: shown with {REDACTED}")

    def test_a_name_with_a_line_break_forges_no_log_line(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A runner type from a workflow file, with a line break and a bidirectional override:
        one line, every such character spelt out."""
        setup_logging("INFO", "text", [])
        forged = "linux\n2026-11-26 03:00:00,000 ERROR bot.app: store lost\u202e"
        logging.getLogger("bot.x").warning("the heads-up of %s was not saved", forged)
        (line,) = capsys.readouterr().err.splitlines()
        assert "linux\\n2026-11-26 03:00:00,000 ERROR" in line and line.endswith(
            "\\u202e was not saved"
        )

    def test_a_huge_value_is_logged_shortened(self, capsys: pytest.CaptureFixture[str]) -> None:
        setup_logging("INFO", "text", [])
        logging.getLogger("bot.x").warning("retrying %s", "r" * 10_000)
        (line,) = capsys.readouterr().err.splitlines()
        assert len(line) < 4200 and "more characters)" in line

    def test_setting_up_again_replaces_the_handler(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        setup_logging("INFO", "text", [])
        setup_logging("INFO", "json", [])
        logging.getLogger("bot.x").info("once")
        (line,) = capsys.readouterr().err.splitlines()
        assert json.loads(line)["message"] == "once"

    def test_warnings_become_log_lines(self, capsys: pytest.CaptureFixture[str]) -> None:
        setup_logging("INFO", "json", [])
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.warn(f"deprecated token {SLACK_TOKEN}", UserWarning, stacklevel=1)
        (line,) = capsys.readouterr().err.splitlines()
        entry = json.loads(line)
        assert entry["logger"] == "py.warnings" and REDACTED in entry["message"]

    def test_unknown_level_or_format_is_refused(self) -> None:
        with pytest.raises(ValueError, match="level"):
            setup_logging("LOUD", "json", [])
        with pytest.raises(ValueError, match="format"):
            setup_logging("INFO", "xml", [])


class TestSettings:
    def test_defaults(self) -> None:
        settings = load_settings({})
        assert (settings.log_format, settings.log_level) == ("text", "INFO")

    def test_either_case_and_empty_is_the_default(self) -> None:
        settings = load_settings({"QUEUEBOT_LOG_FORMAT": "JSON", "QUEUEBOT_LOG_LEVEL": "debug"})
        assert (settings.log_format, settings.log_level) == ("json", "DEBUG")
        settings = load_settings({"QUEUEBOT_LOG_FORMAT": "", "QUEUEBOT_LOG_LEVEL": " "})
        assert (settings.log_format, settings.log_level) == ("text", "INFO")

    @pytest.mark.parametrize(
        ("name", "value"), [("QUEUEBOT_LOG_LEVEL", "TRACE"), ("QUEUEBOT_LOG_FORMAT", "xml")]
    )
    def test_other_values_are_refused_by_name(self, name: str, value: str) -> None:
        with pytest.raises(ConfigError, match=name):
            load_settings({name: value})

    def test_known_secrets_are_every_secret_setting(self) -> None:
        env = {
            "SLACK_BOT_TOKEN": "xoxb-a",
            "SLACK_SIGNING_SECRET": "b",
            "SLACK_APP_TOKEN": "xapp-c",
            "QUEUEBOT_WEBHOOK_TOKEN": "d",
            "QUEUEBOT_WEBHOOK_HMAC_SECRET": "e",
            "GRAFANA_TOKEN": "glsa_f",
            "QUEUEBOT_CHANNEL": "#not-a-secret",
        }
        found = known_secrets(load_settings(env))
        assert sorted(found) == sorted(v for k, v in env.items() if k != "QUEUEBOT_CHANNEL")

    def test_known_secrets_are_each_organizations_hook_secrets_too(self) -> None:
        env = {
            "GITHUB_ORG": "pytorch,pytorch-labs",
            "GITHUB_WEBHOOK_SECRET": "shared-hook-secret",
            "GITHUB_WEBHOOK_SECRET_PYTORCH_LABS": "labs-hook-secret",
        }
        found = known_secrets(load_settings(env))
        assert sorted(found) == ["labs-hook-secret", "shared-hook-secret"]


# -- a whole run ----------------------------------------------------------------------------------


class ServeProcess:
    """`python -m bot serve` with its stdout and stderr read as they come."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.url = f"http://127.0.0.1:{env['PORT']}"
        self.stdout = b""
        self.stderr: list[str] = []
        self._process: asyncio.subprocess.Process | None = None
        self._readers: list[asyncio.Task[None]] = []

    async def start(self, http: aiohttp.ClientSession, timeout: float = 30.0) -> None:  # noqa: ASYNC109
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "serve",
            env=self.env,
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self._readers = [
            asyncio.create_task(self._read_stdout()),
            asyncio.create_task(self._read_stderr()),
        ]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            if self._process.returncode is not None:
                raise AssertionError(f"serve exited with {self._process.returncode}")
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(f"{self.url}{paths.HEALTHZ_PATH}") as answer:
                    if answer.status == 200:
                        return
            if loop.time() > deadline:
                raise AssertionError("serve did not answer /healthz in time")
            await asyncio.sleep(0.1)

    async def _read_stdout(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        self.stdout = await self._process.stdout.read()

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        async for line in self._process.stderr:
            self.stderr.append(line.decode())

    async def logged(self, text: str, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Wait until a stderr line contains `text`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not any(text in line for line in self.stderr):
            if loop.time() > deadline:
                raise AssertionError(f"no log line with {text!r}")
            await asyncio.sleep(0.05)

    async def interrupt(self) -> int | None:
        """Ctrl-C, as an operator stops it; killed if it does not stop in time."""
        process = self._process
        if process is None:
            return None
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), 15)
            except TimeoutError:
                process.kill()
                await process.wait()
        await asyncio.gather(*self._readers)
        return process.returncode

    @property
    def output(self) -> str:
        return self.stdout.decode() + "".join(self.stderr)


def _signed(body: bytes, key: str) -> str:
    return hmac.new(key.encode(), body, hashlib.sha256).hexdigest()


async def _grafana_holds_the_reference_alert(
    grafana: GrafanaSandbox, http: aiohttp.ClientSession
) -> None:
    """Grafana's own Alertmanager holds the alert with its rule UID, so the silence matches it."""
    lead = parse_webhook(encoded(reference())).lead
    async with http.post(
        f"{grafana.url}{GRAFANA_API}/alerts",
        json=[{"labels": {"__alert_rule_uid__": lead.rule_uid, **lead.labels}}],
        headers={"Authorization": f"Bearer {grafana.token}"},
    ) as answer:
        answer.raise_for_status()


async def test_a_full_run_logs_no_secret(tmp_path: Path) -> None:
    """Serve at DEBUG in JSON: an alert, a wrong credential, a silence through the modal. Every
    stderr line is a JSON object with the documented keys, each step is logged, and no secret
    (nor its base64) appears anywhere in what the process wrote."""
    tag = secrets.token_hex(6)
    bot_token = f"xoxb-logscan-{tag}"
    signing_secret = f"signing-logscan-{tag}"
    webhook_token = f"webhook-logscan-{tag}"
    hmac_secret = f"hmac-logscan-{tag}"
    grafana_token = f"glsa_logscan_{tag}"
    wrong_token = f"wrong-logscan-{tag}"
    secret_values = [bot_token, signing_secret, webhook_token, hmac_secret, grafana_token]

    async with (
        SlackSandbox(bot_token=bot_token, signing_secret=signing_secret) as sandbox,
        GrafanaSandbox(token=grafana_token) as grafana,
        aiohttp.ClientSession() as http,
    ):
        serve = ServeProcess(
            {
                "PATH": os.environ["PATH"],
                "HOME": os.environ.get("HOME", "/tmp"),
                "SLACK_BOT_TOKEN": bot_token,
                "SLACK_SIGNING_SECRET": signing_secret,
                "SLACK_API_URL": sandbox.api_url,
                "QUEUEBOT_CHANNEL": f"#{sandbox.default_channel.name}",
                "QUEUEBOT_WEBHOOK_TOKEN": webhook_token,
                "QUEUEBOT_WEBHOOK_HMAC_SECRET": hmac_secret,
                "GRAFANA_URL": grafana.url,
                "GRAFANA_TOKEN": grafana_token,
                "QUEUEBOT_SILENCE_CHECK_SECONDS": "0.5",
                "QUEUEBOT_DATABASE": str(tmp_path / "queuebot.db"),
                "QUEUEBOT_LOG_FORMAT": "json",
                "QUEUEBOT_LOG_LEVEL": "DEBUG",
                "HOST": "127.0.0.1",
                "PORT": str(free_port()),
            }
        )
        try:
            await serve.start(http)
            sandbox.request_url = f"{serve.url}{paths.SLACK_EVENTS_PATH}"
            await _grafana_holds_the_reference_alert(grafana, http)
            body = encoded(reference())
            webhook = f"{serve.url}{paths.GRAFANA_WEBHOOK_PATH}"
            headers = {
                "Content-Type": "application/json",
                SIGNATURE_HEADER: _signed(body, hmac_secret),
            }

            async def post(authorization: str) -> int:
                async with http.post(
                    webhook, data=body, headers={**headers, "Authorization": authorization}
                ) as answer:
                    return answer.status

            assert await post(f"Bearer {webhook_token}") == 202
            (parent,) = await sandbox.wait_for(lambda: sandbox.messages()[:1], timeout=10)
            assert await post(f"Bearer {wrong_token}") == 401
            wrong_pair = base64.b64encode(f"grafana:{wrong_token}".encode()).decode()
            assert await post(f"Basic {wrong_pair}") == 401

            click = await sandbox.click(
                sandbox.channel_id, parent.ts, ActionId.SILENCE.value, ONCALL_USER
            )
            assert click.status == 200
            view = await sandbox.wait_for(
                lambda: next((v for v in sandbox.views if v.state is ViewState.OPEN), None),
                timeout=10,
            )
            form = {
                SilenceInput.DURATION.value: {SilenceInput.DURATION.value: "1h"},
                SilenceInput.COMMENT.value: {SilenceInput.COMMENT.value: "looking at the queue"},
            }
            submitted = await sandbox.submit_view(view.id, form, ONCALL_USER)
            assert submitted.status == 200

            def silenced() -> bool:
                shown = sandbox.message(None, parent.ts)
                return shown is not None and "Silenced until" in json.dumps(shown.blocks)

            await sandbox.wait_for(silenced, timeout=10)
            await serve.logged("silenced until")
            # A whole silence check after the silence exists: Grafana is read with the token.
            await watched(serve.url, "queuebot_silence_checks_total", 2)
        finally:
            code = await serve.interrupt()
            # Shown when the test fails: what the process said.
            sys.stdout.write(serve.output)

    assert code == 0
    assert serve.stdout == b""
    entries = []
    for line in serve.stderr:
        entry = json.loads(line)
        assert isinstance(entry, dict) and set(entry) >= DOCUMENTED_KEYS, line
        assert RFC3339_UTC.fullmatch(entry["time"]), line
        assert entry["level"] in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}, line
        entries.append(entry)
    messages = "\n".join(entry["message"] for entry in entries)
    for step in (
        "listening on",
        "notification accepted",
        "incident posted",
        "webhook refused",
        "silenced until",
    ):
        assert step in messages, step
    output = serve.output
    # Nothing even needed redacting: no secret left the bot's own code for the log.
    assert REDACTED not in output
    for secret in [*secret_values, wrong_token]:
        for form in (secret, base64.b64encode(secret.encode()).decode().rstrip("=")):
            assert form not in output, f"{form!r} ({secret!r}) is in the log"
