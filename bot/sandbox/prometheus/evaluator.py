"""The query pack's queries over a simulated fleet's history, one hand-written evaluation each,
computed as Prometheus computes them (`bot.sandbox.prometheus.promql`)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bot.diagnostics.measures import Signal
from bot.sandbox.prometheus.promql import (
    LOOKBACK_MS,
    Samples,
    SeriesLabels,
    Span,
    add_in_order,
    bucket_quantile,
    go_divide,
)
from bot.simulator import BUCKETS, FleetHistory, RunnerTypeHistory

#: The default pack's label_replace from a runner pod's name to its runner type.
_POD_TO_TYPE = re.compile(r"(.+)-[a-z0-9]+-runner-[a-z0-9]+")
_BOUNDS = (*map(float, BUCKETS), math.inf)
_GAUGE_SIGNALS = {
    Signal.RUNNING: "gha_running_jobs",
    Signal.REGISTERED: "gha_registered_runners",
    Signal.BUSY: "gha_busy_runners",
    Signal.IDLE: "gha_idle_runners",
    Signal.DESIRED: "gha_desired_runners",
    Signal.MIN_RUNNERS: "gha_min_runners",
    Signal.MAX_RUNNERS: "gha_max_runners",
    Signal.PENDING_RUNNERS: "gha_controller_pending_ephemeral_runners",
    Signal.FAILED_RUNNERS: "gha_controller_failed_ephemeral_runners",
}


@dataclass(frozen=True)
class _Workflow:
    ref: str
    started: Sequence[int]
    execution: tuple[Sequence[int], ...]  # one column per bound of _BOUNDS


@dataclass(frozen=True)
class _RunnerType:
    """One runner type's columns, per-workflow ones in the order Prometheus lists the series
    (by job_workflow_ref), so that sums add in the same order."""

    name: str
    history: RunnerTypeHistory
    workflows: tuple[_Workflow, ...]


class Evaluator:
    """The pack's queries over one simulated history, at one time (Unix ms) each."""

    def __init__(self, history: FleetHistory, window_ms: int) -> None:
        self.history = history
        self.window_ms = window_ms
        self.types = [
            _RunnerType(
                t.name,
                t,
                tuple(
                    sorted(
                        (
                            _Workflow(ref, t.started[i], t.execution[i][: len(_BOUNDS)])
                            for i, ref in enumerate(t.workflows)
                        ),
                        key=lambda w: w.ref,
                    )
                ),
            )
            for t in history.runner_types
        ]
        # cAdvisor's series by runner type as the pack's label_replace derives it from the pod
        # name, in pod order; a pod it cannot map lands in the group without a name.
        pods: dict[str | None, list[tuple[str, RunnerTypeHistory, int]]] = {}
        for t in history.runner_types:
            for i, pod in enumerate(t.pods):
                found = _POD_TO_TYPE.fullmatch(pod)
                pods.setdefault(found.group(1) if found else None, []).append((pod, t, i))
        self.pods = {name: sorted(found, key=lambda p: p[0]) for name, found in pods.items()}

    # -- selectors -------------------------------------------------------------------------------

    def _at(self, t: int) -> int | None:
        """The index of the latest sample within the lookback delta of `t`."""
        h = self.history
        if t < h.first_ms:
            return None
        index = min(h.samples - 1, (t - h.first_ms) // h.step_ms)
        return index if t - (h.first_ms + index * h.step_ms) <= LOOKBACK_MS else None

    def _span(self, t: int) -> Span | None:
        """The samples of `[window]` at `t`; None with fewer than two (no rate then)."""
        h = self.history
        range_start = t - self.window_ms
        lo = max(0, -((h.first_ms - range_start) // h.step_ms))
        hi = min(h.samples - 1, (t - h.first_ms) // h.step_ms) if t >= h.first_ms else -1
        if hi - lo < 1:
            return None
        first, last = h.first_ms + lo * h.step_ms, h.first_ms + hi * h.step_ms
        sampled = (last - first) / 1000
        return Span(
            lo=lo,
            hi=hi,
            to_start=(first - range_start) / 1000,
            to_end=(t - last) / 1000,
            sampled=sampled,
            average=sampled / (hi - lo),
            range_seconds=self.window_ms / 1000,
        )

    # -- the queries -------------------------------------------------------------------------

    def evaluate(self, signal: Signal, t: int) -> Samples:
        """The signal's query at `t` (ms), answered as at the end of the history after it."""
        t = min(t, self.history.end_ms)
        if signal in _GAUGE_SIGNALS:
            return self._gauge(_GAUGE_SIGNALS[signal], t)
        if signal is Signal.QUEUED:
            return self._queued(t)
        span = self._span(t)
        if span is None:
            return []
        match signal:
            case Signal.STARTED_PER_MINUTE:
                return self._started(span, by_workflow=False)
            case Signal.STARTED_BY_WORKFLOW:
                return self._started(span, by_workflow=True)
            case Signal.MAX_WAIT:
                return self._startup_quantile(0.99, span)
            case Signal.DURATION_P50:
                return self._execution_quantile(0.5, span, by_workflow=False)
            case Signal.DURATION_P90:
                return self._execution_quantile(0.9, span, by_workflow=False)
            case Signal.DURATION_P90_BY_WORKFLOW:
                return self._execution_quantile(0.9, span, by_workflow=True)
            case Signal.CPU_THROTTLED:
                return self._throttled(span)
            case Signal.OOM_KILLS:
                return self._ooms(span)
        raise AssertionError(f"no evaluation for {signal}")

    def _gauge(self, metric: str, t: int) -> Samples:
        """sum by (name) (<gauge>)"""
        index = self._at(t)
        if index is None:
            return []
        return [({"name": r.name}, float(r.history.gauges[metric][index])) for r in self.types]

    def _queued(self, t: int) -> Samples:
        """sum by (name) (clamp_min(gha_assigned_jobs - gha_running_jobs, 0))"""
        index = self._at(t)
        if index is None:
            return []
        samples = []
        for r in self.types:
            assigned = float(r.history.gauges["gha_assigned_jobs"][index])
            running = float(r.history.gauges["gha_running_jobs"][index])
            samples.append(({"name": r.name}, max(assigned - running, 0.0)))
        return samples

    def _started(self, span: Span, *, by_workflow: bool) -> Samples:
        """60 * sum by (name) (rate(gha_started_jobs_total[w])), or by workflow too, with the
        workflow copied into the label `workflow` by label_replace."""
        samples: Samples = []
        for r in self.types:
            rates = [span.extrapolated(w.started, True) for w in r.workflows]
            if by_workflow:
                for w, rate in zip(r.workflows, rates, strict=True):
                    labels = {"name": r.name, "job_workflow_ref": w.ref, "workflow": w.ref}
                    samples.append((labels, 60 * rate))
            else:
                samples.append(({"name": r.name}, 60 * add_in_order(rates)))
        return samples

    def _startup_quantile(self, q: float, span: Span) -> Samples:
        """histogram_quantile(q, sum by (name, le) (rate(…startup…_bucket[w])))"""
        samples: Samples = []
        for r in self.types:
            columns = r.history.startup[: len(_BOUNDS)]
            counts = [span.extrapolated(column, True) for column in columns]
            samples.append(({"name": r.name}, bucket_quantile(q, _BOUNDS, counts)))
        return samples

    def _execution_quantile(self, q: float, span: Span, *, by_workflow: bool) -> Samples:
        """histogram_quantile(q, sum by (name, le) (rate(…execution…_bucket[w]))), or by
        (name, job_workflow_ref, le) with the label `workflow` added by label_replace."""
        samples: Samples = []
        for r in self.types:
            rates = [[span.extrapolated(c, True) for c in w.execution] for w in r.workflows]
            if by_workflow:
                for w, counts in zip(r.workflows, rates, strict=True):
                    labels = {"name": r.name, "job_workflow_ref": w.ref, "workflow": w.ref}
                    samples.append((labels, bucket_quantile(q, _BOUNDS, counts)))
            else:
                counts = [add_in_order([per[b] for per in rates]) for b in range(len(_BOUNDS))]
                samples.append(({"name": r.name}, bucket_quantile(q, _BOUNDS, counts)))
        return samples

    def _by_pod(
        self, span: Span, pick: Callable[[RunnerTypeHistory, int], Sequence[int]], *, is_rate: bool
    ) -> dict[str | None, float]:
        """sum by (name) (label_replace(rate-or-increase(<cAdvisor counter>[w]), "name", …))"""
        return {
            name: add_in_order([span.extrapolated(pick(t, i), is_rate) for _, t, i in pods])
            for name, pods in self.pods.items()
        }

    def _throttled(self, span: Span) -> Samples:
        """Throttled CPU periods over all CPU periods of the runner pods, by runner type."""
        throttled = self._by_pod(span, lambda t, i: t.cfs_throttled[i], is_rate=True)
        periods = self._by_pod(span, lambda t, i: t.cfs_periods[i], is_rate=True)
        return [
            (_name_labels(name), go_divide(value, periods[name]))
            for name, value in throttled.items()
        ]

    def _ooms(self, span: Span) -> Samples:
        """OOM events of the runner containers within the window, by runner type."""
        ooms = self._by_pod(span, lambda t, i: t.ooms[i], is_rate=False)
        return [(_name_labels(name), value) for name, value in ooms.items()]


def _name_labels(name: str | None) -> SeriesLabels:
    return {} if name is None else {"name": name}
