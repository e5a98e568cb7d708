"""The second fleet model's ARC scrape written into a real Prometheus through its remote-write
receiver: every sample and series the model wrote is what the server holds, under the labels
the scrape gives."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from fleetmodel import Case, FleetRun, plan, run
from fleetmodel.arc import Shape, requests
from testkit.integration import require_binary
from testkit.prometheus import Prometheus

pytestmark = pytest.mark.integration


def _fleet() -> FleetRun:
    return run(
        plan(Case.LOWERED_MAX, seed=2, types=3, end=datetime(2026, 11, 26, 10, 14, tzinfo=UTC))
    )


@pytest.mark.parametrize("shape", list(Shape))
async def test_the_server_holds_every_sample_and_series_written(
    tmp_path: Path, shape: Shape
) -> None:
    binary = require_binary("prometheus", "apt-get install -y prometheus")
    fleet = _fleet()
    sink, written = requests(fleet, shape)
    bodies = list(sink.bodies())
    # One request a two-hour block: a day's stretch crosses one or two.
    assert fleet.plan.days <= len(bodies) <= 2 * (fleet.plan.days + 1)
    server = Prometheus(binary, tmp_path / "prometheus")
    try:
        await server.start()
        await server.write(bodies)
        end = datetime.fromtimestamp(fleet.plan.end, UTC)
        window = f"{fleet.plan.days + 2}d"
        samples = 0
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{server.url}/api/v1/label/__name__/values") as response:
                names = (await response.json())["data"]
            series = 0
            for name in names:
                (count,) = await server.query(f"count(count_over_time({name}[{window}]))", end)
                (total,) = await server.query(f"sum(count_over_time({name}[{window}]))", end)
                series += int(count["value"][1])
                samples += int(total["value"][1])
        assert samples == written.samples
        assert series == written.series
        assigned = await server.query("gha_assigned_jobs", end)
        assert assigned, "the listener's gauges are there at the run's end"
        labels = set(assigned[0]["metric"])
        scrape = {"actions_github_com_scale_set_name", "namespace", "pod", "job", "instance"}
        assert scrape <= labels and "__name__" in labels
        assert ("cluster" in labels) == (shape is Shape.LEAN)
    finally:
        await server.stop()


async def test_a_request_older_than_the_head_takes_is_refused_whole(tmp_path: Path) -> None:
    # The receiver answers 400 for a sample out of bounds and keeps nothing of the request, so
    # a request answered 204 was stored whole: write the newest block first, then the oldest.
    binary = require_binary("prometheus", "apt-get install -y prometheus")
    fleet = _fleet()
    sink, _ = requests(fleet, Shape.LEAN)
    bodies = list(sink.bodies())
    server = Prometheus(binary, tmp_path / "prometheus")
    try:
        await server.start()
        await server.write(bodies[-1:])
        with pytest.raises(RuntimeError, match="answered 400"):
            await server.write(bodies[:1])
        # Nothing of the refused request is there: the first day's stretch holds no sample.
        first_day = datetime.fromtimestamp(fleet.episode_ends[0], UTC)
        assert await server.query("count_over_time(gha_assigned_jobs[2h])", first_day) == []
        newest = datetime.fromtimestamp(fleet.plan.end, UTC)
        assert await server.query("count_over_time(gha_assigned_jobs[2h])", newest)
    finally:
        await server.stop()
