"""Settings' problems in plain words: every one pydantic found, each with where it is, in the
words someone editing an environment or a YAML file would use (never pydantic's own), an
unknown key with the known one it resembles."""

from __future__ import annotations

import difflib
import typing
from typing import Any

from pydantic import BaseModel, ValidationError


class ConfigError(Exception):
    """A setting is missing or malformed; the message is one line that names it."""


#: pydantic's words for a problem, as someone editing a settings file would say them.
_PLAIN = {
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "bool_parsing": "must be true or false",
    "missing": "is required",
    "url_scheme": "must be an http:// or https:// URL",
    "string_type": "must be text",
    "list_type": "must be a list",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
}


def problems(exc: ValidationError, model: type[BaseModel]) -> list[str]:
    """Every problem pydantic found, each in plain words with where it is."""
    problems = []
    for error in exc.errors(include_url=False):
        location = ".".join(str(part) for part in error["loc"]) or "value"
        words = _plain(error, location, model)
        if words.startswith("must"):
            words = f"is malformed: {words}"
        problems.append(f"{location} {words}")
    return problems


def _plain(error: Any, location: str, model: type[BaseModel]) -> str:
    kind = str(error["type"])
    if kind == "extra_forbidden":
        name = str(error["loc"][-1])
        known = _known_keys(model, error["loc"][:-1])
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"is not a setting queuebot knows{hint}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        expected = (error.get("ctx") or {}).get("expected_tags", "")
        return f"must say which kind it is ({expected})" if expected else "is of no kind known"
    words = _PLAIN.get(kind)
    if kind == "url_parsing":
        why = (error.get("ctx") or {}).get("error", "")
        words = f"must be a URL like https://host.example ({why})" if why else "must be a URL"
    if words is None:
        words = str(error["msg"]).removeprefix("Value error, ")
        words = words.replace("Input should be", "must be").replace("input should be", "must be")
        words = words.replace("String should", "must").replace("List should", "must")
        words = words if words.startswith(("must", "is ", "names", "has")) else f"is wrong: {words}"
    given = error.get("input")
    shown = f", got {given!r}" if isinstance(given, str | int | float) and error["loc"] else ""
    if isinstance(given, str) and any(word in location.lower() for word in ("token", "secret")):
        shown = ""
    # A URL with "@" in it may carry a password, and a malformed one cannot be taken apart to
    # drop it: such a value is not repeated at all.
    if isinstance(given, str) and location.endswith("_URL") and "@" in given:
        shown = ""
    if isinstance(given, str) and len(given) > 80:
        shown = f", got {given[:80]!r}…"
    return f"{words}{shown}"


def _known_keys(model: type[BaseModel], path: tuple[Any, ...]) -> list[str]:
    """The keys a mapping at `path` of `model` takes (the YAML file's top level, its sections
    and the items of its lists)."""
    current: Any = model
    for part in path:
        if isinstance(part, int):
            continue  # an item of a list: its model is already `current`
        fields = getattr(current, "model_fields", None)
        if fields is None or part not in fields:
            return []
        current = _model_in(fields[part].annotation)
    fields = getattr(current, "model_fields", None) or {}
    return [
        info.validation_alias if isinstance(info.validation_alias, str) else name
        for name, info in fields.items()
    ]


def _model_in(annotation: Any) -> Any:
    """The model a field holds, through `list[...]` and `... | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for inner in typing.get_args(annotation):
        found = _model_in(inner)
        if found is not None:
            return found
    return None
