"""A simulated CI runner fleet: history for tests, the demo and benchmarks."""
