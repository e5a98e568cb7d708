"""The suite's fills kept from run to run (`testkit.kept`): the same fill by the same code and
binary is copied, anything else fills anew, and what no run used lately goes."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from testkit import kept


class Fill:
    """A fill writing one file into `storage`, counting its calls."""

    def __init__(self, storage: Path, text: str) -> None:
        self.storage, self.text, self.calls = storage, text, 0

    async def __call__(self) -> bytes:
        self.calls += 1
        self.storage.mkdir(parents=True, exist_ok=True)
        (self.storage / "chunk").write_text(self.text)
        return f"truth of {self.text}".encode()


def _truths(root: Path) -> list[bytes]:
    """What each whole entry kept under `root` remembers."""
    return sorted(made.read_bytes() for made in root.glob("*/made"))


def _age(root: Path, truth: bytes, seconds: float) -> None:
    """Make the entry remembering `truth` look last used `seconds` ago."""
    (made,) = [made for made in root.glob("*/made") if made.read_bytes() == truth]
    then = time.time() - seconds
    os.utime(made, (then, then))


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "kept"
    folder.mkdir()
    monkeypatch.setattr(kept, "_root", folder)
    return folder


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    path = tmp_path / "prometheus"
    path.write_bytes(b"\x7fELF one build")
    return path


async def test_a_second_fill_of_the_same_is_a_copy(
    root: Path, binary: Path, tmp_path: Path
) -> None:
    first = Fill(tmp_path / "one", "series A")
    assert (
        await kept.kept_storage("fleet A", first.storage, first, binary=str(binary))
        == b"truth of series A"
    )
    again = Fill(tmp_path / "two", "never written")
    assert (
        await kept.kept_storage("fleet A", again.storage, again, binary=str(binary))
        == b"truth of series A"
    )
    assert (first.calls, again.calls) == (1, 0)
    assert (again.storage / "chunk").read_text() == "series A"


async def test_another_fleet_or_another_binary_fills_anew(
    root: Path, binary: Path, tmp_path: Path
) -> None:
    await kept.kept_storage(
        "fleet A", tmp_path / "a", Fill(tmp_path / "a", "A"), binary=str(binary)
    )
    other = Fill(tmp_path / "b", "B")
    assert (
        await kept.kept_storage("fleet B", other.storage, other, binary=str(binary))
        == b"truth of B"
    )
    await asyncio.to_thread(binary.write_bytes, b"\x7fELF another build, another format")
    rebuilt = Fill(tmp_path / "c", "A by the new build")
    await kept.kept_storage("fleet A", rebuilt.storage, rebuilt, binary=str(binary))
    assert (other.calls, rebuilt.calls) == (1, 1)
    assert (rebuilt.storage / "chunk").read_text() == "A by the new build"


async def test_a_fill_that_fails_keeps_nothing(root: Path, binary: Path, tmp_path: Path) -> None:
    async def broken() -> bytes:
        (tmp_path / "half").mkdir()
        (tmp_path / "half" / "chunk").write_text("half of it")
        raise RuntimeError("promtool failed")

    with pytest.raises(RuntimeError):
        await kept.kept_storage("fleet A", tmp_path / "half", broken, binary=str(binary))
    whole = Fill(tmp_path / "whole", "all of it")
    await kept.kept_storage("fleet A", whole.storage, whole, binary=str(binary))
    assert whole.calls == 1


async def test_what_no_run_used_lately_goes_as_a_run_starts(
    root: Path, binary: Path, tmp_path: Path
) -> None:
    for name in ("old", "recent"):
        fill = Fill(tmp_path / name, name)
        await kept.kept_storage(name, fill.storage, fill, binary=str(binary))
    _age(root, b"truth of old", kept.UNUSED_SECONDS + 60)
    kept._prune(root, time.time() - kept.UNUSED_SECONDS)
    assert _truths(root) == [b"truth of recent"]
    assert len(os.listdir(root)) == 2  # the entry and its lock


def test_the_digest_reads_the_simulators_and_the_test_kits_fills() -> None:
    top = Path(kept.__file__).resolve().parent.parent
    read = [module for maker in kept._MAKERS for module in kept._modules(top / maker)]
    assert all(module.is_file() for module in read)
    assert {module.parent.name for module in read} >= {"fleetmodel", "simulator", "testkit"}
    assert top / "testkit" / "fleet_reading.py" in read


async def test_what_queuebot_loaded_is_loaded_again_when_queuebot_changed(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store's fill names the product's code too: another queuebot (a changed schema, a
    changed merge) loads anew what the simulators' code alone would have kept."""
    loaded = Fill(tmp_path / "one", "rows by this queuebot")
    await kept.kept_storage("history A", loaded.storage, loaded, product=True)
    simulated = Fill(tmp_path / "two", "series")
    await kept.kept_storage("history A", simulated.storage, simulated)
    assert simulated.calls == 1  # the simulators' key is another key
    monkeypatch.setattr(kept, "PRODUCT", "lab/queuebot_lab/demo")  # as if queuebot changed
    again = Fill(tmp_path / "three", "rows by another queuebot")
    await kept.kept_storage("history A", again.storage, again, product=True)
    assert again.calls == 1
    assert (again.storage / "chunk").read_text() == "rows by another queuebot"
