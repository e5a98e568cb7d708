"""The tree keeps the shape ARCHITECTURE.md gives it: imports run the way its table says, no
import circles, no module over 400 lines, one meaning per public name."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from testkit.architecture import (
    Import,
    cycles,
    imports,
    modules,
    rules,
    top_level_imports,
    violations,
)

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def _rules() -> dict[str, tuple[str, ...]]:
    return rules((ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8"))


def _edges() -> list[Import]:
    return imports(modules(ROOT, "bot"), "bot")


def test_every_package_has_a_rule() -> None:
    table = _rules()
    packages = {".".join(name.split(".")[:2]) for name in modules(ROOT, "bot") if name != "bot"}
    assert packages <= set(table), sorted(packages - set(table))


def test_imports_follow_the_table_in_architecture_md() -> None:
    edges = [e for e in _edges() if e.imported != "bot"]  # the root holds the version only
    assert violations(edges, _rules()) == []


def test_no_import_circles() -> None:
    assert cycles(_edges()) == []


def test_the_product_imports_the_lab_only_for_its_commands() -> None:
    """`pip install .` installs no lab: only the CLI's demo and simulate commands import it,
    when they run."""
    found = {
        name: where
        for name, path in modules(ROOT, "bot").items()
        if (where := [inner for top, _, inner in top_level_imports(path) if top == "queuebot_lab"])
    }
    assert set(found) == {"bot.cli.main"}
    assert all(found["bot.cli.main"])


def test_no_module_is_over_400_lines() -> None:
    long = {
        name: length
        for name, path in modules(ROOT, "bot").items()
        if (length := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_a_public_name_means_one_thing() -> None:
    """No two modules define the same public class, function or constant."""
    defined: dict[str, list[str]] = defaultdict(list)
    for name, path in modules(ROOT, "bot").items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                continue
            for defined_name in names:
                if not defined_name.startswith("_") and defined_name != "log":
                    defined[defined_name].append(name)
    assert {n: where for n, where in defined.items() if len(where) > 1} == {}


#: The gateway's calls that write into a channel; only the outbox (bot.delivery) makes them.
CHANNEL_WRITES = ("post_message", "update_message")


def channel_writes(root: Path, package: str) -> list[str]:
    """Calls that write into a channel made outside `package`.delivery: `post_message`,
    `update_message`, and `upload_file` with a channel (None keeps the file private)."""
    found = []
    for name, path in modules(root, package).items():
        if name.startswith((f"{package}.delivery", f"{package}.slack.gateway")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method = node.func.attr
            private = (
                bool(node.args)
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value is None
            )
            if method in CHANNEL_WRITES or (method == "upload_file" and not private):
                found.append(f"{name}:{node.lineno} {method}")
    return found


def test_only_the_outbox_writes_into_channels() -> None:
    """Every message the bot posts or edits in a channel goes through bot.delivery."""
    sandbox = {n for n in modules(ROOT, "bot") if n.startswith("queuebot_lab.sandbox")}
    assert [w for w in channel_writes(ROOT, "bot") if w.split(":")[0] not in sandbox] == []


#: What reads the time, called or passed as a function: the product's clock does, nothing else.
TIME_READS = {
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "perf_counter"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
}
_LOOPS = ("get_running_loop", "get_event_loop")


def clock_reads(root: Path, package: str) -> list[str]:
    """Where `package` reads the time other than through its clock (`package`.domain.clock):
    `time.time`, `time.monotonic`, `datetime.now` and the like, called or passed; an event
    loop's `time()`; those functions imported by name."""
    found = []
    for name, path in modules(root, package).items():
        if name == f"{package}.domain.clock":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and {(node.module, alias.name) for alias in node.names} & TIME_READS
            ):
                found.append(f"{name}:{node.lineno} from {node.module} import")
            if not isinstance(node, ast.Attribute):
                continue
            owner_node = node.value
            if isinstance(owner_node, ast.Name) and (owner_node.id, node.attr) in TIME_READS:
                found.append(f"{name}:{node.lineno} {owner_node.id}.{node.attr}")
            elif node.attr == "time" and (
                (isinstance(owner_node, ast.Name) and owner_node.id.endswith("loop"))
                or (
                    isinstance(owner_node, ast.Call)
                    and isinstance(owner_node.func, ast.Attribute)
                    and owner_node.func.attr in _LOOPS
                )
            ):
                found.append(f"{name}:{node.lineno} loop.time")
    return found


def test_the_product_reads_the_time_only_through_its_clock() -> None:
    """Leases, pacing, pollers and moments all come from the `Clock` passed in, so a test or
    the demo can set it."""
    assert clock_reads(ROOT, "bot") == []


# -- the checks themselves ---------------------------------------------------------------------


def _write(tmp_path: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = tmp_path / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _tree(tmp_path: Path, files: dict[str, str]) -> list[Import]:
    _write(tmp_path, files)
    return imports(modules(tmp_path, "pkg"), "pkg")


TABLE = """
| package | may import |
|---|---|
| `pkg.low` | — |
| `pkg.high` | `pkg.low` |
"""


def test_a_forbidden_import_is_reported_with_its_line(tmp_path: Path) -> None:
    edges = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "import os\n\n\ndef f():\n    from pkg.high import b\n",
            "pkg/high/__init__.py": "",
            "pkg/high/b.py": "from pkg.low import a\nfrom . import c\n",
            "pkg/high/c.py": "",
        },
    )
    assert violations(edges, rules(TABLE)) == ["pkg.low.a:5 imports pkg.high.b"]


def test_a_module_without_a_rule_is_reported(tmp_path: Path) -> None:
    edges = _tree(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/other.py": "from pkg.low import a\n", "pkg/low/a.py": ""},
    )
    assert violations(edges, rules(TABLE)) == ["pkg.other: no rule says what it may import"]


def test_a_circle_through_a_package_init_is_found(tmp_path: Path) -> None:
    edges = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/low/__init__.py": "from pkg.low.a import A\n",
            "pkg/low/a.py": "def f():\n    from pkg.low import B\n",
            "pkg/low/b.py": "",
        },
    )
    assert cycles(edges) == [["pkg.low", "pkg.low.a"]]


def test_a_channel_write_outside_the_outbox_is_reported(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/delivery/__init__.py": "",
            "pkg/delivery/w.py": "async def f(s):\n    await s.post_message('C1', m)\n",
            "pkg/listeners/__init__.py": "",
            "pkg/listeners/a.py": (
                "async def f(s):\n"
                "    await s.upload_file(None, b'', filename='x')\n"
                "    await s.upload_file('C1', b'', filename='x')\n"
                "    await s.update_message('C1', '1.2', m)\n"
            ),
        },
    )
    assert channel_writes(tmp_path, "pkg") == [
        "pkg.listeners.a:3 upload_file",
        "pkg.listeners.a:4 update_message",
    ]


def test_a_reading_of_the_time_outside_the_clock_is_reported(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/domain/__init__.py": "",
            "pkg/domain/clock.py": "import time\n\n\ndef now():\n    return time.time()\n",
            "pkg/a.py": (
                "import asyncio, time\n"
                "from datetime import datetime\n"
                "from time import monotonic\n"
                "def f(clock, loop, at=time.time):\n"
                "    clock.time(), clock.monotonic()\n"
                "    datetime.now(), loop.time(), asyncio.get_running_loop().time()\n"
            ),
        },
    )
    assert clock_reads(tmp_path, "pkg") == [
        "pkg.a:3 from time import",
        "pkg.a:4 time.time",
        "pkg.a:6 datetime.now",
        "pkg.a:6 loop.time",
        "pkg.a:6 loop.time",
    ]


def test_the_benchmarks_share_code_with_the_tests_through_testkit_not_tests() -> None:
    """bench/ imports the product, the lab, fleetmodel and testkit, never tests/."""
    found = [
        f"{path.name}:{line}"
        for path in sorted((ROOT / "bench").glob("*.py"))
        for top, line, _ in top_level_imports(path)
        if top == "tests"
    ]
    assert found == []
