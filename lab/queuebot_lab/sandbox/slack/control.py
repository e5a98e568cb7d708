"""The sandbox's control endpoints under `/_sandbox/`, for processes that cannot call Python.

A benchmark in another process injects faults and reads the call log over HTTP:
`POST /_sandbox/faults` {method, status, retry_after, count, error}, `DELETE /_sandbox/faults`,
`GET /_sandbox/faults`, `GET /_sandbox/calls?method=chat.postMessage`. They are not Slack's:
POST and DELETE say `Content-Type: application/json`, and every request names the address the
sandbox listens on (guard.py), so a web page cannot make the workspace fail.
"""

from aiohttp import web
from pydantic import ValidationError

from queuebot_lab.sandbox.slack.faults import Faults, FaultSpec
from queuebot_lab.sandbox.slack.workspace import Workspace


class Control:
    def __init__(self, workspace: Workspace, faults: Faults) -> None:
        self.workspace = workspace
        self.faults = faults

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/_sandbox/faults", self.add_fault),
            web.delete("/_sandbox/faults", self.clear_faults),
            web.get("/_sandbox/faults", self.list_faults),
            web.get("/_sandbox/calls", self.list_calls),
        ]

    async def add_fault(self, request: web.Request) -> web.Response:
        try:
            spec = FaultSpec.model_validate_json(await request.text())
            fault = self.faults.add_spec(spec)
        except (ValidationError, ValueError) as problem:
            return web.json_response({"ok": False, "error": str(problem)}, status=400)
        return web.json_response({"ok": True, "fault": fault.describe()})

    async def clear_faults(self, request: web.Request) -> web.Response:
        self.faults.clear()
        return web.json_response({"ok": True})

    async def list_faults(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"ok": True, "faults": [f.describe() for f in self.faults.pending]}
        )

    async def list_calls(self, request: web.Request) -> web.Response:
        method = request.query.get("method")
        calls = [
            {
                "method": c.method,
                "status": c.status,
                "ok": c.ok,
                "error": c.error,
                "received_at": c.received_at,
            }
            for c in self.workspace.calls
            if method is None or c.method == method
        ]
        return web.json_response({"ok": True, "calls": calls})
