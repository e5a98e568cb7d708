"""How queuebot authenticates to GitHub's REST API, as the settings say it: GITHUB_TOKEN, or a
GitHub App (GITHUB_APP_ID with its private key, GITHUB_APP_PRIVATE_KEY or
GITHUB_APP_PRIVATE_KEY_FILE, and optionally GITHUB_APP_INSTALLATION_ID); never both.

The key is read and checked at start: PEM text ("-----BEGIN RSA PRIVATE KEY-----", as GitHub
generates it, or PKCS#8's "-----BEGIN PRIVATE KEY-----"), an RSA key (GitHub signs nothing
else: RS256). Environment files often carry a PEM on one line with literal `\\n` for its line
breaks; those are taken as line breaks. No message repeats any of the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Protocol

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from pydantic import BeforeValidator, Field, SecretStr

from bot.config.words import ConfigError

_KEY_VARIABLES = "GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_FILE"


def _blank_is_unset(value: Any) -> Any:
    return None if isinstance(value, str) and not value.strip() else value


#: The settings' types: an App's or installation's id, the key's text, the key's file; each
#: unset when empty.
AppNumber = Annotated[Annotated[int, Field(gt=0)] | None, BeforeValidator(_blank_is_unset)]
AppKey = Annotated[SecretStr | None, BeforeValidator(_blank_is_unset)]
AppKeyFile = Annotated[Path | None, BeforeValidator(_blank_is_unset)]


class _Settings(Protocol):
    """What of `bot.config.Settings` is read here."""

    github_token: SecretStr | None
    github_app_id: int | None
    github_app_key: SecretStr | None
    github_app_key_file: Path | None
    github_app_installation: int | None
    github_enterprise: str | None

    @property
    def github_orgs(self) -> tuple[str, ...]: ...


def app_private_key(settings: _Settings) -> str | None:
    """The GitHub App's private key as PEM text; None without one. Raises ConfigError when it
    cannot be read or is no RSA private key."""
    if settings.github_app_key is not None:
        where = "GITHUB_APP_PRIVATE_KEY"
        text = settings.github_app_key.get_secret_value()
    elif settings.github_app_key_file is not None:
        path = settings.github_app_key_file
        where = f"GITHUB_APP_PRIVATE_KEY_FILE ({path})"
        try:
            text = path.expanduser().read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(
                f"{where} cannot be read ({type(exc).__name__}): give the path of the .pem file"
                " GitHub generated for the App, readable by queuebot"
            ) from None
    else:
        return None
    # A PEM's base64 never holds a backslash: any `\n` there stands for a line break.
    text = text.replace("\\n", "\n").strip() + "\n"
    try:
        key = load_pem_private_key(text.encode(), password=None)
    except (ValueError, TypeError):
        key = None
    if not isinstance(key, RSAPrivateKey):
        raise ConfigError(
            f"{where} is not an RSA private key in PEM (-----BEGIN RSA PRIVATE KEY-----…):"
            " give the private key GitHub generated for the App (its settings, Private keys)"
        )
    return text


def check_github_app(settings: _Settings) -> None:
    """One way to authenticate, and an App with everything it needs. Raises ConfigError."""
    app_set = settings.github_app_id is not None
    key_set = settings.github_app_key is not None or settings.github_app_key_file is not None
    if settings.github_token is not None and (app_set or key_set):
        raise ConfigError(
            "GITHUB_TOKEN and GITHUB_APP_ID are set together: queuebot authenticates to GitHub"
            " with a token or as a GitHub App; unset one"
        )
    if not app_set:
        given = [
            name
            for name, value in (
                ("GITHUB_APP_PRIVATE_KEY", settings.github_app_key),
                ("GITHUB_APP_PRIVATE_KEY_FILE", settings.github_app_key_file),
                ("GITHUB_APP_INSTALLATION_ID", settings.github_app_installation),
            )
            if value is not None
        ]
        if given:
            raise ConfigError(
                f"{' and '.join(given)} set without GITHUB_APP_ID: set the App's id (its"
                " settings, About), or unset them"
            )
        return
    if not key_set:
        raise ConfigError(
            f"GITHUB_APP_ID is set without the App's private key: set {_KEY_VARIABLES}"
        )
    if settings.github_app_key is not None and settings.github_app_key_file:
        raise ConfigError(
            "GITHUB_APP_PRIVATE_KEY and GITHUB_APP_PRIVATE_KEY_FILE are set together: give one"
        )
    if settings.github_enterprise is not None:
        raise ConfigError(
            "GITHUB_ENTERPRISE is set with GITHUB_APP_ID: GitHub lists an enterprise's runners"
            " to a classic token only (manage_runners:enterprise); use GITHUB_TOKEN"
        )
    if settings.github_app_installation is not None and len(settings.github_orgs) > 1:
        raise ConfigError(
            "GITHUB_APP_INSTALLATION_ID names one installation, which is on one organization,"
            f" but GITHUB_ORG names {len(settings.github_orgs)}: unset it, and queuebot finds"
            " the App's installation on each organization"
        )
    app_private_key(settings)


def has_github_rest(settings: _Settings) -> bool:
    """Whether queuebot can ask GitHub's REST API at all: a token, or a GitHub App."""
    return settings.github_token is not None or settings.github_app_id is not None
