"""A simulated CI runner fleet: history for tests, the demo and benchmarks.

`spec` says what is asked and what was staged, `profiles` the runner types and their problems,
`queue_model` runs each type, `history` keeps the samples, `openmetrics` writes them for
promtool, and `simulate` ties them together behind `queuebot simulate`.
"""

from queuebot_lab.simulator.deliveries import SimulatedJob, SimulatedRunner
from queuebot_lab.simulator.profiles import runner_type_names
from queuebot_lab.simulator.simulate import (
    FleetJobs,
    simulate,
    simulate_jobs,
    simulate_series,
    write_file,
)
from queuebot_lab.simulator.spec import (
    BUCKETS,
    CAUSES,
    MAX_HOURS,
    MetricsShape,
    Scenario,
    SimulationSpec,
    Truth,
)

__all__ = [
    "BUCKETS",
    "CAUSES",
    "MAX_HOURS",
    "FleetJobs",
    "MetricsShape",
    "Scenario",
    "SimulatedJob",
    "SimulatedRunner",
    "SimulationSpec",
    "Truth",
    "runner_type_names",
    "simulate",
    "simulate_jobs",
    "simulate_series",
    "write_file",
]
