"""GitHub's tokens are secrets like the others: GITHUB_TOKEN is a known secret, and anything
shaped like a GitHub token is redacted in logs and in what queuebot prints, configured or not."""

from __future__ import annotations

import logging

import pytest

from bot.config import load_settings
from bot.telemetry.logs import RedactionFilter
from bot.telemetry.redaction import REDACTED, Redactor, known_secrets

# The shapes GitHub documents: "Behind GitHub's new authentication token formats" (2021) and
# fine-grained personal access tokens (github_pat_).
SHAPES = [
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW",
    "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
    "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "ghu_16C7e42F292c6912E7710c838347Ae178B4a",
    "ghr_1B4a2e77838347a7E420ce178F2E7c6912E169246c34E1ccbF66C46812d16D5B1A9Dc86A1498",
]


@pytest.mark.parametrize("token", SHAPES)
def test_a_github_token_in_a_log_line_is_redacted_unconfigured(token: str) -> None:
    record = logging.LogRecord(
        "bot.test", logging.WARNING, __file__, 1, "listing with %s failed", (token,), None
    )
    RedactionFilter(()).filter(record)
    assert record.getMessage() == f"listing with {REDACTED} failed"


def test_words_that_merely_start_like_a_token_stay() -> None:
    assert Redactor(())("ghost_runner highs_and_lows github_pat") == (
        "ghost_runner highs_and_lows github_pat"
    )


def test_github_token_is_a_known_secret() -> None:
    settings = load_settings({"GITHUB_TOKEN": "any-shape-at-all", "GITHUB_ORG": "pytorch"})
    assert "any-shape-at-all" in known_secrets(settings)
    assert Redactor(known_secrets(settings))("token any-shape-at-all") == f"token {REDACTED}"
