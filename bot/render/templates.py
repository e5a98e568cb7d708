"""The one jinja Environment every message is made with, and the check that what it made is
something Slack accepts.

StrictUndefined, no autoescape (the output is JSON, built with `tojson`): every value enters
JSON through `tojson`, and alert-supplied text must be escaped for mrkdwn before it gets here,
because `tojson` alone lets `<!channel>` through. Whatever a template makes is checked against
Slack's Block Kit rules before anyone sends it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2

from bot.render.mrkdwn import clip, clip_plain, escape_mrkdwn, oneline
from bot.slack import blockkit, limits
from bot.slack.message import Message


class RenderError(Exception):
    """A rendered message breaks Slack's rules: a template bug, never the alert's fault."""


def template_dirs() -> list[Path]:
    """Where templates/ is: inside the installed package, or beside it in a source checkout."""
    here = Path(__file__).resolve().parent.parent  # the bot package
    found = [p for p in (here / "templates", here.parent / "templates") if p.is_dir()]
    if not found:
        raise RenderError("the templates/ directory is missing from this installation")
    return found


def _environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # noqa: S701 - output is JSON built with tojson, not HTML
        keep_trailing_newline=False,
    )
    env.filters.update(clip=clip, clip_plain=clip_plain, oneline=oneline, mrkdwn=escape_mrkdwn)
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "sort_keys": False}
    env.globals["limits"] = {
        "header": limits.MAX_HEADER_TEXT,
        "section": limits.MAX_SECTION_TEXT,
        "field": limits.MAX_FIELD_TEXT,
        "context_elements": limits.MAX_CONTEXT_ELEMENTS,
        "button_text": limits.MAX_BUTTON_TEXT,
    }
    return env


@functools.cache
def _installed() -> jinja2.Environment:
    return _environment(jinja2.FileSystemLoader([str(p) for p in template_dirs()]))


class Templates:
    """templates/ loaded once; `message` and `view` render one and check it."""

    def __init__(self, loader: jinja2.BaseLoader | None = None) -> None:
        # The installation's templates are compiled once a process, however many apps it makes.
        self._env = _environment(loader) if loader is not None else _installed()

    def message(self, template: str, context: dict[str, Any]) -> Message:
        """A message; RenderError when it is not JSON or breaks Slack's rules."""
        raw = self._env.get_template(template).render(**context)
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise RenderError(f"{template} produced invalid JSON: {exc}") from exc
        message = Message(text=clip(data["text"], 3000), blocks=data["blocks"])
        problems = blockkit.validate_message(message.text, message.blocks)
        if problems:
            raise RenderError(f"{template} broke Slack's rules: {'; '.join(problems)}")
        return message

    def fitted(self, template: str, forms: Iterable[dict[str, Any]]) -> Message:
        """The first of `forms` (contexts, fullest first, each leaving out more) whose message
        Slack takes. Each kind's last form is small by construction, so one always fits; a
        RenderError from here is a template bug."""
        refused = RenderError(f"{template}: no form to render")
        for context in forms:
            try:
                return self.message(template, context)
            except RenderError as exc:
                refused = exc
        raise refused

    def view(self, template: str, context: dict[str, Any]) -> dict[str, Any]:
        """A modal view; RenderError when it is not JSON or breaks Slack's rules."""
        raw = self._env.get_template(template).render(**context)
        try:
            view: dict[str, Any] = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise RenderError(f"{template} produced invalid JSON: {exc}") from exc
        problems = blockkit.validate_view(view)
        if problems:
            raise RenderError(f"{template} broke Slack's rules: {'; '.join(problems)}")
        return view
