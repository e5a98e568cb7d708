"""What queuebot sends to Slack as a message: fallback text and Block Kit blocks."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Message:
    """A Slack message: fallback `text` (notifications, screen readers) and Block Kit `blocks`."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ChartFile:
    """An image uploaded to Slack, shown in a message through its file id."""

    id: str
    title: str
    alt: str
