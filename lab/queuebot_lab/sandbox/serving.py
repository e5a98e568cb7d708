"""Serving one aiohttp application on a real port, as the local stand-ins and the demo do."""

from aiohttp import web


async def serve(
    app: web.Application, host: str = "127.0.0.1", port: int = 0, *, access_log: bool = True
) -> tuple[web.AppRunner, str]:
    """Serve `app` on `host:port` (0 picks a free port): the runner, to clean up, and the base
    URL it answers at (over loopback when `host` is every interface). Raises OSError, having
    cleaned up, when the port cannot be had."""
    runner = web.AppRunner(app) if access_log else web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError:
        await runner.cleanup()
        raise
    bound_host, bound_port = runner.addresses[0][:2]
    # Listening on every interface: this machine reaches it over loopback, and a URL naming
    # 0.0.0.0 would send that as its Host.
    shown = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(bound_host, bound_host)  # noqa: S104
    return (
        runner,
        f"http://[{shown}]:{bound_port}" if ":" in shown else f"http://{shown}:{bound_port}",
    )
