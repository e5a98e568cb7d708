"""cAdvisor's counters for ARC's runner pods (`<scale set>-<x>-runner-<y>`, container `runner`):
CPU periods, throttled periods and OOM events, scraped from the kubelet while a pod lives."""

from __future__ import annotations

import bisect
import math

from fleetmodel.engine import FleetRun
from fleetmodel.series import Out, first_of


def write_pods(w: Out, fleet: FleetRun) -> None:
    """The runner containers' CPU periods, throttled periods and OOM events, while they live."""
    pods = []
    for runner in fleet.runners:
        if runner.online is None:
            continue
        end = first_of(runner.lost, runner.gone) or math.inf
        first = bisect.bisect_left(w.times, runner.online)
        last = bisect.bisect_left(w.times, end)
        if first < last:
            pods.append((runner, first, last))
    families = (
        (
            "container_cpu_cfs_periods_total",
            "container_cpu_cfs_periods",
            "Number of elapsed enforcement period intervals.",
        ),
        (
            "container_cpu_cfs_throttled_periods_total",
            "container_cpu_cfs_throttled_periods",
            "Number of throttled period intervals.",
        ),
        (
            "container_oom_events_total",
            "container_oom_events",
            "Count of out of memory events observed for the container",
        ),
    )
    for metric, family, text in families:
        w.family(family, "counter", text)
        for runner, first, last in pods:
            labels = {
                "namespace": "arc-runners",
                "pod": runner.name,
                "container": "runner",
                "image": "ghcr.io/actions/actions-runner:2.328.0",
                "instance": f"ip-10-1-{runner.id % 200}-{runner.id % 97}.ec2.internal",
                "job": "kubelet",
                "metrics_path": "/metrics/cadvisor",
            }
            values = []
            for t in w.times[first:last]:
                busy = max(0.0, min(t, runner.busy_until or t) - (runner.busy_from or t))
                periods = 10.0 * busy + (t - runner.online) * 0.5
                if metric.endswith("throttled_periods_total"):
                    share = runner.throttled or 0.03
                    values.append(math.floor(periods * share))
                elif metric.endswith("periods_total"):
                    values.append(math.floor(periods))
                else:
                    values.append(1.0 if runner.oom_at is not None and runner.oom_at <= t else 0.0)
            w.write(metric, labels, values, first)
