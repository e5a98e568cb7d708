"""Ports for the local servers the tests start: never one the kernel hands to a client socket,
never one another pytest worker hands out, never one already bound."""

from __future__ import annotations

import socket

import pytest

from testkit import servers


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
