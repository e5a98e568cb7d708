"""Diagnostics: read the fleet's signals from its sources, judge them against the runbook's causes,
report.
"""
