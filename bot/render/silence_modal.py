"""The Silence… modal: duration, end time, comment, and the matchers Grafana will get.

The preview lists every matcher that will be sent, whole: one line each, in Alertmanager's
`name="value"` form with the value quoted (a name outside the classic rule is quoted too), so a
value holding `, ` or `=` cannot pass for a second matcher. The quoting is JSON's, plus `\\u`
escapes for the characters that would otherwise change how Slack shows the line (backticks, which
would end the code block, and line separators); the result is then escaped for mrkdwn, so a
`<!channel>` or `<url|label>` in a label stays text. What does not fit in a modal is not
shortened: `MatchersTooLong` says so, because a silence must never match more than was shown.
"""

from __future__ import annotations

import json
import re
from typing import Any

from bot.domain.incidents import Incident
from bot.domain.silences import Duration, Matcher, MatcherSet
from bot.render.mrkdwn import clip, date_token, escape_mrkdwn, oneline
from bot.render.templates import RenderError, Templates
from bot.render.values import headline
from bot.slack import contract, limits

#: The modal's blocks other than the preview: about, duration, until, comment, the preview's
#: heading.
_FIXED_BLOCKS = 5
#: Inside ``` a backtick could close the block early; DEL and the Unicode line and paragraph
#: separators would show as a space or a break that is not in the value.
_UNSHOWABLE = re.compile(r"[`\x7f\u2028\u2029]")
_FENCE = "```"


class MatchersTooLong(RenderError):
    """The matchers cannot all be shown in a modal, so none of them may be sent from one."""


def silence_modal_view(
    templates: Templates, incident: Incident, sets: tuple[MatcherSet, ...], private_metadata: str
) -> dict[str, Any]:
    """The Silence… modal for `incident`, previewing exactly the matchers in `sets`."""
    if len(sets) == 1:
        heading = "Grafana will get *one silence*. It matches the alerts that carry all of:"
    else:
        heading = (
            f"Grafana will get *{len(sets)} silences*, one per rule. Each matches the alerts"
            " that carry all of its lines:"
        )
    context = {
        "callback_id": contract.CallbackId.SILENCE_MODAL.value,
        "private_metadata": private_metadata,
        "about": (
            f"*{escape_mrkdwn(clip(oneline(headline(incident.group)), 200))}*\n"
            f"Firing since {date_token(incident.group.started_at)}."
            " The silence is created in Grafana and announced in the incident's thread."
        ),
        "blocks": {
            "duration": contract.SilenceInput.DURATION.value,
            "until": contract.SilenceInput.UNTIL.value,
            "comment": contract.SilenceInput.COMMENT.value,
        },
        "durations": [
            {"text": {"type": "plain_text", "text": d.label}, "value": d.value} for d in Duration
        ],
        "comment_limit": 2000,
        "heading": heading,
        "previews": matcher_preview(sets),
    }
    return templates.view("silence_modal.json.j2", context)


def matcher_text(matcher: Matcher) -> str:
    """One matcher as the preview shows it, before mrkdwn escaping: `name="value"`."""
    name = matcher.name if matcher.plain_name else _quoted(matcher.name)
    return f"{name}{matcher.operator}{_quoted(matcher.value)}"


def _quoted(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return _UNSHOWABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", quoted)


def matcher_preview(sets: tuple[MatcherSet, ...]) -> list[str]:
    """The mrkdwn texts of the preview's sections: each silence's matchers in a code block, one
    per line, split over more sections where one would exceed Slack's section limit.

    Raises MatchersTooLong when they cannot all be shown."""
    texts: list[str] = []
    for number, matcher_set in enumerate(sets, 1):
        title = f"Silence {number} of {len(sets)}:\n" if len(sets) > 1 else ""
        lines: list[str] = []
        for matcher in matcher_set:
            line = escape_mrkdwn(matcher_text(matcher))
            if lines and len(_fenced(title, [*lines, line])) > limits.MAX_SECTION_TEXT:
                texts.append(_fenced(title, lines))
                title, lines = "", []
            lines.append(line)
        texts.append(_fenced(title, lines))
    if any(len(t) > limits.MAX_SECTION_TEXT for t in texts) or (
        len(texts) + _FIXED_BLOCKS > limits.MAX_BLOCKS_PER_VIEW
    ):
        raise MatchersTooLong("the matchers are too long to show in a modal")
    return texts


def _fenced(title: str, lines: list[str]) -> str:
    return f"{title}{_FENCE}{chr(10).join(lines)}{_FENCE}"
