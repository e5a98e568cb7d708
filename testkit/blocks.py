"""Reading Block Kit as Slack shows it, for assertions."""

from __future__ import annotations

from typing import Any


def mrkdwn_texts(node: Any) -> list[str]:
    """Every mrkdwn text in `node` (blocks and everything in them)."""
    if isinstance(node, dict):
        own = [node["text"]] if node.get("type") == "mrkdwn" else []
        return own + [t for value in node.values() for t in mrkdwn_texts(value)]
    if isinstance(node, list):
        return [t for item in node for t in mrkdwn_texts(item)]
    return []
