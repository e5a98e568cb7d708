"""Serving one aiohttp application on a real port, as the local stand-ins and the demo do."""

from aiohttp import web


async def serve(
    app: web.Application, host: str = "127.0.0.1", port: int = 0, *, access_log: bool = True
) -> tuple[web.AppRunner, str]:
    """Serve `app` on `host:port` (0 picks a free port): the runner, to clean up, and the base
    URL it answers at. Raises OSError, having cleaned up, when the port cannot be had."""
    runner = web.AppRunner(app) if access_log else web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError:
        await runner.cleanup()
        raise
    bound_host, bound_port = runner.addresses[0][:2]
    return runner, f"http://{bound_host}:{bound_port}"
