"""Slack: the Web API gateway and its errors, message types, Block Kit rules and the ids and limits
that are contracts.
"""
