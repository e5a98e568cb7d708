"""The project's documentation as the tests read it: the README and the pages under docs/, their
fenced code blocks, their sections, their relative links and the anchors GitHub gives their
headings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

#: The first line of a ```yaml block that is not a QUEUEBOT_CONFIG file but a piece of another
#: program's (prometheus.yml, a rule file): it is only checked to be YAML.
FRAGMENT = "# fragment"

_FENCE = "```"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) outside code; images too. Autolinks (<https://…>) are not relative.
_LINK = re.compile(r"\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# A code span may run over lines of one paragraph, never across a blank line.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n\n).)+?)(?<!`)\1(?!`)", re.DOTALL)


def pages() -> list[Path]:
    """README.md, then every page under docs/ (by name)."""
    return [README, *sorted(DOCS.glob("*.md"))]


def name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language and its text without the fence's
    indentation."""

    page: Path
    line: int
    language: str
    body: str

    @property
    def where(self) -> str:
        return f"{name(self.page)}:{self.line}"

    @property
    def is_fragment(self) -> bool:
        return self.body.lstrip().startswith(FRAGMENT)


def blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a page, indented ones (inside a list item) included."""
    found: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip()
        if not stripped.startswith(_FENCE):
            index += 1
            continue
        indent = len(line) - len(stripped)
        language = stripped[len(_FENCE) :].strip()
        body: list[str] = []
        index += 1
        while index < len(lines) and lines[index].strip() != _FENCE:
            text = lines[index]
            body.append(text[min(indent, len(text) - len(text.lstrip())) :])
            index += 1
        found.append(Block(page, index - len(body), language, "\n".join(body) + "\n"))
        index += 1
    return found


def all_blocks(*languages: str) -> list[Block]:
    return [b for page in pages() for b in blocks(page) if b.language in languages]


def _outside_blocks(page: Path) -> list[str]:
    kept: list[str] = []
    inside = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.strip().startswith(_FENCE):
            inside = not inside
        elif not inside:
            kept.append(line)
    return kept


def prose(page: Path) -> str:
    """A page without its fenced blocks and code spans: where its links are."""
    return _CODE_SPAN.sub("", "\n".join(_outside_blocks(page)))


def headings(page: Path) -> list[tuple[int, str]]:
    """(level, text) of each heading, outside code blocks."""
    found = []
    for line in _outside_blocks(page):
        match = _HEADING.match(line)
        if match:
            found.append((len(match.group(1)), match.group(2)))
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped (hyphens kept),
    spaces as hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor; a repeated one gets `-1`, `-2`, … as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for _, text in headings(page):
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    """The targets of a page's relative links (no scheme), in order."""
    return [
        target
        for target in _LINK.findall(prose(page))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE)
    ]


def section(page: Path, heading: str) -> str:
    """The text under a heading, up to the next heading of its level or above."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = level = None
    inside = False
    for index, line in enumerate(lines):
        if line.strip().startswith(_FENCE):
            inside = not inside
        match = None if inside else _HEADING.match(line)
        if not match:
            continue
        if start is None and match.group(2) == heading:
            start, level = index + 1, len(match.group(1))
        elif start is not None and level is not None and len(match.group(1)) <= level:
            return "\n".join(lines[start:index])
    if start is None:
        raise LookupError(f"{name(page)} has no heading {heading!r}")
    return "\n".join(lines[start:])


def settings_examples() -> list[Block]:
    """Every YAML example of the file QUEUEBOT_CONFIG names, across the documentation."""
    return [b for b in all_blocks("yaml") if not b.is_fragment]
