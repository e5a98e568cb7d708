"""The capacity report: queue times, usage and recommended sizes per runner type."""
