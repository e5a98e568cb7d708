"""The README and the pages under docs/ show what queuebot does: every YAML example loads through
the settings, every `queuebot` command shown is one its parser takes, every relative link lands,
and the reference pages name what the code serves and reads."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.cli.main import build_parser
from bot.config import Settings, load_settings
from bot.domain.alerts import AlertStatus
from bot.domain.notifications import parse_webhook
from bot.web import paths
from tests.documentation import (
    DOCS,
    README,
    ROOT,
    Block,
    all_blocks,
    anchors,
    blocks,
    links,
    name,
    pages,
    section,
    settings_examples,
)

SERVE_ENV = {
    "SLACK_BOT_TOKEN": "xoxb-test-token",
    "SLACK_SIGNING_SECRET": "signing-secret",
    "QUEUEBOT_CHANNEL": "#alerts",
    "QUEUEBOT_WEBHOOK_TOKEN": "webhook-token",
}
#: Written by whoever writes the deployment guide; links to it are checked once it exists.
DEPLOY_GUIDE = DOCS / "deploy.md"
#: The shells' separators between simple commands, as shlex splits them.
_SEPARATORS = {";", "&&", "||", "|", "&"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _queuebot_arguments(words: list[str]) -> list[str] | None:
    """The arguments of a simple command that runs queuebot, after any `VAR=value` before it."""
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if words and Path(words[0]).name == "queuebot":
        return words[1:]
    if words and Path(words[0]).name.startswith("python") and words[1:3] == ["-m", "bot"]:
        return words[3:]
    return None


def _commands(block: Block) -> list[list[str]]:
    """The arguments of each `queuebot …` (or `python -m bot …`) a shell block runs."""
    logical = block.body.replace("\\\n", " ").splitlines()
    if block.language == "console":  # prompts are commands, the rest is their output
        logical = [line[2:] for line in logical if line.startswith("$ ")]
    found = []
    for line in logical:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        simple: list[str] = []
        for token in [*lexer, ";"]:
            if token not in _SEPARATORS:
                simple.append(token)
                continue
            arguments = _queuebot_arguments(simple)
            if arguments is not None:
                found.append(arguments)
            simple = []
    return found


SHELL_BLOCKS = all_blocks("sh", "console", "bash")
COMMANDS = [(block.where, argv) for block in SHELL_BLOCKS for argv in _commands(block)]


def test_the_newcomers_two_commands_stay_in_the_readme() -> None:
    """The demo's and the test suite's one command, word for word, each a script that exists."""
    readme = README.read_text(encoding="utf-8")
    for script in ("scripts/demo", "scripts/test"):
        assert f"```sh\n{script}\n```" in readme, script
        assert os.access(ROOT / script, os.X_OK), script


@pytest.mark.parametrize("block", settings_examples(), ids=lambda b: b.where)
def test_every_settings_example_loads_through_the_settings(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "queuebot.yml"
    path.write_text(block.body, encoding="utf-8")
    settings = load_settings(SERVE_ENV | {"QUEUEBOT_CONFIG": str(path)})
    assert settings.file.model_dump(exclude_defaults=True), f"{block.where} sets nothing"


def test_the_settings_examples_are_found_on_each_page_that_has_them() -> None:
    """The reader finds the examples: a misspelt fence would leave one out unchecked."""
    where = {name(b.page) for b in settings_examples()}
    assert where >= {
        "docs/settings.md",
        "docs/alerts.md",
        "docs/diagnostics.md",
        "docs/slack.md",
        "docs/early-warning-and-capacity.md",
    }


@pytest.mark.parametrize(
    "block", [b for b in all_blocks("yaml") if b.is_fragment], ids=lambda b: b.where
)
def test_a_fragment_of_another_programs_file_is_still_yaml(block: Block) -> None:
    assert isinstance(yaml.safe_load(block.body), dict), block.where


def test_every_fenced_block_names_its_language() -> None:
    """An unlabelled block would escape both checks below."""
    unlabelled = [b.where for page in pages() for b in blocks(page) if not b.language]
    assert unlabelled == []


@pytest.mark.parametrize(("where", "argv"), COMMANDS, ids=[w for w, _ in COMMANDS])
def test_every_command_shown_is_one_the_command_line_takes(
    where: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        build_parser().parse_args(argv)
    except SystemExit:
        pytest.fail(f"{where}: queuebot {shlex.join(argv)}: {capsys.readouterr().err.strip()}")


def test_the_commands_shown_cover_the_command_line() -> None:
    shown = {argv[0] for _, argv in COMMANDS if argv}
    assert shown >= {"serve", "check", "render", "backfill", "diagnose", "simulate"}


def test_a_command_the_parser_refuses_is_caught() -> None:
    """The reader and the parser together refuse a misspelt option, so the check above bites."""
    block = Block(README, 1, "sh", "FOO=1 .venv/bin/queuebot backfill --dayz 7 && echo done\n")
    (argv,) = _commands(block)
    assert argv == ["backfill", "--dayz", "7"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)


@pytest.mark.parametrize("page", pages(), ids=name)
def test_every_relative_link_lands_on_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in links(page):
        path_part, _, anchor = target.partition("#")
        landing = (page.parent / path_part).resolve() if path_part else page
        if landing == DEPLOY_GUIDE and not landing.exists():
            continue  # the deployment guide is written apart; checked once it is there
        if not landing.exists():
            broken.append(f"{target}: no such file")
        elif anchor and landing.suffix == ".md" and anchor not in anchors(landing):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == []


def test_the_readme_links_each_reference_page() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README)}
    assert {p.resolve() for p in DOCS.glob("*.md")} <= linked
    assert DEPLOY_GUIDE.resolve() in linked


def test_the_demo_finds_the_reference_alert_where_the_lab_installs_it() -> None:
    """The README's `curl` example reads the alert from the installed lab, not from tests/."""
    readme = README.read_text(encoding="utf-8")
    (program,) = re.findall(r"\$\(\S*python\S* -c '([^']+)'\)", readme)
    result = subprocess.run(  # noqa: S603 - our own interpreter, the README's one-liner
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
        cwd=Path("/"),
    )
    alert = Path(result.stdout.strip())
    assert "tests" not in alert.parts
    group = parse_webhook(alert.read_bytes())
    assert {a.status for a in group.alerts} == {AlertStatus.RESOLVED}


def test_every_route_the_bot_serves_is_in_the_reference() -> None:
    routes = section(DOCS / "settings.md", "HTTP routes and /metrics")
    served = [v for k, v in vars(paths).items() if k.endswith("_PATH")]
    assert served and [p for p in served if f" {p}`" not in routes] == []


def test_every_environment_variable_is_in_the_settings_reference() -> None:
    variables = section(DOCS / "settings.md", "Environment variables") + section(
        DOCS / "settings.md", "Timings"
    )
    read = [f.validation_alias for f in Settings.model_fields.values()]
    names = [alias for alias in read if isinstance(alias, str)]
    assert len(names) > 40 and [n for n in names if f"`{n}`" not in variables] == []


def test_every_test_a_promise_names_exists() -> None:
    promises = (DOCS / "promises.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:[\w]+/)*test_\w+\.py)`", promises))
    missing = [
        f
        for f in sorted(named)
        if not (ROOT / "tests" / f).is_file() and not (ROOT / "lab" / "lab_tests" / f).is_file()
    ]
    assert len(named) > 20 and missing == []
