"""Reading the import graph of a package tree and checking it against ARCHITECTURE.md's rules.

Pure functions over source files: every `import` and `from … import` anywhere in a module
(inside functions and `if TYPE_CHECKING:` too) is an edge to the module it names.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: A row of the rules table: | `bot.x` | `bot.y`, `bot.z.w` | (— for none).
_ROW = re.compile(r"^\|\s*`(?P<package>[\w.]+)`\s*\|(?P<allowed>[^|]*)\|")
_NAME = re.compile(r"`([\w.*]+)`")


@dataclass(frozen=True)
class Import:
    module: str
    imported: str
    line: int


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of `package` (a directory under `root`), by dotted name."""
    found: dict[str, Path] = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(known: Mapping[str, Path], package: str) -> list[Import]:
    """Every import of a module of `package` by a module of `package`."""
    edges: list[Import] = []
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(name, node.module, node.level, is_package)
                # `from bot.x import y` names the module bot.x.y when there is one.
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                    for alias in node.names
                ]
            for target in targets:
                resolved = _innermost(target, known)
                if resolved is not None and resolved.split(".")[0] == package:
                    edges.append(Import(name, resolved, node.lineno))
    return edges


def top_level_imports(path: Path) -> list[tuple[str, int, bool]]:
    """Every absolute import in the file at `path`: the top-level package it names, its line,
    and whether it sits inside a function (imported when that runs, not with the module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for child in ast.walk(node)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        else:
            continue
        found += [(name.split(".")[0], node.lineno, id(node) in inside) for name in names]
    return found


def _absolute(module: str, imported: str | None, level: int, is_package: bool) -> str:
    if level == 0:
        return imported or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    base = parts[: len(parts) - level + 1]
    return ".".join([*base, imported] if imported else base)


def _innermost(target: str, known: Mapping[str, Path]) -> str | None:
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def rules(document: str) -> dict[str, tuple[str, ...]]:
    """The rules table of ARCHITECTURE.md: package → the packages (or modules) it may import."""
    table: dict[str, tuple[str, ...]] = {}
    for line in document.splitlines():
        row = _ROW.match(line.strip())
        if row:
            table[row["package"]] = tuple(_NAME.findall(row["allowed"]))
    return table


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def owner(module: str, table: Mapping[str, Iterable[str]]) -> str | None:
    """The most specific package of the table that `module` belongs to."""
    matching = [package for package in table if _within(module, package)]
    return max(matching, key=len) if matching else None


def violations(edges: Iterable[Import], table: Mapping[str, Iterable[str]]) -> list[str]:
    """Imports the table does not allow, as `module:line imports target` lines.

    A module may always import within its own package (the table's most specific entry for
    it); any other import must fall within one of the entries its package lists.
    """
    found: list[str] = []
    for edge in edges:
        package = owner(edge.module, table)
        if package is None:
            found.append(f"{edge.module}: no rule says what it may import")
            continue
        if _within(edge.imported, package):
            continue
        if any(_within(edge.imported, allowed) for allowed in table[package]):
            continue
        found.append(f"{edge.module}:{edge.line} imports {edge.imported}")
    return found


def cycles(edges: Iterable[Import]) -> list[list[str]]:
    """The import circles among modules (strongly connected components of more than one
    module, or a module importing itself), each sorted."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.module, set()).add(edge.imported)
        graph.setdefault(edge.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
