"""Logging for the command line: one handler on stderr, text or JSON lines, secrets redacted.

`setup_logging` installs it (QUEUEBOT_LOG_FORMAT, QUEUEBOT_LOG_LEVEL); `JsonFormatter` writes one
JSON object per record; `QuietFilter` keeps chatty libraries out below their own level;
`RedactionFilter` takes credentials out of every record before any formatter sees it. Whatever a
module logs (its message, its arguments, a traceback, `extra=` fields), a known secret or anything
shaped like a Slack or Grafana token or an HTTP credential reaches stderr as `[redacted]`.
Messages come from what others wrote too (runner types from workflow files, alert titles), so
the filter also escapes line breaks, other control characters and bidirectional overrides (no
text can forge a log line or hide what it says) and keeps a message to `MAX_MESSAGE` characters;
`shown` shortens one such value where it is logged.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from bot.telemetry.redaction import Redactor

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_RECORD_ATTRIBUTES = frozenset(
    logging.LogRecord("", logging.INFO, "", 0, "", None, None).__dict__
) | {"message", "asctime", "taskName"}
_OWN_KEYS = ("time", "level", "logger", "message", "exc", "stack")
#: The longest message a record keeps; the rest is counted.
MAX_MESSAGE = 4000
#: C0 and C1 controls, the line and paragraph separators and the bidirectional controls.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escaped(text: str) -> str:
    """`text` on one line with every unsafe character spelt out (`\\n`, `\\u202e`)."""
    return _UNSAFE.sub(lambda m: _NAMED.get(m.group(), f"\\u{ord(m.group()):04x}"), text)


def shown(value: object, limit: int = 120) -> str:
    """A value from outside (a runner type, a title) as a log line shows it: escaped and at
    most `limit` characters, the rest counted."""
    text = escaped(str(value))
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…({len(text) - limit} more characters)"


class RedactionFilter(logging.Filter):
    """Redacts a record in place: message with its arguments, traceback, stack and extras.

    The arguments are formatted into the message first, so a secret inside any object's str()
    is caught too; the traceback is formatted here so that the handler's formatter reuses the
    redacted text.
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self.redact = Redactor(secrets)
        self._tracebacks = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            # A bad log call must not break its caller, and logging's own complaint would print
            # the arguments unredacted: keep them, redacted, in the message instead.
            message = f"{record.msg} (arguments that do not fit: {record.args!r})"
        record.msg = shown(self.redact(message), MAX_MESSAGE)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._tracebacks.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        for key, value in list(record.__dict__.items()):
            if key not in _RECORD_ATTRIBUTES:
                setattr(record, key, self.redact.value(value))
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (RFC 3339, UTC), level, logger, message, and exc (the
    traceback) and stack when there are; then the record's JSON-serialisable `extra=` fields."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exc"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        for key, value in record.__dict__.items():
            if key in _RECORD_ATTRIBUTES or key in _OWN_KEYS:
                continue
            try:
                json.dumps(value)
            except (TypeError, ValueError):
                continue
            entry[key] = value
        return json.dumps(entry, ensure_ascii=False)


#: Libraries kept at or above a level whatever QUEUEBOT_LOG_LEVEL says: the Slack SDK logs each
#: request with its headers at DEBUG, Bolt and aiohttp's access log are chatty below WARNING, and
#: aiosqlite logs every statement with its parameters (whole webhook bodies) at DEBUG.
QUIETED = {
    "slack_sdk": logging.INFO,
    "slack_bolt": logging.WARNING,
    "aiohttp.access": logging.WARNING,
    "aiosqlite": logging.INFO,
}


class QuietFilter(logging.Filter):
    """Drops records of the `QUIETED` libraries below their level.

    Setting their loggers' levels is not enough: Bolt gives each app a logger of its own at the
    root logger's level, so at DEBUG its records would come through.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        for name, floor in QUIETED.items():
            if record.name == name or record.name.startswith(name + "."):
                return record.levelno >= floor
        return True


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    """Marks the handler `setup_logging` installed, so that calling it again replaces it."""


def setup_logging(level: str, fmt: str, secrets: Iterable[str]) -> None:
    """Log records at `level` and above to stderr as `fmt` ("text" or "json"), redacting
    `secrets`. The `QUIETED` libraries stay at their own level whatever `level` is."""
    level = level.upper()
    if level not in LEVELS:
        raise ValueError(f"log level {level!r} is not one of {', '.join(LEVELS)}")
    if fmt not in FORMATS:
        raise ValueError(f"log format {fmt!r} is not one of {', '.join(FORMATS)}")
    handler = _Handler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(QuietFilter())
    handler.addFilter(RedactionFilter(secrets))
    # The handler's own level matters: records a quieter logger lets through at INFO reach the
    # root's handlers without the root's level being consulted again.
    handler.setLevel(level)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Handler)]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level)
    # Their records are not even made below the level (the filter catches the rest).
    threshold = logging.getLevelNamesMapping()[level]
    for name, floor in QUIETED.items():
        logging.getLogger(name).setLevel(max(floor, threshold))
    # Warnings would otherwise be bare lines on stderr, unredacted and not JSON.
    logging.captureWarnings(True)
