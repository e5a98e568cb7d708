"""The systemd unit (`deploy/systemd/queuebot.service`) and its environment file, checked by
systemd's own tools and then started for real.

`systemd-analyze verify` runs with `--root=` on a small tree holding the unit as shipped, where
the guide installs it, and the console script at its ExecStart, /opt/queuebot/bin/queuebot
(verify refuses one that is not executable): a copy with ExecStart rewritten to this checkout
would verify a file nobody installs. The tree has a copy of the machine's unit directory, for
`sysinit.target` and `network-online.target`.

Started for real: systemd is not PID 1 on the development machines, so `systemd-run` cannot
start anything; the last test boots systemd as the init of a podman container whose root is a
small tree (the machine's /usr, read-only; an /etc holding the unit, enabled, and the example
environment file filled in) with queuebot installed as the guide installs it, a virtualenv at
/opt/queuebot holding a wheel of this checkout (its dependencies are the checkout's own,
already installed, reached through a `.pth` file: the test downloads nothing). The bot it
starts, under the unit's whole sandbox, answers /healthz, posts an alert to the local Slack
workspace, draws a chart, keeps its store in the state directory as its own user, and stops
cleanly within the 10 seconds promised.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import pytest

from bot.config import Settings, load_settings
from bot.config.github import ORG_SECRET_PREFIX
from queuebot_lab.sandbox.slack import SlackSandbox
from testkit.github import HOOK_SECRET, deliver, job_delivery
from testkit.harness import BOT_TOKEN, CHANNEL_NAME, SIGNING_SECRET, WEBHOOK_TOKEN, webhook_headers
from testkit.integration import require, require_binary
from testkit.payloads import reference
from testkit.servers import answers_healthz, free_port

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "systemd" / "queuebot.service"
EXAMPLE = ROOT / "deploy" / "systemd" / "queuebot.env.example"
SYSTEMD = "apt-get install -y systemd"
PODMAN = "apt-get install -y podman runc"
#: `NAME=value`, or the same commented out: a setting the example shows.
ASSIGNMENT = re.compile(r"^(#?)([A-Z][A-Z0-9_]*)=(.*)$")
EXPOSURE = re.compile(r"Overall exposure level for queuebot\.service: (\d+\.\d+) (\w+)")
UNIFIED = Path("/sys/fs/cgroup/unified")
UNITS = Path("/usr/lib/systemd/system")
#: What the example environment file's `queuebot check` line gives `systemd-run`.
CHECK = (
    *("-p", "DynamicUser=yes", "-p", "User=queuebot", "-p", "PrivateUsers=yes"),
    *("-p", "StateDirectory=queuebot", "-p", "EnvironmentFile=/etc/queuebot/queuebot.env"),
    *("-E", "QUEUEBOT_DATABASE=/var/lib/queuebot/queuebot.db", "/opt/queuebot/bin/queuebot"),
    "check",
)


def analyze(*arguments: str) -> subprocess.CompletedProcess[str]:
    tool = require_binary("systemd-analyze", SYSTEMD)
    return subprocess.run(  # noqa: S603 - systemd-analyze on the shipped unit
        [tool, *arguments], capture_output=True, text=True, timeout=120, check=False
    )


def verify_tree(tmp_path: Path, unit_text: str) -> Path:
    """A root holding `unit_text` as /etc/systemd/system/queuebot.service, the console script
    at /opt/queuebot/bin/queuebot and the units every service depends on."""
    tree = tmp_path / "root"
    (tree / "etc/systemd/system").mkdir(parents=True)
    (tree / "etc/systemd/system/queuebot.service").write_text(unit_text)
    if not (UNITS / "sysinit.target").exists():
        require("systemd's units", f"{UNITS} has none; install them with: {SYSTEMD}")
    shutil.copytree(UNITS, tree / "usr/lib/systemd/system", symlinks=True)
    (tree / "opt/queuebot/bin").mkdir(parents=True)
    shutil.copy2(Path(sys.executable).parent / "queuebot", tree / "opt/queuebot/bin/queuebot")
    return tree


def test_the_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    tree = verify_tree(tmp_path, UNIT.read_text())
    done = analyze("verify", f"--root={tree}", "queuebot.service")
    # verify warns about an unknown key or a bad value on stderr and still exits 0.
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_verify_tells_a_mistake(tmp_path: Path) -> None:
    """The check can fail: a misspelt option is reported."""
    misspelt = UNIT.read_text().replace("ProtectHome=yes", "ProtectHomes=yes")
    done = analyze("verify", f"--root={verify_tree(tmp_path, misspelt)}", "queuebot.service")
    assert "Unknown key 'ProtectHomes'" in done.stderr


def test_the_unit_is_rated_ok_by_systemd_analyze_security(
    record_property: Callable[[str, object], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """2.5 or lower, "OK" (a unit with no sandbox is 9.6 "UNSAFE")."""
    done = analyze("security", "--offline=true", "--no-pager", str(UNIT))
    found = EXPOSURE.search(done.stdout)
    assert found is not None, done.stdout + done.stderr
    score, rating = float(found[1]), found[2]
    record_property("systemd_analyze_security", f"{score} {rating}")
    with capsys.disabled():
        print(f"\nsystemd-analyze security: queuebot.service {score} {rating}")
    assert score <= 2.5 and rating == "OK", done.stdout


def example_settings() -> dict[str, tuple[bool, str]]:
    """Every variable the example names: whether it is commented out, and its value."""
    found = (ASSIGNMENT.match(line) for line in EXAMPLE.read_text().splitlines())
    return {m[2]: (m[1] == "#", m[3]) for m in found if m}


def test_the_example_names_every_setting_and_only_settings() -> None:
    known = {f.validation_alias for f in Settings.model_fields.values()} - {None}
    named = set(example_settings())
    assert known - named == set()
    assert {n for n in named - known if not n.startswith(ORG_SECRET_PREFIX)} == set()


def test_the_example_as_shipped_is_what_serve_accepts() -> None:
    """Its placeholders have the shapes serve checks (a bot token starts with xoxb-)."""
    given = {name: value for name, (off, value) in example_settings().items() if not off}
    settings = load_settings(given, for_serve=True)
    assert settings.webhook_token is not None and settings.host == "127.0.0.1"
    assert not any(v.startswith(("'", '"')) or v != v.strip() for v in given.values())


def filled_example(values: dict[str, str]) -> str:
    """The example with `values` set, commented-out lines included."""
    lines = EXAMPLE.read_text().splitlines()
    for index, line in enumerate(lines):
        if (m := ASSIGNMENT.match(line)) and m[2] in values:
            lines[index] = f"{m[2]}={values[m[2]]}"
    assert set(values) <= set(example_settings())
    return "\n".join(lines) + "\n"


def podman(*arguments: str, timeout: float = 300) -> str:
    tool = require_binary("podman", PODMAN)
    # crun, podman's default runtime, refuses to start containers on these machines.
    done = subprocess.run(  # noqa: S603 - podman on the test's own tree
        [tool, "--runtime", "runc", *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, f"podman {' '.join(arguments)}:\n{done.stdout}{done.stderr}"
    return done.stdout


#: Where the checkout's installed dependencies are mounted in the container: a path of its
#: own, not the checkout's (a checkout under /tmp would be hidden by the tmpfs systemd mounts
#: there).
DEPENDENCIES = "/opt/checkout-dependencies"


def run_options(tree: Path) -> list[str]:
    # podman's default limits are above what a process may raise its own to on these machines;
    # the checkout's installed dependencies are read from the checkout's environment.
    site = sysconfig.get_paths()["purelib"]
    return [
        *("--rm", "--network", "host", "--ulimit", "nofile=1024:1024"),
        *("--ulimit", "nproc=4096:4096", "-v", "/usr:/usr:ro"),
        *("-v", f"{site}:{DEPENDENCIES}:ro", "--rootfs", str(tree)),
    ]


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[Path]:
    """A root with queuebot installed as the guide says and its unit enabled: /usr is the
    machine's, bound read-only when it runs."""
    require_binary("runc", PODMAN)
    if not Path("/usr/lib/systemd/systemd").exists():
        require("systemd", f"/usr/lib/systemd/systemd is missing; install it with: {SYSTEMD}")
    python = subprocess.run(
        ["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if python != str(sys.version_info[:2]):
        require("the machine's python3 at this suite's version", f"it is {python or 'missing'}")
    tree = tmp_path / "root"
    for folder in ("usr", "etc/queuebot", "etc/systemd/system/multi-user.target.wants", "opt"):
        (tree / folder).mkdir(parents=True)
    (tree / DEPENDENCIES.lstrip("/")).mkdir()
    for link, target in (("bin", "usr/bin"), ("sbin", "usr/sbin"), ("lib", "usr/lib")):
        (tree / link).symlink_to(target)
    if Path("/lib64").exists():
        (tree / "lib64").symlink_to("usr/lib64")
    for name in ("passwd", "group", "nsswitch.conf"):
        shutil.copy(Path("/etc") / name, tree / "etc" / name)
    if Path("/etc/fonts").is_dir():  # fontconfig's configuration, which matplotlib asks
        shutil.copytree("/etc/fonts", tree / "etc/fonts", symlinks=True)
    (tree / "etc/os-release").symlink_to("../usr/lib/os-release")
    (tree / "etc/machine-id").touch()
    system = tree / "etc/systemd/system"
    (system / "default.target").symlink_to("/usr/lib/systemd/system/multi-user.target")
    shutil.copy(UNIT, system / "queuebot.service")
    (system / "multi-user.target.wants/queuebot.service").symlink_to("../queuebot.service")
    wheel = build_wheel(tmp_path)
    options = run_options(tree)
    podman("run", *options, "/usr/bin/python3", "-m", "venv", "/opt/queuebot")
    podman(
        "run",
        *("-v", f"{wheel.parent}:/mnt/wheel:ro", *options),
        *("/opt/queuebot/bin/pip", "install", "--quiet", "--no-index", "--no-deps"),
        f"/mnt/wheel/{wheel.name}",
    )
    site = f"opt/queuebot/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
    (tree / site / "checkout-dependencies.pth").write_text(DEPENDENCIES)
    yield tree


def build_wheel(tmp_path: Path) -> Path:
    """This checkout's wheel, built offline from a copy (setuptools writes in the tree)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("bot", "templates"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    wheels = tmp_path / "wheels"
    subprocess.run(  # noqa: S603 - our own interpreter and pip
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"),
            *("--no-build-isolation", "--wheel-dir", str(wheels), str(source)),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = wheels.glob("queuebot-*.whl")
    return wheel


def cgroup_options(name: str) -> tuple[list[str], Path | None]:
    """What systemd in the container needs to see its services' cgroups empty. A machine of
    cgroup v2 alone gives it its own; on a hybrid one (v1 controllers, v2 at `unified`), as
    here, podman mounts no v2 hierarchy and systemd never learns that a stopped service is gone,
    so the container gets a v2 cgroup of its own, made here, at `unified`."""
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        return [], None
    if not (UNIFIED / "cgroup.procs").exists():
        require("a cgroup v2 hierarchy", "systemd tracks services with it")
    own = UNIFIED / name
    own.mkdir()
    return ["--cgroupns=private", "-v", f"{own}:/sys/fs/cgroup/unified:rw"], own


def remove_cgroup(own: Path) -> None:
    """Remove `own` and the cgroups systemd made in it, once podman's monitor has left it."""
    folders = sorted((p for p in own.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
    for folder in [*folders, own]:
        for _ in range(100):
            try:
                folder.rmdir()
                break
            except OSError:  # EBUSY while a process is still in it
                time.sleep(0.1)


@asynccontextmanager
async def booted(tree: Path) -> AsyncIterator[str]:
    """systemd as the init of a container on `tree`; yields the container's name."""
    name = f"queuebot-systemd-{uuid.uuid4().hex[:8]}"
    cgroup, own = cgroup_options(name)
    command = ["run", "-d", "--name", name, "--systemd=always", *cgroup, *run_options(tree)]
    command.remove("--rm")
    command.append("/usr/lib/systemd/systemd")
    # The container's processes start in `own`: podman is started from it.
    enter = 'echo $$ > "$1" && shift && exec "$@"'
    tool = require_binary("podman", PODMAN)
    procs = str(own / "cgroup.procs") if own else "/dev/null"
    try:
        done = await asyncio.to_thread(
            subprocess.run,
            ["/bin/sh", "-c", enter, "sh", procs, tool, "--runtime", "runc", *command],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, f"podman {' '.join(command)}:\n{done.stderr}"
        yield name
    finally:
        await asyncio.to_thread(podman, "rm", "--force", "--ignore", "--time", "0", name)
        if own is not None:
            await asyncio.to_thread(remove_cgroup, own)


async def inside(name: str, *command: str) -> str:
    return await asyncio.to_thread(podman, "exec", name, *command, timeout=60)


async def until_healthy(url: str, name: str) -> None:
    if await answers_healthz(url):
        return
    log = await inside(name, "journalctl", "--no-pager", "-u", "queuebot")
    raise AssertionError(f"queuebot did not answer /healthz under systemd:\n{log}")


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_the_unit_runs_the_bot_under_systemd(installed: Path) -> None:
    """Booted by systemd with the unit's whole sandbox: healthy, posts to Slack, draws a chart,
    writes its store as its own user, and stops cleanly on `systemctl stop` within 10 s."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    sandbox = SlackSandbox(
        bot_token=BOT_TOKEN, signing_secret=SIGNING_SECRET, channel_name=CHANNEL_NAME
    )
    await sandbox.start()
    sandbox.request_url = f"{url}/slack/events"
    env = installed / "etc/queuebot/queuebot.env"
    env.write_text(
        filled_example(
            {
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                "SLACK_API_URL": sandbox.api_url,
                "QUEUEBOT_CHANNEL": f"#{CHANNEL_NAME}",
                "QUEUEBOT_WEBHOOK_TOKEN": WEBHOOK_TOKEN,
                "GITHUB_WEBHOOK_SECRET": HOOK_SECRET,
                "PORT": str(port),
            }
        )
    )
    env.chmod(0o600)
    try:
        async with booted(installed) as name, aiohttp.ClientSession() as http:
            await until_healthy(url, name)
            async with http.post(
                f"{url}/webhooks/grafana", json=reference(), headers=webhook_headers()
            ) as answer:
                assert answer.status == 202
            await sandbox.wait_for(lambda: sandbox.messages() or None, timeout=30)
            now = datetime.now(UTC)
            for job in range(3):
                queued = job_delivery("queued", 900 + job, now - timedelta(minutes=20 + job))
                assert (await deliver(http, url, queued))[0] == 202
            assert (await sandbox.slash_command("/queue-status", "linux.2xlarge")).status == 200
            private = await sandbox.wait_for(lambda: sandbox.ephemerals() or None, timeout=60)
            assert private is not None
            (image,) = [b for b in private[0].blocks if b["type"] == "image"]
            chart = next(f for f in sandbox.files if f.id == image["slack_file"]["id"])
            assert chart.content is not None and chart.content.startswith(b"\x89PNG")

            store = installed / "var/lib/private/queuebot/queuebot.db"
            owner = store.stat().st_uid
            assert owner != 0 and store.stat().st_mode & 0o077 == 0
            for cache in ("matplotlib", "fontconfig"):
                assert (installed / "var/cache/private/queuebot" / cache).is_dir()
            # `queuebot check` as the example file says to run it: the service's user and store.
            checked = await inside(name, "systemd-run", "--pipe", "--wait", "--quiet", *CHECK)
            assert "store: ok (/var/lib/queuebot/queuebot.db)" in checked
            assert "FAILED" not in checked and store.stat().st_uid == owner

            started = asyncio.get_running_loop().time()
            await inside(name, "systemctl", "stop", "queuebot")
            took = asyncio.get_running_loop().time() - started
            shown = await inside(
                name, "systemctl", "show", "queuebot", "-p", "Result", "-p", "ExecMainStatus"
            )
            log = await inside(name, "journalctl", "--no-pager", "-u", "queuebot")
            assert shown.split() == ["Result=success", "ExecMainStatus=0"], log
            assert took < 10, log
            for trouble in ("Traceback", "Permission denied", "not permitted", "Fontconfig"):
                assert trouble not in log, log
    finally:
        await sandbox.stop()
