"""What a wheel of queuebot holds: every package under bot/ is listed in pyproject.toml, or a
plain `pip install .` would leave it out (an editable install would not show it)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_in_the_wheel() -> None:
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "bot").rglob("__init__.py")
    }
    assert found - listed == set()
