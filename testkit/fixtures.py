"""The suite's shared fixtures, a pytest plugin both test trees load (`-p testkit.fixtures`):
a clean environment for every test, a real Alertmanager, Prometheus filled with a simulated
fleet, and the session's shared fleets."""

from __future__ import annotations

import asyncio
import os
import pickle
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Iterable, Iterator
from pathlib import Path
from typing import Protocol

import pytest
import pytest_asyncio

from fleetmodel.series import Out, Requests
from queuebot_lab.simulator import (
    MetricsShape,
    Scenario,
    SimulationSpec,
    Truth,
    simulate_series,
)
from testkit.alertmanager import Alertmanager
from testkit.fleets import Fleets, fleet_spec
from testkit.integration import require_binary
from testkit.kept import configure as configure_kept
from testkit.kept import kept_prometheus
from testkit.memory import collect_less
from testkit.prometheus import Prometheus
from testkit.timing import in_the_suite

_CLEARED_PREFIXES = ("SLACK_", "GRAFANA_", "QUEUEBOT_", "PROMETHEUS_", "GITHUB_")
_CLEARED_NAMES = {
    "HOST",
    "PORT",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
}


def pytest_configure(config: pytest.Config) -> None:
    """The suite's bots run their timings ten times as fast (`testkit.timing`), its garbage
    collector walks the fleets it builds less often (`testkit.memory`), the fleets it fills
    Prometheus with are kept from run to run (`testkit.kept`), and its processes share a
    cache directory of their own, kept in pytest's cache too (the demo's recorded fleet is
    simulated once for its simulator's code, not once in each process that starts a demo, nor
    read from the developer's cache)."""
    in_the_suite()
    collect_less()
    configure_kept(config)
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the workers inherit the controller's
        pytest_cache = getattr(config, "cache", None)
        if pytest_cache is not None:
            os.environ["XDG_CACHE_HOME"] = str(pytest_cache.mkdir("xdg"))
        else:
            cache = tempfile.mkdtemp(prefix="queuebot-suite-cache-")
            config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))
            os.environ["XDG_CACHE_HOME"] = cache


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No setting of the developer's shell leaks into a test (slack-sdk reads proxy variables)."""
    for name in list(os.environ):
        if name.startswith(_CLEARED_PREFIXES) or name in _CLEARED_NAMES:
            if name == "QUEUEBOT_REQUIRE_INTEGRATION":
                continue
            monkeypatch.delenv(name)
    yield


@pytest.fixture
async def alertmanager(tmp_path: Path) -> AsyncIterator[Alertmanager]:
    """A real Alertmanager at Grafana's path, own port and storage; stopped even on failure."""
    binary = require_binary("prometheus-alertmanager", "apt-get install -y prometheus-alertmanager")
    instance = Alertmanager(binary, tmp_path / "alertmanager")
    try:
        await instance.start()
        yield instance
    finally:
        await instance.stop()


class PrometheusFactory(Protocol):
    """Builds a Prometheus holding a simulated fleet: `await make(spec)` -> (server, truth)."""

    def __call__(
        self, spec: SimulationSpec, shape: MetricsShape = MetricsShape.ARC
    ) -> Awaitable[tuple[Prometheus, Truth]]: ...


def _series(times_ms: list[int]) -> Out:
    """Where a simulation's series go: remote-write requests to a Prometheus."""
    return Out(Requests(), [ms / 1000 for ms in times_ms], {})


async def _filled(
    binary: str, workdir: Path, spec: SimulationSpec, shape: MetricsShape
) -> tuple[Prometheus, Truth]:
    """A Prometheus in `workdir` holding `spec`'s fleet in `shape`, started. The fleet is
    simulated and taken through the remote-write receiver (the server stopped after, the
    write-ahead log whole), or its storage copied from an earlier fill (`testkit.kept`)."""
    instance = Prometheus(binary, workdir)

    def series() -> tuple[bytes, Iterable[bytes]]:
        truth, out = simulate_series(spec, _series, shape)
        return pickle.dumps(truth), out.sink.bodies()

    try:
        kept = await kept_prometheus(instance, f"fleet {spec!r} {shape}", series)
        truth = pickle.loads(kept)  # noqa: S301 - written by this checkout's own fill
        await instance.start()
    except BaseException:
        await instance.stop()
        raise
    return instance, truth


@pytest.fixture
async def prometheus_for(tmp_path: Path) -> AsyncIterator[PrometheusFactory]:
    """Simulate a fleet into a real Prometheus of tmp_path and start it (a fleet filled
    before by this code is copied instead); every server made is stopped at teardown,
    even when the test fails."""
    binary = require_binary("prometheus", "apt-get install -y prometheus")
    made: list[Prometheus] = []

    async def make(
        spec: SimulationSpec, shape: MetricsShape = MetricsShape.ARC
    ) -> tuple[Prometheus, Truth]:
        workdir = tmp_path / f"prometheus-{len(made)}"
        workdir.mkdir()
        instance, truth = await _filled(binary, workdir, spec, shape)
        made.append(instance)
        return instance, truth

    try:
        yield make
    finally:
        for instance in made:
            await instance.stop()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def fleets(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Fleets]:
    """One Prometheus per scenario and shape of the shared fleets (`testkit.fleets`), made
    when first asked for (filled once in the run, whichever worker asks first) and kept for
    the session; tests using it run `in_session_loop`."""
    binary = require_binary("prometheus", "apt-get install -y prometheus")
    made: dict[tuple[Scenario, MetricsShape], tuple[Prometheus, Truth]] = {}
    lock = asyncio.Lock()

    async def get(
        scenario: Scenario, shape: MetricsShape = MetricsShape.ARC
    ) -> tuple[Prometheus, Truth]:
        async with lock:
            if (scenario, shape) not in made:
                workdir = tmp_path_factory.mktemp(f"fleet-{scenario}-{shape}")
                made[(scenario, shape)] = await _filled(
                    binary, workdir, fleet_spec(scenario), shape
                )
            return made[(scenario, shape)]

    try:
        yield get
    finally:
        for instance, _ in made.values():
            await instance.stop()
