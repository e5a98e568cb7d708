"""The fleet's data: what each source tells of a CI runner fleet (`sources`: GitHub's job events
in the store, GitHub's self-hosted runners list, Prometheus with actions-runner-controller's
metrics), the signals measured from them per runner type (`measures`, `signals`), all sources
read together (`reading`), and the queue chart (`chart`, `charting`). Diagnostics, /queue-status,
the early warning and the capacity report read the fleet through it."""
