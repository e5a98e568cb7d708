"""GitHub's pagination as the sandbox's lists answer it ("Using pagination in the REST API" on
docs.github.com): `per_page` (default 30, at most 100) and `page` (default 1); a list longer
than a page has a `Link` header with `prev`, `next`, `last` and `first`, in that order, each
present only when it applies, each URL keeping the request's other parameters and adding
`page`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from aiohttp import web


def paginate(
    request: web.Request,
    listed: Sequence[Any],
    base: str,
    headers: dict[str, str],
    reachable: int | None = None,
) -> tuple[list[Any], int]:
    """The request's page of `listed` and the list's length, its `Link` header (to pages of
    `base`, a URL without a query) added to `headers`; only the first `reachable` items are
    served (GitHub's cap on a search)."""

    def number(name: str, default: int) -> int:
        raw = request.query.get(name, "")
        return int(raw) if raw.isdigit() and int(raw) > 0 else default

    per_page, page = min(number("per_page", 30), 100), number("page", 1)
    served = listed if reachable is None else listed[:reachable]
    last = max(1, math.ceil(len(served) / per_page))
    kept = [(k, v) for k, v in request.query.items() if k != "page"]

    def link(to: int, rel: str) -> str:
        return f'<{base}?{urlencode([*kept, ("page", str(to))])}>; rel="{rel}"'

    links = [link(page - 1, "prev")] if page > 1 else []
    if page < last:
        links += [link(page + 1, "next"), link(last, "last")]
    if page > 1:
        links.append(link(1, "first"))
    if links:
        headers["Link"] = ", ".join(links)
    return list(served[(page - 1) * per_page :][:per_page]), len(listed)
