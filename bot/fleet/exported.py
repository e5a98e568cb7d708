"""The fleet's own numbers on `/metrics`, per runner type: the queueing alert's two figures, the
queue time's histogram, what jobs did, and the runners GitHub lists.

Everything comes from the store (or, for the runners, GitHub's answer the app already holds),
never from what one process saw: every replica's scrape tells the same fleet, so a rule over
several replicas takes `max by (runner_type)` and sees one truth, and the counters (totals
since the store began, `bot.store.fleet_totals_sql`) never go back, whichever replica answers.
The runners of several organizations are counted together (a type two of them have, summed);
an organization whose list is not had is left out until it is.

The runner types are those that count, by the alert's rules (the YAML file's `jobs:`:
exclusions and repositories; jobs queued more than `queued_after_seconds` and less than
`max_queued_age_seconds`). At most `jobs.metrics_runner_types` of them are exported under their
own name, the first seen first; the rest are summed as `other`, so a label never takes more
values than that and a type never moves from one series to another.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)
from prometheus_client.metrics_core import Metric

from bot.domain.clock import SYSTEM, Clock
from bot.domain.jobs import QUEUE_TIME_BUCKETS
from bot.fleet.sources.jobs_config import JobsConfig
from bot.fleet.sources.runner_supply import RunnerFleet, RunnersSource
from bot.store import FleetTotals, QueueCount, Store, bucket_part
from bot.telemetry.metrics import FLEET

#: The label value of the runner types past the limit.
OTHER = "other"
#: What each total is exported as.
COUNTED = {
    "queued": "queuebot_jobs_queued",
    "started": "queuebot_jobs_started",
    "completed": "queuebot_jobs_completed",
    "run_seconds": "queuebot_job_run_seconds",
}
RUNNER_STATES = {
    "online": "queuebot_runners_online",
    "offline": "queuebot_runners_offline",
    "busy": "queuebot_runners_busy",
}


def _gauge(name: str) -> GaugeMetricFamily:
    _, text, labels = FLEET[name]
    return GaugeMetricFamily(name, text, labels=list(labels))


def _counter(name: str) -> CounterMetricFamily:
    _, text, labels = FLEET[name]
    return CounterMetricFamily(name, text, labels=list(labels))


@dataclass(frozen=True)
class Naming:
    """Which label value each runner type is exported under."""

    own: frozenset[str]

    def __call__(self, runner_type: str) -> str:
        return runner_type if runner_type in self.own else OTHER


def naming(totals: FleetTotals, config: JobsConfig) -> Naming:
    """The first `config.metrics_runner_types` types that count, by when first seen."""
    counted = [name for name in totals.types if not config.leaves_out(name)]
    return Naming(frozenset(counted[: config.metrics_runner_types]))


def queue_families(
    counts: Iterable[QueueCount], names: Naming, config: JobsConfig, now: float
) -> list[Metric]:
    """The alert's figures per type: jobs waiting, and the longest wait; every type exported
    has both, 0 when nothing waits."""
    jobs: dict[str, int] = dict.fromkeys(sorted(names.own), 0)
    oldest: dict[str, float] = {}
    for count in counts:
        if not config.counts(count.runner_type, count.repository):
            continue
        name = names(count.runner_type)
        jobs[name] = jobs.get(name, 0) + count.jobs
        oldest[name] = min(oldest.get(name, now), count.oldest_created)
    queued = _gauge("queuebot_queued_jobs")
    longest = _gauge("queuebot_queue_longest_wait_seconds")
    for name, number in jobs.items():
        queued.add_metric([name], number)
        longest.add_metric([name], max(now - oldest.get(name, now), 0.0))
    return [queued, longest]


def total_families(totals: FleetTotals, names: Naming, config: JobsConfig) -> list[Metric]:
    """The counters and the queue time's histogram, summed per label value."""
    summed: dict[tuple[str, str, str], float] = defaultdict(float)
    for runner_type, what, part, value in totals.totals:
        if runner_type and config.leaves_out(runner_type):
            continue
        summed[(names(runner_type), what, part)] += value
    exported = sorted(names.own) + ([OTHER] if any(n == OTHER for n, _, _ in summed) else [])
    families: list[Metric] = []
    for what, name in COUNTED.items():
        family = _counter(name)
        if what == "completed":
            for (kind, seen, part), value in sorted(summed.items()):
                if seen == what:
                    family.add_metric([kind, part], value)
        else:
            for kind in exported:
                family.add_metric([kind], summed.get((kind, what, ""), 0.0))
        families.append(family)
    _, text, labels = FLEET["queuebot_job_queue_seconds"]
    histogram = HistogramMetricFamily("queuebot_job_queue_seconds", text, labels=list(labels))
    for kind in exported:
        buckets, running = [], 0.0
        for bound in QUEUE_TIME_BUCKETS:
            running += summed.get((kind, "queue_seconds", bucket_part(bound)), 0.0)
            buckets.append((repr(bound), running))  # 10.0, as prometheus_client writes it
        running += summed.get((kind, "queue_seconds", bucket_part(math.inf)), 0.0)
        buckets.append(("+Inf", running))
        histogram.add_metric([kind], buckets, summed.get((kind, "queue_seconds", "sum"), 0.0))
    families.append(histogram)
    return families


def runner_families(fleet: RunnerFleet, names: Naming, config: JobsConfig) -> list[Metric]:
    """Runners online, offline and busy per type (a runner counts under each of its types)."""
    summed: dict[tuple[str, str], int] = defaultdict(int)
    for supply in fleet.supply.values():
        if config.leaves_out(supply.runner_type):
            continue
        name = names(supply.runner_type)
        summed[(name, "online")] += supply.online
        summed[(name, "offline")] += supply.offline
        summed[(name, "busy")] += supply.busy
    families: list[Metric] = []
    for what, metric in RUNNER_STATES.items():
        family = _gauge(metric)
        for (name, seen), value in sorted(summed.items()):
            if seen == what:
                family.add_metric([name], value)
        families.append(family)
    return families


class FleetExport:
    """What `/metrics` adds about the fleet, read anew at each scrape."""

    def __init__(
        self,
        store: Store,
        config: JobsConfig,
        runners: RunnersSource | None = None,
        clock: Clock = SYSTEM,
    ) -> None:
        self._store = store
        self._config = config
        self._runners = runners
        self._clock = clock

    async def families(self) -> list[Metric]:
        """The fleet's families now (StoreError when the store cannot be read)."""
        now = self._clock.now().timestamp()  # the moment the fleet is shown at
        config = self._config
        totals = await self._store.fleet_totals()
        counts = await self._store.queue_counts(
            now, config.queued_after_seconds, config.max_queued_age_seconds
        )
        names = naming(totals, config)
        families = queue_families(counts, names, config, now)
        families += total_families(totals, names, config)
        # GitHub's latest answer, never waited for (an old one starts the next listing).
        fleet = self._runners.latest() if self._runners is not None else None
        if fleet is not None:
            families += runner_families(fleet, names, config)
        return families
