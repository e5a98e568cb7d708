"""What of a secret-bearing value may be shown: text with credentials taken out, a URL without
its credentials, and a URL's host without its credentials or path.

Whatever queuebot logs or says to a person goes through here first, so a known secret or
anything shaped like a Slack, Grafana or GitHub token, an HTTP credential, a URL's
`user:password@` or a credential-named query parameter (`?token=`, `&api_key=`,
`X-Amz-Signature=`) shows as `[redacted]`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, SecretStr

REDACTED = "[redacted]"

#: Credentials recognised by their shape, whoever they belong to.
_SHAPES = re.compile(
    # Slack bot, user, app-configuration and legacy tokens, and app-level tokens.
    r"xox[abposr]-[A-Za-z0-9-]+"
    r"|xapp-[A-Za-z0-9-]+"
    # Grafana service-account tokens.
    r"|glsa_[A-Za-z0-9_]+"
    # GitHub tokens: personal (classic ghp_, fine-grained github_pat_), OAuth (gho_), GitHub
    # App installation (ghs_) and user-to-server (ghu_) and refresh (ghr_) tokens.
    r"|\bgithub_pat_[A-Za-z0-9_]+"
    r"|\bgh[pousr]_[A-Za-z0-9]+"
    # An Authorization credential (RFC 7235 token68) after its scheme; the scheme stays. Basic
    # credentials are base64 (RFC 7617): whole groups of four, at least two (the shortest
    # user:password pair), with a digit, a sign or a capital inside, so that prose such as
    # "Bearer <token> or Basic auth" or Slack's "Basic Information" page stays readable.
    r"|(?P<scheme>\b(?i:bearer)\s+)[A-Za-z0-9._~+/-]+=*"
    r"|(?P<basic>\b(?i:basic)\s+)(?=[A-Za-z0-9+/]*(?:[0-9+/=]|\B[A-Z]))"
    r"(?:[A-Za-z0-9+/]{4}){2,}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?(?![A-Za-z0-9+/=])"
    # A URL's userinfo (RFC 3986 §3.2.1), whatever the scheme (https, postgresql): up to the
    # last "@" before the path, so a password holding an unescaped "@" goes whole.
    r"|(?P<userinfo>\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#]+@"
    # A query parameter named as a credential is (token, access_token, api_key, apiKey,
    # client_secret, password, X-Amz-Signature, ...); the name stays, so the URL still says
    # what it carried.
    r"|(?P<param>[?&;](?i:(?:[\w.~-]*[_.-])?"
    r"(?:token|secret|password|passwd|pwd|apikey|key|sig|signature|auth|credential)"
    r")=)[^&#\s]+"
)
#: Shorter known values would blank out ordinary words wherever they occur.
MIN_SECRET_LENGTH = 4


def known_secrets(settings: BaseModel) -> list[str]:
    """The value of every `SecretStr` setting that is set, also those held in a mapping or a
    sequence (an organization's webhook secrets)."""
    found: list[str] = []

    def add(value: object) -> None:
        if isinstance(value, SecretStr):
            found.append(value.get_secret_value())
        elif isinstance(value, dict):
            for item in value.values():
                add(item)
        elif isinstance(value, list | tuple | set | frozenset):
            for item in value:
                add(item)

    for name in type(settings).model_fields:
        add(getattr(settings, name))
    return found


class Redactor:
    """Replaces known secret values (and their base64) and credential-shaped text."""

    def __init__(self, secrets: Iterable[str]) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if len(secret) < MIN_SECRET_LENGTH:
                continue
            forms.add(secret)
            # A secret sent as Basic credentials or in a signed body shows up base64-encoded.
            encoded = base64.b64encode(secret.encode()).decode()
            forms.update((encoded, encoded.rstrip("=")))
        # Longest first, so a secret that contains another is replaced whole.
        ordered = sorted(forms, key=len, reverse=True)
        self._known = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        if self._known is not None:
            text = self._known.sub(REDACTED, text)
        return _SHAPES.sub(_keep_prefix, text)

    def value(self, value: Any) -> Any:
        """`value` with every string in it redacted (lists, tuples and dict values too)."""
        if isinstance(value, str):
            return self(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(item) for item in value)
        return value


def _keep_prefix(match: re.Match[str]) -> str:
    if match.group("userinfo"):
        return f"{match.group('userinfo')}{REDACTED}@"
    prefix = match.group("scheme") or match.group("basic") or match.group("param") or ""
    return prefix + REDACTED


def redact_url(url: str) -> str:
    """`url` as it may be shown: scheme, host, port and path kept; its `user:password@` and
    credential-named query values as `[redacted]` (the same shapes `Redactor` takes out of
    any text)."""
    return _SHAPES.sub(_keep_prefix, url)


def host_of(url: str) -> str:
    """`host:port` of a URL, for messages people read: never its credentials or path."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port}" if parts.port else host
