"""What a wheel of queuebot holds: every package under bot/ is listed in pyproject.toml, or a
plain `pip install .` would leave it out (an editable install would not show it); and nothing
of the lab (lab/: the stand-ins, the simulator, the demo)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
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


def test_the_wheel_holds_no_stand_in_simulator_or_demo(tmp_path: Path) -> None:
    """A wheel built from the repository (offline, with the setuptools the dev install brings)
    holds every module of the product and its templates, and none of the lab's modules; its
    metadata carries the README, the front door, as the project's description."""
    # Built from a copy: setuptools leaves build/ behind in the tree it builds, and a stale one
    # would put back in the wheel modules long gone from the source.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("bot", "templates"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(  # noqa: S603 - our own interpreter and pip
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("queuebot-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    product = {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "bot").rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert product <= set(names) and "bot/templates/_macros.j2" in names
    lab = [n for n in names if re.search(r"(^|/)(sandbox|simulator|demo|queuebot_lab)(/|\\.py)", n)]
    assert lab == []
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    described = zipfile.ZipFile(wheel).read(metadata).decode("utf-8")
    assert "Description-Content-Type: text/markdown" in described
    assert (ROOT / "README.md").read_text(encoding="utf-8").strip() in described
