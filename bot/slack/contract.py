"""Names that are contracts: action and callback ids, Slack's limits, HTTP paths.

Templates, listeners and the local Slack workspace all import these, so an id or a limit is written
down exactly once.
"""

from enum import StrEnum


class ActionId(StrEnum):
    """`action_id` of every interactive element queuebot puts into a message."""

    RUN_DIAGNOSTICS = "queuebot_run_diagnostics"
    SILENCE = "queuebot_silence"
    UNSILENCE = "queuebot_unsilence"
    OPEN_RUNBOOK = "queuebot_open_runbook"
    VIEW_ALERT = "queuebot_view_alert"
    OPEN_DASHBOARD = "queuebot_open_dashboard"
    SHARE_STATUS = "queuebot_share_status"


class CallbackId(StrEnum):
    """`callback_id` of every modal queuebot opens."""

    SILENCE_MODAL = "queuebot_silence_modal"


class SilenceInput(StrEnum):
    """`block_id`s of the Silence… modal's inputs, and their elements' `action_id`s too
    (action ids must not repeat within a view)."""

    DURATION = "silence_duration"
    UNTIL = "silence_until"
    COMMENT = "silence_comment"


#: The slash command declared in manifest.yml.
QUEUE_STATUS_COMMAND = "/queue-status"

#: Slack's Block Kit and message limits (https://docs.slack.dev/reference/block-kit/blocks).
MAX_BLOCKS_PER_MESSAGE = 50
MAX_BLOCKS_PER_VIEW = 100
MAX_SECTION_TEXT = 3000
MAX_SECTION_FIELDS = 10
MAX_FIELD_TEXT = 2000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_ACTIONS_ELEMENTS = 25
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_BUTTON_URL = 3000
MAX_ACTION_ID = 255
MAX_BLOCK_ID = 255
MAX_MESSAGE_TEXT = 40000
#: Not documented: Slack answers `msg_blocks_too_long` at roughly 13.2k characters over all
#: blocks (slackapi/bolt-js#2509); stay under 12,000.
MAX_TOTAL_BLOCK_CHARS = 12000

#: HTTP routes of the bot's aiohttp application.
SLACK_EVENTS_PATH = "/slack/events"
GRAFANA_WEBHOOK_PATH = "/webhooks/grafana"
HEALTHZ_PATH = "/healthz"
METRICS_PATH = "/metrics"
OPENAPI_PATH = "/openapi.json"
