"""The Silence… modal: duration, end time, comment, and the matchers Grafana will get."""

from __future__ import annotations

from typing import Any

from bot.domain.incidents import Incident
from bot.domain.silences import Duration, MatcherSet
from bot.render.mrkdwn import clip, date_token, escape_mrkdwn, oneline
from bot.render.templates import Templates
from bot.render.values import headline
from bot.slack import contract


def silence_modal_view(
    templates: Templates, incident: Incident, sets: tuple[MatcherSet, ...], private_metadata: str
) -> dict[str, Any]:
    """The Silence… modal for `incident`, previewing the matchers in plain text."""
    count = "one silence" if len(sets) == 1 else f"{len(sets)} silences, one per rule"
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
        "matchers": f"Grafana will get {count}, matching:\n{matcher_preview(sets)}",
    }
    return templates.view("silence_modal.json.j2", context)


def matcher_preview(sets: tuple[MatcherSet, ...]) -> str:
    """The matchers as plain text, one silence per line."""
    return "\n".join(", ".join(str(m) for m in matcher_set) for matcher_set in sets)
