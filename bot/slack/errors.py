"""What Slack's answers mean: the error tree every caller of the gateway catches by name.

SlackError
├── SlackUnavailable      try again later: network trouble, timeouts, 5xx, internal_error
│   └── SlackRateLimited  429: try again after `retry_after` seconds (Retry-After)
└── SlackRejected         Slack said no (`error` holds its code); retrying will not help
    ├── SlackChannelError the channel is wrong or the bot is not allowed in it
    ├── SlackAuthError    the token is wrong, revoked or lacks a scope
    └── SlackMessageGone  the message to edit or reply to no longer exists
"""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackApiError

#: Codes Slack documents as passing trouble on its side (chat.postMessage "errors").
_TRANSIENT = {"internal_error", "fatal_error", "service_unavailable", "request_timeout"}
_CHANNEL = {"channel_not_found", "not_in_channel", "is_archived", "restricted_action"}
_AUTH = {
    "not_authed",
    "invalid_auth",
    "account_inactive",
    "token_revoked",
    "token_expired",
    "missing_scope",
    "not_allowed_token_type",
}
_GONE = {"message_not_found", "thread_not_found", "cant_update_message"}


class SlackError(Exception):
    """Slack did not do what was asked."""

    def __init__(self, method: str, detail: str) -> None:
        super().__init__(f"{method}: {detail}")
        self.method = method
        self.detail = detail


class SlackUnavailable(SlackError):
    retry_after: float | None = None


class SlackRateLimited(SlackUnavailable):
    def __init__(self, method: str, retry_after: float) -> None:
        super().__init__(method, f"rate limited, retry after {retry_after:g}s")
        self.retry_after = retry_after


class SlackRejected(SlackError):
    def __init__(self, method: str, error: str) -> None:
        super().__init__(method, error)
        self.error = error


class SlackChannelError(SlackRejected):
    pass


class SlackAuthError(SlackRejected):
    pass


class SlackMessageGone(SlackRejected):
    pass


def retry_after(headers: Any) -> float:
    try:
        return max(float(headers.get("Retry-After", "1")), 0.0)
    except (TypeError, ValueError):
        return 1.0


def error_for(method: str, exc: SlackApiError) -> SlackError:
    status = exc.response.status_code
    data = exc.response.data if isinstance(exc.response.data, dict) else {}
    code = str(data.get("error") or f"http_{status}")
    if status == 429 or code == "ratelimited":
        return SlackRateLimited(method, retry_after(exc.response.headers))
    if status >= 500 or code in _TRANSIENT:
        return SlackUnavailable(method, code)
    for codes, kind in ((_CHANNEL, SlackChannelError), (_AUTH, SlackAuthError)):
        if code in codes:
            return kind(method, code)
    if code in _GONE:
        return SlackMessageGone(method, code)
    return SlackRejected(method, code)
