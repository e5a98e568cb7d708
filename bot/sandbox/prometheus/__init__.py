"""`FleetPrometheus`: the demo's stand-in for Prometheus, so `queuebot demo` diagnoses a
simulated fleet with nothing but Python. It runs the fleet simulator (`bot.simulator`) in
memory and answers the query pack's queries over Prometheus' HTTP API, computing them from the
samples as Prometheus 2.42 does: the same series, labels and values as a real Prometheus holding
the same simulation (tests/sandbox/test_prometheus.py holds it to that).

It is no PromQL engine: it knows the pack's queries, one hand-written evaluation each, and
refuses any other query with a 400 that says so. What it reproduces of Prometheus:

- an instant vector selector takes a series' latest sample at most 5 minutes old;
- a range selector `[w]` takes the samples in [t - w, t] (both ends included, as before 3.0);
  `rate`/`increase` extrapolate as `extrapolatedRate` does (counter resets, the zero point);
- `histogram_quantile` interpolates linearly within the bucket, answers the highest finite
  bound when the rank falls in +Inf, and NaN when there were no observations;
- aggregations add in the order of the series' label sets, so sums round alike.

The history ends at the spec's `end` while the demo keeps running: later times are answered as
at the end, so the fleet stays as the simulation left it; earlier than the history, nothing.

`promql` holds what is Prometheus' own (parsing, extrapolation, quantiles), `evaluator` the
pack's queries, `server` the HTTP API.
"""

from bot.sandbox.prometheus.promql import bucket_quantile
from bot.sandbox.prometheus.server import FleetPrometheus

__all__ = ["FleetPrometheus", "bucket_quantile"]
