"""cAdvisor's counters for ARC's runner pods (`<scale set>-<x>-runner-<y>`, container `runner`):
CPU periods, throttled periods and OOM events, scraped from the kubelet while a pod lives."""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

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
            pods.append((runner, runner.online, first, last))
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
    # Each pod's labels and its CPU periods at each time it lives: its periods elapse at a
    # tenth of a second's worth while it runs a job, at half that while it only lives.
    counted = []
    for runner, online, first, last in pods:
        labels = {
            "namespace": "arc-runners",
            "pod": runner.name,
            "container": "runner",
            "image": "ghcr.io/actions/actions-runner:2.328.0",
            "instance": f"ip-10-1-{runner.id % 200}-{runner.id % 97}.ec2.internal",
            "job": "kubelet",
            "metrics_path": "/metrics/cadvisor",
        }
        busy_from, busy_until = runner.busy_from, runner.busy_until
        periods = [
            10.0 * max(0.0, min(t, busy_until or t) - (busy_from or t)) + (t - online) * 0.5
            for t in w.times[first:last]
        ]
        counted.append((runner, first, last, labels, periods))
    for metric, family, text in families:
        w.family(family, "counter", text)
        for runner, first, last, labels, periods in counted:
            values: Sequence[float]
            if metric.endswith("throttled_periods_total"):
                share = runner.throttled or 0.03
                values = [math.floor(p * share) for p in periods]
            elif metric.endswith("periods_total"):
                values = list(map(math.floor, periods))
            else:
                # The OOM counter is 1 from the first time at or after the kill.
                killed = (
                    last if runner.oom_at is None else bisect.bisect_left(w.times, runner.oom_at)
                )
                killed = min(max(killed, first), last)
                values = [0.0] * (killed - first) + [1.0] * (last - killed)
            w.write(metric, labels, values, first)
