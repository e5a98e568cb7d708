"""Ports for the local servers the tests start: never one the kernel hands to a client socket,
never one another pytest worker hands out, never one already bound, and a server whose port
another holds moves on rather than taking that one's answers for its own."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from testkit import servers
from testkit.integration import require_binary
from testkit.prometheus import Prometheus


def _floor() -> int:
    floor = servers._ephemeral_floor()
    if servers._block() is None:
        pytest.skip(f"the ephemeral range starts at {floor}: no room below it for port blocks")
    return floor


def test_each_worker_picks_below_the_ephemeral_range_in_a_block_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    floor = _floor()
    picked: dict[str, set[int]] = {}
    for worker in ("gw0", "gw1", "gw2", ""):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        picked[worker] = {servers.free_port() for _ in range(20)}
    for worker, ports in picked.items():
        assert len(ports) == 20, worker
        assert all(servers._FIRST_PORT <= port < floor for port in ports), (worker, ports)
        others = set().union(*(p for w, p in picked.items() if w != worker))
        assert not ports & others, worker


def test_a_port_someone_listens_on_is_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    _floor()
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    first = servers._block()
    assert first is not None
    monkeypatch.setattr(servers, "_next_port", {first: first})
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", first))
        taken.listen()
        assert servers.free_port() == first + 1


@pytest.mark.integration
async def test_a_server_whose_port_another_server_answers_on_moves_to_another(
    tmp_path: Path,
) -> None:
    """Two processes may pick one port at once (the benches run side by side; a process
    outside the suite's blocks): the one that could not bind it must not take the other's
    answer for its own readiness, and tries another port."""
    binary = require_binary("prometheus", "apt-get install -y prometheus")
    first = Prometheus(binary, tmp_path / "first")
    second = Prometheus(binary, tmp_path / "second")
    await first.start()
    try:
        second.port = first.port
        await second.start()
        try:
            assert second.port != first.port
            assert first.running
            assert second.running
        finally:
            await second.stop()
    finally:
        await first.stop()
