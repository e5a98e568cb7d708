"""`queuebot backup PATH` and `queuebot restore PATH`: a SQLite store copied while the bot
serves on it, and a copy put back while no bot does (`bot.store.backup`), each said in one line.

A PostgreSQL store is PostgreSQL's own tools' to copy: both commands print the `pg_dump` or
`pg_restore` command line for the database QUEUEBOT_DATABASE names, without its password
(libpq finds it in PGPASSWORD or ~/.pgpass,
https://www.postgresql.org/docs/current/libpq-pgpass.html), and exit non-zero: nothing was
copied. The options (https://www.postgresql.org/docs/current/app-pgdump.html,
https://www.postgresql.org/docs/current/app-pgrestore.html): pg_dump's custom format is the
one pg_restore reads; `--clean --if-exists` drops queuebot's tables before making them again,
`--single-transaction` restores all or nothing, `--no-owner` leaves the tables to the user
restoring (the deployment's own role may differ from the one that dumped).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import TextIO
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from bot.config import load_settings
from bot.store import StoreError, is_server
from bot.store.backup import back_up, restore
from bot.store.schema import MIGRATIONS

#: The exit status of a command that refused, or failed, and changed nothing.
REFUSED = 1
#: The exit status for a PostgreSQL store: its own tools copy it, said with the command line.
USE_POSTGRES_TOOLS = 2


def without_password(url: str) -> str:
    """A PostgreSQL URL as it may be printed: its password (in `user:password@`, or a
    `password=` parameter) left out, everything else kept."""
    parts = urlsplit(url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    netloc = f"{user}@{hostport}" if at and user else hostport
    kept = [
        (name, value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
        if "password" not in name.lower()
    ]
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(kept, quote_via=quote)))


def pg_dump_command(url: str, path: Path) -> str:
    """The shell line that backs the database at `url` up to `path`."""
    return shlex.join(
        ["pg_dump", "--format=custom", f"--file={path}", f"--dbname={without_password(url)}"]
    )


def pg_restore_command(url: str, path: Path) -> str:
    """The shell line that restores the pg_dump archive at `path` into the database at `url`."""
    return shlex.join(
        [
            "pg_restore",
            "--clean",
            "--if-exists",
            "--no-owner",
            "--single-transaction",
            f"--dbname={without_password(url)}",
            str(path),
        ]
    )


def run_backup(database: str, path: Path, *, force: bool, out: TextIO = sys.stdout) -> int:
    """Copy the store to `path`; the exit status (the reason for a refusal on stderr)."""
    if is_server(database):
        print(
            "queuebot: QUEUEBOT_DATABASE is a PostgreSQL database, which PostgreSQL's own"
            " pg_dump backs up (the password from PGPASSWORD or ~/.pgpass); nothing was"
            f" written. Run:\n  {pg_dump_command(database, path)}",
            file=sys.stderr,
        )
        return USE_POSTGRES_TOOLS
    try:
        facts = back_up(database, path, force=force)
    except StoreError as exc:
        print(f"queuebot: {exc}", file=sys.stderr)
        return REFUSED
    print(f"queuebot: wrote {path}: {facts.line()}", file=out)
    return 0


def run_restore(database: str, path: Path, *, force: bool, out: TextIO = sys.stdout) -> int:
    """Put the backup at `path` in the store's place; the exit status (the reason for a
    refusal on stderr)."""
    if is_server(database):
        print(
            "queuebot: QUEUEBOT_DATABASE is a PostgreSQL database, which PostgreSQL's own"
            " pg_restore restores from a pg_dump archive; stop every queuebot using it first."
            f" Nothing was changed. Run:\n  {pg_restore_command(database, path)}",
            file=sys.stderr,
        )
        return USE_POSTGRES_TOOLS
    try:
        done = restore(path, database, force=force)
    except StoreError as exc:
        print(f"queuebot: {exc}", file=sys.stderr)
        return REFUSED
    store = Path(database).expanduser()
    line = f"queuebot: restored {path} to {store}: {done.facts.line()}"
    if done.kept is not None:
        line += f"; the store it replaced is kept as {done.kept}"
    if done.facts.version < len(MIGRATIONS):
        line += f"; queuebot serve migrates it to schema version {len(MIGRATIONS)} as it starts"
    print(line, file=out)
    return 0


def cmd_backup(args: argparse.Namespace) -> int:
    return run_backup(load_settings().database, Path(args.path), force=args.force)


def cmd_restore(args: argparse.Namespace) -> int:
    return run_restore(load_settings().database, Path(args.path), force=args.force)


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`backup` and `restore` on the command line's parser."""
    backing = sub.add_parser(
        "backup",
        help="copy the SQLite store, while the bot serves, to PATH (PostgreSQL: pg_dump's line)",
    )
    backing.add_argument("path", help="the file to write")
    backing.add_argument("--force", action="store_true", help="replace PATH if it exists")
    backing.set_defaults(func=cmd_backup)
    restoring = sub.add_parser(
        "restore",
        help="put a backup in place of the SQLite store, the bot stopped (PostgreSQL:"
        " pg_restore's line)",
    )
    restoring.add_argument("path", help="a file `queuebot backup` wrote")
    restoring.add_argument(
        "--force",
        action="store_true",
        help="replace the store an earlier restore kept as <db>.before-restore, or make the"
        " store where there is none",
    )
    restoring.set_defaults(func=cmd_restore)
