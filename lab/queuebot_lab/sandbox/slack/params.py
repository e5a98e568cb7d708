"""A Web API request's arguments as the method handlers see them.

slack_sdk sends some methods as JSON bodies and others as query strings (form bodies from
other clients); values such as `blocks`, `view`, `files` or `metadata` arrive either as
structures or as JSON-encoded strings (https://docs.slack.dev/apis/web-api/#posting_json).
"""

import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from queuebot_lab.sandbox.slack.blockkit import Problem, error_of, message_problems, texts
from queuebot_lab.sandbox.slack.events import EventHub
from queuebot_lab.sandbox.slack.models import JSON
from queuebot_lab.sandbox.slack.workspace import WebApiError, Workspace


async def read_params(request: web.Request) -> JSON:
    """Query string merged with the body (JSON object, urlencoded or multipart form)."""
    params: JSON = dict(request.query)
    if request.method != "POST" or not request.can_read_body:
        return params
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            raise WebApiError("invalid_json") from None
        if not isinstance(body, dict):
            raise WebApiError("json_not_object")
        params.update(body)
    elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        params.update({k: v for k, v in form.items() if isinstance(v, str)})
    return params


def bearer_token(request: web.Request, params: JSON) -> str | None:
    header = request.headers.get("Authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    token = params.get("token")
    return token if isinstance(token, str) and token else None


@dataclass
class Call:
    """One Web API call in progress: its arguments, where it arrived, and the workspace."""

    method: str
    params: JSON
    base_url: str
    workspace: Workspace
    hub: EventHub

    def arg(self, key: str) -> str | None:
        """A scalar argument as a string; JSON numbers become their text (as Slack reads them)."""
        value = self.params.get(key)
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        return value if isinstance(value, str) else str(value)

    def required(self, key: str, error: str) -> str:
        value = self.arg(key)
        if value is None:
            raise WebApiError(error)
        return value

    def flag(self, key: str) -> bool:
        return self.arg(key) in ("true", "1")

    def structured(self, key: str, error: str = "invalid_arguments") -> Any:
        """A structured argument, decoding a JSON-encoded string if that is how it came."""
        value = self.params.get(key)
        if isinstance(value, str):
            if not value.strip():
                return None
            try:
                return json.loads(value)
            except ValueError:
                raise WebApiError(error) from None
        return value

    def message_content(self) -> tuple[str, list[JSON]]:
        """`text` and `blocks` of a message, refused as Slack refuses them."""
        text = self.arg("text") or ""
        blocks = self.structured("blocks", "invalid_blocks_format")
        if not text and not blocks:
            raise WebApiError("no_text")
        problems = message_problems(blocks)
        if error := error_of(problems):
            raise blocks_error(error, problems)
        self.workspace.check_slack_files(blocks)
        return text, list(blocks or [])


def blocks_error(error: str, problems: list[Problem]) -> WebApiError:
    """Slack lists each problem in `errors` and, prefixed, in `response_metadata.messages`."""
    return WebApiError(
        error,
        errors=texts(problems),
        response_metadata={"messages": [f"[ERROR] {p}" for p in texts(problems)]},
    )


def slack_response(
    body: JSON, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.json_response(body, status=status, headers=headers)
