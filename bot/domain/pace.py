"""A token bucket's arithmetic: Slack's posting limit, about one message per second per channel
with short bursts (https://docs.slack.dev/apis/web-api/rate-limits#limits-when-posting-messages).

Pure, so that the bucket can live where the posters share it: in memory for one process, in the
store for replicas (Slack's limit is per app and channel, not per process).
"""

from __future__ import annotations

from typing import NamedTuple


class Bucket(NamedTuple):
    tokens: float
    at: float  # when `tokens` was counted, in the clock's seconds


def take(
    bucket: Bucket | None, now: float, per_second: float, burst: float
) -> tuple[Bucket, float]:
    """The bucket after asking for one post at `now`, and the seconds to wait first (0: the
    token is taken). A missing bucket is a full one."""
    tokens, last = bucket if bucket is not None else (burst, now)
    # A clock that went backwards (another replica's, a little behind) adds nothing.
    tokens = min(burst, tokens + max(0.0, now - last) * per_second)
    if tokens >= 1.0:
        return Bucket(tokens - 1.0, now), 0.0
    return Bucket(tokens, now), (1.0 - tokens) / per_second
