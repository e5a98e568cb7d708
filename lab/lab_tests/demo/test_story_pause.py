"""The pause between the steps of alice's story: 1.5 s unless QUEUEBOT_DEMO_PAUSE_SECONDS says
otherwise, and a value that is not a number of seconds is refused, saying so."""

from __future__ import annotations

import pytest

from queuebot_lab.demo.story import PAUSE_VARIABLE, STORY_PAUSE_SECONDS, story_pause


def test_the_story_pauses_a_second_and_a_half_unless_told_otherwise() -> None:
    assert STORY_PAUSE_SECONDS == 1.5
    assert story_pause({}) == story_pause({PAUSE_VARIABLE: " "}) == 1.5
    assert story_pause({PAUSE_VARIABLE: "0"}) == 0.0
    assert story_pause({PAUSE_VARIABLE: " 0.25 "}) == 0.25


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf", "1e300", "1.5s"])
def test_a_pause_that_is_not_a_number_of_seconds_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match=PAUSE_VARIABLE) as refused:
        story_pause({PAUSE_VARIABLE: value})
    assert repr(value) in str(refused.value)
