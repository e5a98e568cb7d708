"""Who may talk to the workspace over HTTP: requests naming an address it listens on, pages
of its own origin, and JSON bodies for whatever changes state outside Slack's own API.

The page and the control endpoints (`/`, `/static/`, `/ui/...`, `/_sandbox/...`, the demo's
buttons among them) act for whoever calls them: they click as alice, fire alerts, make the Web
API fail. A web page elsewhere has two ways in, closed here:

- A cross-site "simple" request (a form post, `fetch` with `text/plain` or `mode: "no-cors"`)
  reaches a server without asking first. Anything but GET/HEAD/OPTIONS must be
  `application/json`, which a browser sends cross-site only after a CORS preflight the
  workspace never grants (415 otherwise), and an `Origin` that is not the page's own is
  refused outright (403).
- DNS rebinding: once evil.example's name points at 127.0.0.1, its page is same-origin with the
  workspace as far as the browser knows, but its requests still say `Host: evil.example`. Every
  request, Slack's API included, must name an address the workspace listens on, with its port:
  421 Misdirected Request otherwise (RFC 9110 §15.5.20: this server does not answer for that
  name; 403 is kept for an origin that is known and refused).

Slack's own routes (`/api/`, `/response/`, `/upload/`, `/archives/`, `/socket`, and incoming
webhooks under `/services/`) keep Slack's rules (form or JSON bodies, a token or an
unguessable URL) and get the Host check only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import hdrs, web

#: The names of this machine's loopback interface that a browser may put in `Host`.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
#: Addresses that mean "every interface" when listening.
WILDCARDS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - names them, binds nothing
#: Slack's routes: they answer as Slack does, to any body Slack takes.
SLACK_PATHS = ("/api/", "/response/", "/upload/", "/archives/", "/socket", "/services/")
SAFE_METHODS = frozenset({hdrs.METH_GET, hdrs.METH_HEAD, hdrs.METH_OPTIONS})

_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_loopback(host: str) -> bool:
    """`host` (a name or an address) is only reachable from this machine."""
    address = _ip(host)
    return host == "localhost" if address is None else address.is_loopback


def split_authority(value: str) -> tuple[str, int] | None:
    """A `Host` header's host (lowercase, IPv6 without brackets) and port (80 when absent);
    None when it is not one."""
    value = value.strip().lower()
    if value.startswith("["):
        host, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port = rest[1:]
    else:
        host, _, port = value.partition(":")
    if not host or (port and not port.isdigit()):
        return None
    number = int(port) if port else 80
    return (host, number) if 0 < number < 65536 else None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


@dataclass(frozen=True)
class Listening:
    """Where the workspace is served: the address it was bound to (or the name it was
    reached at, when served by something else), the port, and a name it was asked to listen
    on, which a browser pointed at that name sends."""

    host: str
    port: int
    alias: str | None = None

    def answers_for(self, host: str, port: int) -> bool:
        """A request naming `host:port` reached this workspace by an address it listens on."""
        if port != self.port:
            return False
        if host == self.alias:
            return True
        if self.host in WILDCARDS:
            # Every interface: any address literal reaching it is one of this machine's. A
            # rebinding page always names its own domain, never an address.
            return host == "localhost" or _ip(host) is not None
        if is_loopback(self.host) and is_loopback(host):
            return host in LOOPBACK_NAMES or _ip(host) == _ip(self.host)
        bound, named = _ip(self.host), _ip(host)
        return host == self.host or (bound is not None and bound == named)

    def shown(self) -> str:
        if self.host in WILDCARDS:
            return f"any address of this machine, port {self.port}"
        names = sorted(LOOPBACK_NAMES) if is_loopback(self.host) else [self.host]
        names += [self.alias] if self.alias and self.alias not in names else []
        return ", ".join(f"[{n}]:{self.port}" if ":" in n else f"{n}:{self.port}" for n in names)


class LocalGuard:
    """The aiohttp middleware that applies the rules above, once told where it listens."""

    def __init__(self) -> None:
        self.at: Listening | None = None

    def listening(self, asked: str, bound: str, port: int) -> None:
        """Served on `port` at `bound` (an address), as `asked` for (an address, a name, or
        every interface)."""
        asked, bound = asked.strip("[]").lower(), bound.strip("[]").lower()
        if asked in WILDCARDS:
            self.at = Listening(asked, port)
        else:
            # A name asked for (this machine's, say) is what a browser pointed at it sends.
            self.at = Listening(bound, port, None if _ip(asked) is not None else asked)

    @web.middleware
    async def middleware(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        # The raw header: request.host falls back to this machine's name when it is missing.
        named = request.headers.get(hdrs.HOST, "")
        authority = split_authority(named)
        if self.at is None or authority is None or not self.at.answers_for(*authority):
            where = self.at.shown() if self.at is not None else "nowhere yet"
            raise web.HTTPMisdirectedRequest(
                text=f"this workspace answers at {where}, not under the name this request used"
            )
        if request.path.startswith(SLACK_PATHS):
            return await handler(request)
        origin = request.headers.get(hdrs.ORIGIN)
        if origin is not None and origin.lower() != f"http://{named.strip().lower()}":
            raise web.HTTPForbidden(text="requests from other pages are refused")
        if request.method not in SAFE_METHODS and request.content_type != "application/json":
            # A browser sends JSON cross-site only after a preflight, which is never granted.
            raise web.HTTPUnsupportedMediaType(text="send application/json")
        response = await handler(request)
        # The page acts as alice at a click: no other site may frame it and steer the clicks
        # (older browsers read X-Frame-Options, newer the policy).
        response.headers[hdrs.X_FRAME_OPTIONS] = "DENY"
        response.headers[hdrs.CONTENT_SECURITY_POLICY] = "frame-ancestors 'none'"
        return response
