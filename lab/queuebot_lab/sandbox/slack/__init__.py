"""The local Slack-compatible workspace used by the tests and `queuebot demo`.

`SlackSandbox` serves Slack's Web API, response URLs, file uploads and Socket Mode on a local
port, keeps the workspace's state, refuses what Slack refuses with Slack's error names, and
sends clicks, slash commands and modal submissions to the app as Slack does.
"""

from queuebot_lab.sandbox.slack.events import SandboxEvent, SandboxEventKind
from queuebot_lab.sandbox.slack.faults import Fault, Faults
from queuebot_lab.sandbox.slack.interactions import InteractionResult
from queuebot_lab.sandbox.slack.models import (
    CallRecord,
    Ephemeral,
    OpenView,
    PostedMessage,
    ResponsePost,
    SandboxFile,
    UserGroup,
    ViewState,
)
from queuebot_lab.sandbox.slack.server import ONCALL_USER, SECOND_USER, SlackSandbox
from queuebot_lab.sandbox.slack.text import render_message, render_thread
from queuebot_lab.sandbox.slack.workspace import WebApiError

__all__ = [
    "ONCALL_USER",
    "SECOND_USER",
    "CallRecord",
    "Ephemeral",
    "Fault",
    "Faults",
    "InteractionResult",
    "OpenView",
    "PostedMessage",
    "ResponsePost",
    "SandboxEvent",
    "SandboxEventKind",
    "SandboxFile",
    "SlackSandbox",
    "UserGroup",
    "ViewState",
    "WebApiError",
    "render_message",
    "render_thread",
]
