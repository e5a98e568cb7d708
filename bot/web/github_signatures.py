"""Which secret a GitHub delivery must be signed with, and the check of its signature.

GitHub signs every delivery of a hook that has a secret: `X-Hub-Signature-256` is `sha256=`
and the hex HMAC-SHA256 of the body as sent, keyed with the secret
(https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries). The secrets
queuebot knows (`HookSecrets`):

- one for every hook (GITHUB_WEBHOOK_SECRET);
- an organization's own (one per hook, when its hooks each have theirs): a delivery whose jobs
  are that organization's is taken only when one of these verifies it, so one organization's
  hook (or whoever holds its secret) cannot feed another organization's jobs;
- the GitHub App's (GITHUB_APP_WEBHOOK_SECRET), for the deliveries that carry
  `installation`, whichever watched organization they name: the App is installed on
  organizations by their owners, and its webhook is the alternative to (or sits beside) an
  organization's own hooks. "Webhook payloads contain the `installation` property when the
  event is configured for and sent to a GitHub App", and the App's `ping` names its hook's
  `type` "App" (docs.github.com, "Webhook events and payloads").

Whose a delivery is: the owner in `repository.full_name` (whose jobs it would feed; the store
keeps that name), else `organization.login` ("when the webhook is configured for an
organization"), else `repository.owner.login`. GitHub's own bodies name the same account in
all three.

When organizations are watched (GITHUB_ORG, or the YAML file's `github.orgs`), a delivery of
any other is refused with 403 and the reason, however it is signed. Signatures are compared in
constant time, and no secret goes into an answer or a log line.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretStr

HUB_SIGNATURE_HEADER = "X-Hub-Signature-256"


@dataclass(frozen=True)
class DeliveryOrigin:
    """What a delivery's body says of where it comes from."""

    #: Whose the delivery is: the owner of its repository, else its organization.
    account: str | None
    #: Sent to a GitHub App: an installation's event, or the App's own ping.
    from_app: bool


def origin_of(payload: bytes | None) -> DeliveryOrigin | None:
    """The body's origin; None for a body that is no JSON object. Read field by field, so that
    no field of an unexpected shape can hide the others."""
    if payload is None:
        return None
    try:
        data = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    repository = _object(data, "repository")
    full_name = repository.get("full_name")
    account = None
    if isinstance(full_name, str) and "/" in full_name:
        account = full_name.split("/", 1)[0]
    for login in (_object(data, "organization"), _object(repository, "owner")):
        if account is None and isinstance(login.get("login"), str) and login["login"]:
            account = login["login"]
    hook_type = _object(data, "hook").get("type")
    app_ping = isinstance(hook_type, str) and hook_type.casefold() == "app"
    return DeliveryOrigin(account, isinstance(data.get("installation"), dict) or app_ping)


def _object(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class Refusal:
    """Why a delivery is not taken: the status, the words of the answer, the metric's outcome."""

    status: int
    error: str
    outcome: str


@dataclass(frozen=True)
class HookSecrets:
    """The secrets deliveries are verified with, and the organizations watched."""

    shared: SecretStr | None = None
    #: Each organization's own secrets, by its name case-folded.
    orgs: Mapping[str, tuple[SecretStr, ...]] = field(default_factory=dict)
    app: SecretStr | None = None
    #: The organizations whose deliveries are taken; none: any.
    watched: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.shared is not None or self.app is not None or any(self.orgs.values())

    def refusal(self, header: str, body: bytes, payload: bytes | None) -> Refusal | None:
        """Why the delivery (`body` as sent, `payload` its JSON) is not taken; None when it
        is signed with a secret that may speak for the account it names."""
        if not header:
            return _unauthorized(f"missing {HUB_SIGNATURE_HEADER} header")
        scheme, _, given = header.strip().partition("=")
        if scheme != "sha256" or not given:
            return _unauthorized(f"{HUB_SIGNATURE_HEADER} is not sha256=<hex>")
        origin = origin_of(payload)
        account = origin.account if origin is not None else None
        # A body naming no account (the App's ping; no JSON at all) feeds no one's jobs.
        watched = account is None or self._watches(account)
        keys = [self.app] if self.app is not None and origin is not None and origin.from_app else []
        if watched:
            own = self.orgs.get(account.casefold(), ()) if account else ()
            keys += own or ([self.shared] if self.shared is not None else [])
        if not keys:
            if not watched:
                return _not_watched(account)
            whose = f"the hooks of {account}" if account else "a delivery naming no organization"
            return _unauthorized(f"no secret is set for {whose}")
        if not _signed_by_any(given.strip().lower(), body, keys):
            return _unauthorized("signature does not match the body")
        return None if watched else _not_watched(account)

    def _watches(self, account: str) -> bool:
        return not self.watched or account.casefold() in {o.casefold() for o in self.watched}


def _signed_by_any(given: str, body: bytes, keys: list[SecretStr]) -> bool:
    """Whether `given` is the body's HMAC-SHA256 with one of `keys`; every key is tried, each
    in constant time, so the time taken says nothing of which matched."""
    matched = False
    for key in keys:
        expected = hmac.new(key.get_secret_value().encode(), body, hashlib.sha256).hexdigest()
        matched |= hmac.compare_digest(given.encode(), expected.encode())
    return matched


def _unauthorized(problem: str) -> Refusal:
    return Refusal(401, f"unauthorized: {problem}", "unauthorized")


def _not_watched(account: str | None) -> Refusal:
    return Refusal(
        403,
        f"forbidden: {account}'s deliveries are not taken: queuebot watches other"
        " organizations (GITHUB_ORG or the YAML file's github.orgs)",
        "forbidden",
    )
