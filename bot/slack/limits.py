"""Slack's documented limits on messages, blocks and views, written down once."""

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

#: Views and composition objects (https://docs.slack.dev/reference/views,
#: https://docs.slack.dev/reference/block-kit/composition-objects).
MAX_TEXT_OBJECT = 3000
MAX_MARKDOWN_BLOCK = 12000
MAX_IMAGE_URL = 3000
MAX_ALT_TEXT = 2000
MAX_VIEW_TITLE = 24
MAX_CALLBACK_ID = 255
MAX_EXTERNAL_ID = 255
MAX_PRIVATE_METADATA = 3000
MAX_INPUT_LABEL = 2000
MAX_CONFIRM_TITLE = 100
MAX_CONFIRM_TEXT = 300
MAX_CONFIRM_BUTTON = 30
