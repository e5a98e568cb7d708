"""Alert text fitted into Slack's limits: lengths counted as Slack counts them (an emoji is
two), text shortened after it is escaped, with a visible "…", never through an entity or a
link, and numbers written short."""

from __future__ import annotations

import re

from bot.render.mrkdwn import clip, clip_plain, inert
from bot.render.values import format_number

LINK = "<https://grafana.example/d/x?a=1&amp;b=2|view>"


def units(text: str) -> int:
    """UTF-16 code units, counted here apart from the code under test."""
    return len(text.encode("utf-16-le")) // 2


class TestShortening:
    def test_an_emoji_counts_two(self) -> None:
        """🚨 is two UTF-16 units: 100 of them shortened to 11 keep five and the "…"."""
        clipped = clip("🚨" * 100, 11)
        assert clipped == "🚨" * 5 + "…" and units(clipped) == 11

    def test_a_link_is_kept_whole_or_left_out(self) -> None:
        """However the cut falls, no half of a `<url|label>` (or a date token) is left."""
        text = "x" * 20 + LINK + " · " + "<!date^1700000000^{date_short}|Nov 14>" + "y" * 50
        for limit in range(2, len(text)):
            clipped = clip(text, limit)
            assert units(clipped) <= limit
            assert clipped.count("<") == clipped.count(">"), clipped

    def test_text_is_shortened_after_it_is_escaped(self) -> None:
        """& becomes &amp; first, then the cut: within the limit, entities whole."""
        shown = inert("&" * 1000, 100)
        assert units(shown) <= 100 and shown.endswith("&amp;…")
        assert re.fullmatch(r"(&amp;)+…", shown)

    def test_plain_text_keeps_its_angle_brackets(self) -> None:
        """Plain text has no markup: a `<` in it is no reason to cut it short."""
        assert clip_plain("a <b " + "c" * 200, 20).startswith("a <b c")

    def test_a_huge_value_is_written_short(self) -> None:
        """1e300 is "1e+300", not three hundred digits."""
        assert format_number(1e300) == "1e+300"
        assert format_number(-1.7976931348623157e308) == "-1.8e+308"
