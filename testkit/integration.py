"""Finding the external programs integration tests run: skipped locally when one is missing,
a failure in CI (`QUEUEBOT_REQUIRE_INTEGRATION=1`), so a CI image without it cannot pass green.
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRE_VARIABLE = "QUEUEBOT_REQUIRE_INTEGRATION"


def integration_required() -> bool:
    return os.environ.get(REQUIRE_VARIABLE) == "1"


def require_binary(name: str, install: str) -> str:
    """The path of the program `name`; skip the test (fail it in CI) when it is not installed."""
    path = shutil.which(name)
    if path is not None:
        return path
    if integration_required():
        pytest.fail(
            f"{name} is not installed and {REQUIRE_VARIABLE}=1 requires it; "
            f"install it with: {install}"
        )
    pytest.skip(f"{name} is not installed; install it with: {install}")


def require(what: str, problem: str) -> None:
    """Skip the test (fail it in CI) because `what` it needs is not there: `problem` says why."""
    message = f"needs {what}, which is not available here: {problem}"
    if integration_required():
        pytest.fail(f"{message} ({REQUIRE_VARIABLE}=1 requires it)")
    pytest.skip(message)
