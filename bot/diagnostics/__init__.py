"""Diagnostics: fleet signals become findings on the runbook's five causes."""
