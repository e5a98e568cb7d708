"""Background passes that keep failing. Each background loop (the early warning's checks, the
silence watcher, the writers, retention) says how each pass went; every failure is counted on
/metrics (`queuebot_background_failures_total`, by task), and a task whose last
`FAILING_IN_A_ROW` passes all failed is a reason /healthz gives (the error is the log's) until
a pass succeeds. A loop that goes on running but never gets anything done is not healthy.
Passes done are counted too (`queuebot_background_passes_total`): a test, or an operator, sees
the work happen rather than waiting for it to have happened."""

from __future__ import annotations

from bot.telemetry.metrics import Metrics

#: Failed passes in a row that make a task unhealthy.
FAILING_IN_A_ROW = 3


class PassRecord:
    """How one background task's passes have gone lately."""

    def __init__(self, task: str, metrics: Metrics | None = None) -> None:
        self.task = task
        self._metrics = metrics
        self.failed_in_a_row = 0
        #: Passes done so far.
        self.passes = 0

    def succeeded(self) -> None:
        self.failed_in_a_row = 0
        self.passes += 1
        if self._metrics is not None:
            self._metrics.inc("queuebot_background_passes_total", task=self.task)

    def failed(self) -> None:
        """A pass failed (its caller logs why)."""
        self.failed_in_a_row += 1
        if self._metrics is not None:
            self._metrics.inc("queuebot_background_failures_total", task=self.task)

    @property
    def problem(self) -> str | None:
        """What /healthz says of the task, or None while it works."""
        if self.failed_in_a_row < FAILING_IN_A_ROW:
            return None
        # The error itself may name a server's address: it is in the log, not on /healthz.
        return f"the {self.task} failed {self.failed_in_a_row} passes in a row (see the log)"
