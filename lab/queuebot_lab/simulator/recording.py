"""A simulation's jobs kept on disk: the same spec, simulated by the same code, is read back in
a second instead of simulated again (a week of a fleet takes tens of seconds).

The recording lives in queuebot's cache directory (`$XDG_CACHE_HOME/queuebot`, else
`~/.cache/queuebot`), named for a digest of the spec and of the simulator's own source, so a
changed simulator never reads an older recording. It is gzipped JSON, never pickle: reading
one runs no code. One process simulates while others wanting the same recording wait for it
(a lock beside it); a cache that cannot be read or written is simulated around, silently.
Only the newest few recordings are kept, so upgrades do not pile them up.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import gzip
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from queuebot_lab.simulator.deliveries import SimulatedJob, SimulatedRunner
from queuebot_lab.simulator.simulate import FleetJobs, simulate_jobs
from queuebot_lab.simulator.spec import Scenario, SimulationSpec, Truth

#: Bumped when the file's layout changes.
LAYOUT = 1
#: Recordings kept: the newest (the demo's, a bench's); older simulators' go as new ones come.
KEPT = 4


def cache_dir() -> Path:
    """Where queuebot keeps what it can make again (the XDG base directory convention)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "queuebot"


def _digest(spec: SimulationSpec) -> str:
    """The spec and every module of the simulator, as they are now."""
    digest = hashlib.sha256(f"{LAYOUT}:{spec!r}".encode())
    for module in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(module.name.encode() + b"\0" + module.read_bytes())
    return digest.hexdigest()[:24]


def _encoded(fleet: FleetJobs) -> dict[str, Any]:
    truth = fleet.truth
    start = truth.problem_start
    return {
        "layout": LAYOUT,
        "truth": [
            truth.scenario.value,
            truth.primary_cause,
            truth.affected,
            None if start is None else start.isoformat(),
        ],
        "end": fleet.end,
        "jobs": [
            [
                j.id,
                j.run_id,
                j.runner_type,
                j.repository,
                j.workflow,
                j.name,
                j.created,
                j.started,
                j.completed,
                j.failed,
                j.runner_id,
                j.runner_name,
            ]
            for j in fleet.jobs
        ],
        "runners": [[r.id, r.name, r.runner_type, r.online, r.busy, r.os] for r in fleet.runners],
    }


def _decoded(data: dict[str, Any]) -> FleetJobs:
    if data.get("layout") != LAYOUT:
        raise ValueError("another layout")
    scenario, primary, affected, start = data["truth"]
    truth = Truth(
        Scenario(scenario),
        primary,
        dict(affected),
        None if start is None else datetime.fromisoformat(start),
    )
    return FleetJobs(
        truth,
        float(data["end"]),
        tuple(SimulatedJob(*job) for job in data["jobs"]),
        tuple(SimulatedRunner(*runner) for runner in data["runners"]),
    )


def _read(path: Path) -> FleetJobs | None:
    # Hundreds of thousands of new objects and not one cycle among them: the collector
    # would walk them over and over while they are made, for most of the time it takes.
    collecting = gc.isenabled()
    gc.disable()
    try:
        with gzip.open(path, "rt", encoding="utf-8") as file:
            return _decoded(json.load(file))
    except (OSError, EOFError, ValueError, TypeError, KeyError):
        return None
    finally:
        if collecting:
            gc.enable()


def _write(path: Path, fleet: FleetJobs) -> None:
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".part")
    try:
        with os.fdopen(handle, "wb") as raw, gzip.open(raw, "wt", compresslevel=1) as file:
            json.dump(_encoded(fleet), file, separators=(",", ":"))
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


@contextlib.contextmanager
def _locked(lock: Path) -> Iterator[None]:
    with lock.open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        yield


def recorded_jobs(spec: SimulationSpec, directory: Path | None = None) -> FleetJobs:
    """`simulate_jobs(spec)`, read from the cache (`directory`, else `cache_dir()`) when this
    simulator recorded it before."""
    directory = cache_dir() if directory is None else directory
    path = directory / f"fleet-{_digest(spec)}.json.gz"
    found = _read(path)
    if found is not None:
        return found
    with contextlib.ExitStack() as stack:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            stack.enter_context(_locked(path.with_suffix(".lock")))
        except OSError:
            return simulate_jobs(spec)
        found = _read(path)  # another process may have recorded it meanwhile
        if found is not None:
            return found
        fleet = simulate_jobs(spec)
        with contextlib.suppress(OSError):
            _write(path, fleet)
            _prune(directory)
        return fleet


def _prune(directory: Path) -> None:
    """Forget all but the `KEPT` newest recordings (each is megabytes)."""
    found = sorted(
        directory.glob("fleet-*.json.gz"), key=lambda path: path.stat().st_mtime, reverse=True
    )
    for old in found[KEPT:]:
        old.unlink(missing_ok=True)
        old.with_suffix(".lock").unlink(missing_ok=True)
