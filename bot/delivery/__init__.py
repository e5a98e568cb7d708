"""Delivery: the outbox worker and per-channel pacing, the one door through which queuebot writes
to Slack.
"""
