"""Before the alert: where each runner type's queue is heading, and the heads-ups it earns."""
