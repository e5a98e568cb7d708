"""The container image (`Containerfile`), built and run here as a user would run it.

No registry is reachable from the test machines: the image is built on a plain Debian 12 made
with mmdebstrap (`testkit.podman`, kept between runs under a tag named for what makes it), the
base the Containerfile must work on besides the official Python image. It then runs with a
read-only root file system, its state in a volume, against the local Slack workspace (over the
host's network, where the workspace listens on 127.0.0.1): it answers /healthz and podman's
health check, posts the reference alert, runs as its own user, and on SIGTERM (`podman stop`)
exits 0 before podman's 10 s are up; started again on the same volume, it knows its incident
and resolves the same message. (That a request in flight is finished on SIGTERM is the
command's own behaviour, shown in tests/cli/test_serve_stop.py.)
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot import __version__
from queuebot_lab.sandbox.slack import PostedMessage, SlackSandbox
from testkit.harness import BOT_TOKEN, CHANNEL_NAME, SIGNING_SECRET, WEBHOOK_TOKEN, webhook_headers
from testkit.payloads import encoded, reference
from testkit.podman import DebianBase, Podman, build_image, debian_mirror
from testkit.servers import answers_healthz, free_port
from testkit.timing import fast_environment

STATE = "/var/lib/queuebot"
#: What a start must not have met: a write refused outside the volume and /tmp among them.
TROUBLE = ("Traceback", "Read-only file system", "Permission denied", "Matplotlib created")


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Podman, str]]:
    """The image built from this checkout on the Debian base; removed after the module's
    tests (the dependencies' layer stays in podman's cache for the next build)."""
    workdir = tmp_path_factory.mktemp("image")
    podman = Podman(workdir)
    tag = f"localhost/queuebot-test:{uuid.uuid4().hex[:12]}"

    async def build() -> None:
        base = await DebianBase(debian_mirror()).image(podman, workdir)
        await build_image(podman, base, tag, workdir)

    asyncio.run(build())
    try:
        yield podman, tag
    finally:
        asyncio.run(podman("rmi", "--ignore", tag))


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(1500)
async def test_the_image_holds_the_product_alone_for_a_numeric_non_root_user(
    image: tuple[Podman, str],
    record_property: Callable[[str, object], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`queuebot serve` as uid 10001 (numeric, which Kubernetes' runAsNonRoot can verify), its
    port, volume, health check and labels declared; no compiler, pip nor lab inside."""
    podman, tag = image
    config: dict[str, Any] = json.loads(await podman.inspect(tag, "{{json .Config}}", "image"))
    assert config["User"] == "10001:10001"
    assert (config["Entrypoint"], config["Cmd"]) == (["queuebot"], ["serve"])
    assert list(config["ExposedPorts"]) == ["3000/tcp"]
    assert list(config["Volumes"]) == [STATE]
    assert f"QUEUEBOT_DATABASE={STATE}/queuebot.db" in config["Env"]
    # Podman shows it apart from the rest of the configuration (and keeps it only in Docker's
    # image format).
    health = json.loads(await podman.inspect(tag, "{{json .HealthCheck}}", "image"))
    assert health["Test"][0] == "CMD" and "/healthz" in health["Test"][-1]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.version"] == __version__
    assert labels["org.opencontainers.image.title"] == "queuebot"

    look = (
        "import importlib.util as u, json, os, shutil; print(json.dumps({'uid': os.getuid(),"
        " 'programs': [p for p in ('gcc', 'cc', 'c++', 'make', 'pip', 'pip3') if shutil.which(p)],"
        " 'modules': [m for m in ('queuebot_lab', 'pip', 'setuptools', 'pytest')"
        " if u.find_spec(m)]}))"
    )
    inside = await podman("run", "--rm", "--read-only", "--entrypoint", "python", tag, "-c", look)
    assert json.loads(inside.stdout) == {"uid": 10001, "programs": [], "modules": []}
    demo = await podman("run", "--rm", "--read-only", tag, "demo", check=False)
    assert demo.returncode == 2 and "pip install . ./lab" in demo.stderr

    size = int(await podman.inspect(tag, "{{.Size}}", "image"))
    record_property("image_size_bytes", size)
    with capsys.disabled():
        print(f"\nqueuebot image on Debian 12: {size / 1e6:.0f} MB")


async def until_healthy(podman: Podman, name: str, url: str) -> None:
    if await answers_healthz(url):
        return
    logs = await podman("logs", name)
    raise AssertionError(f"the container did not answer /healthz:\n{logs.stdout}{logs.stderr}")


async def notify(url: str, body: dict[str, Any]) -> int:
    """Post `body` to the bot's Grafana webhook; its answer's status."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{url}/webhooks/grafana", data=encoded(body), headers=webhook_headers()
        ) as answer,
    ):
        return answer.status


async def stopped(podman: Podman, name: str) -> float:
    """Stop the container as `docker stop` does (SIGTERM, SIGKILL 10 s later); how long it
    took. Exit code 0 is the bot's own exit on SIGTERM: killed, it would be 137."""
    loop = asyncio.get_running_loop()
    asked = loop.time()
    await podman("stop", "--time", "10", name)
    took = loop.time() - asked
    state = await podman.inspect(name, "{{.State.ExitCode}} {{.State.OOMKilled}}")
    assert state == "0 false", (await podman("logs", name)).stderr
    return took


def text(message: PostedMessage) -> str:
    return json.dumps(message.blocks, ensure_ascii=False) + "\n" + message.text


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(1500)
async def test_the_image_serves_read_only_keeps_its_state_in_the_volume_and_stops_cleanly(
    image: tuple[Podman, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Read-only, state in a volume: healthy, posts the alert, as its own user; exits 0 on
    SIGTERM within podman's 10 s; started again on the volume, resolves the same message."""
    podman, tag = image
    sandbox = SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    )
    await sandbox.start()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    name = f"queuebot-test-{uuid.uuid4().hex[:12]}"
    settings = {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "SLACK_API_URL": sandbox.api_url,
        "QUEUEBOT_CHANNEL": f"#{CHANNEL_NAME}",
        "QUEUEBOT_WEBHOOK_TOKEN": WEBHOOK_TOKEN,
        "HOST": "127.0.0.1",
        "PORT": str(port),
        **fast_environment(),
    }
    try:
        await podman("volume", "create", name)
        await podman(
            *("run", "--detach", "--name", name, "--read-only", "--network", "host"),
            *("--volume", f"{name}:{STATE}", *(f"--env={variable}" for variable in settings)),
            tag,
            env=settings,
        )
        await until_healthy(podman, name, url)
        assert await notify(url, reference()) == 202
        await sandbox.wait_for(sandbox.messages, timeout=30)
        (parent,) = sandbox.messages()
        assert "114 min" in text(parent)

        status = (await podman("exec", name, "cat", "/proc/1/status")).stdout
        (uids,) = [line.split()[1:] for line in status.splitlines() if line.startswith("Uid:")]
        assert uids == ["10001"] * 4
        owner = await podman("exec", name, "stat", "-c", "%u", f"{STATE}/queuebot.db")
        assert owner.stdout.strip() == "10001"
        assert (await podman("healthcheck", "run", name, check=False)).returncode == 0

        took = await stopped(podman, name)
        with capsys.disabled():
            print(f"\nqueuebot container stopped on SIGTERM in {took:.1f} s")

        # Started again on the volume: the store knows the incident the resolution is for.
        await podman("start", name)
        await until_healthy(podman, name, url)
        assert await notify(url, reference("resolved")) == 202
        await sandbox.wait_for(lambda: "Resolved" in text(sandbox.messages()[0]), timeout=30)
        (resolved,) = sandbox.messages()
        assert resolved.ts == parent.ts
        await stopped(podman, name)
        logs = await podman("logs", name)
        for trouble in TROUBLE:
            assert trouble not in logs.stdout + logs.stderr, logs.stderr
    finally:
        await podman("rm", "--force", "--ignore", "--time", "0", name)
        await podman("volume", "rm", "--force", name)
        await sandbox.stop()


def test_the_base_comes_from_the_debian_archive_apt_is_configured_with(tmp_path: Path) -> None:
    """deb822 `.sources` and one-line `sources.list` alike; the security archive is not it."""
    listed = tmp_path / "sources.list.d"
    listed.mkdir()
    (listed / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
        "Components: main\n\n"
        "Types: deb deb-src\nURIs: http://mirror.example/debian\nSuites: bookworm"
        " bookworm-updates\nComponents: main contrib\n"
    )
    assert debian_mirror(tmp_path) == "http://mirror.example/debian"
    (listed / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text(
        "# deb http://old.example/debian bookworm main\n"
        "deb [signed-by=/usr/share/keyrings/k.gpg] https://deb.example/debian bookworm main\n"
    )
    assert debian_mirror(tmp_path) == "https://deb.example/debian"
    (tmp_path / "sources.list").unlink()
    assert debian_mirror(tmp_path) == "http://deb.debian.org/debian"
