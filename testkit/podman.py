"""Podman for the container image's test: a Debian base made with mmdebstrap, the image built
from the repository's Containerfile on it, and containers run from it.

No registry is reachable from the test machines, so the base is made from Debian's packages
(python3, python3-venv, ca-certificates, from the mirror apt is configured with) and kept
under a tag named for a digest of everything that makes it: a second run, or a second
checkout on the same machine, finds it and skips the slowest step. The image is built with
this machine's pip settings and the files they name bound read-only into the build (its
index, local wheels, constraints and CA bundle), as pip here needs them; the Containerfile
itself knows nothing of them.

Podman always runs with runc (`--runtime runc`: crun, its default, refuses to start
containers on these machines) and a containers.conf of its own that sets no rlimits, which
the machines do not allow (`CONTAINERS_CONF`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from testkit.integration import require_binary

REPOSITORY = Path(__file__).resolve().parents[1]
INSTALL = "apt-get install -y podman runc mmdebstrap"
BASE_REPOSITORY = "localhost/queuebot-test-base"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


class PodmanError(AssertionError):
    """A podman or mmdebstrap command failed; its output says why."""


async def execute(
    command: list[str],
    env: Mapping[str, str],
    timeout: float = 600.0,  # noqa: ASYNC109
) -> Done:
    """Run `command` to its end (killed after `timeout` seconds)."""
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
    )
    try:
        async with asyncio.timeout(timeout):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return Done(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


class Podman:
    """The podman program, run with runc and a containers.conf written in `workdir`."""

    def __init__(self, workdir: Path) -> None:
        self.binary = require_binary("podman", INSTALL)
        require_binary("runc", INSTALL)
        workdir.mkdir(parents=True, exist_ok=True)
        self.conf = workdir / "containers.conf"
        self.conf.write_text("[containers]\ndefault_ulimits = []\n")

    async def __call__(
        self,
        *arguments: str,
        env: Mapping[str, str] | None = None,
        check: bool = True,
        timeout: float = 600.0,  # noqa: ASYNC109
    ) -> Done:
        """`podman ARGUMENTS`, with `env` added to this process's environment (a container's
        settings are passed by name, `--env NAME`, so that no secret is on a command line)."""
        environment = {**os.environ, "CONTAINERS_CONF": str(self.conf), **(env or {})}
        done = await execute([self.binary, "--runtime", "runc", *arguments], environment, timeout)
        if check and done.returncode != 0:
            raise PodmanError(
                f"podman {' '.join(arguments)} exited with {done.returncode}:\n"
                f"{done.stdout}{done.stderr}"
            )
        return done

    async def exists(self, image: str) -> bool:
        return (await self("image", "exists", image, check=False)).returncode == 0

    async def inspect(self, what: str, template: str, kind: str = "container") -> str:
        """`podman KIND inspect --format TEMPLATE WHAT`: a container's, or an image's."""
        return (await self(kind, "inspect", "--format", template, what)).stdout.strip()


def debian_mirror(apt: Path = Path("/etc/apt"), suite: str = "bookworm") -> str:
    """The Debian archive apt on this machine takes `suite`'s main packages from (not the
    security archive), or Debian's own address when it names none."""
    for source in _sources(apt):
        uris = source.get("uris", [])
        if (
            "deb" in source.get("types", [])
            and suite in source.get("suites", [])
            and "main" in source.get("components", [])
            and uris
            and uris[0].startswith(("http://", "https://"))
            and "security" not in uris[0]
        ):
            return uris[0]
    return DEFAULT_MIRROR


def _sources(apt: Path) -> Iterator[dict[str, list[str]]]:
    """The sources apt reads, in deb822's terms: the `.sources` files' stanzas, and the lines
    of `sources.list` and `.list` files (`deb [options] URI SUITE COMPONENT...`)."""
    for path in [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*"))]:
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if path.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                yield {
                    m[1].lower(): m[2].split()
                    for m in re.finditer(r"^([A-Za-z-]+):(.*)$", stanza, re.M)
                }
        elif path.suffix == ".list":
            for line in text.splitlines():
                words = re.sub(r"\[[^]]*\]", "", line.split("#", 1)[0]).split()
                if len(words) >= 4:
                    yield {
                        "types": words[:1],
                        "uris": words[1:2],
                        "suites": words[2:3],
                        "components": words[3:],
                    }


@dataclass(frozen=True)
class DebianBase:
    """A plain Debian 12 with what the Containerfile asks of its base, and nothing else."""

    mirror: str
    suite: str = "bookworm"
    variant: str = "apt"
    packages: tuple[str, ...] = ("python3", "python3-venv", "ca-certificates")
    # dpkg's writes unsynced (the tree is thrown away if it fails), documentation left out.
    dpkg_options: tuple[str, ...] = (
        "force-unsafe-io",
        "path-exclude=/usr/share/doc/*",
        "path-include=/usr/share/doc/*/copyright",
        "path-exclude=/usr/share/man/*",
        "path-exclude=/usr/share/locale/*",
    )

    def arguments(self, tarball: Path) -> list[str]:
        return [
            f"--variant={self.variant}",
            f"--include={','.join(self.packages)}",
            *(f"--dpkgopt={option}" for option in self.dpkg_options),
            self.suite,
            str(tarball),
            self.mirror,
        ]

    @property
    def tag(self) -> str:
        """The image's name: a digest of what makes it (and of the machine it is for)."""
        made_of = json.dumps([platform.machine(), self.arguments(Path("-"))])
        return f"{BASE_REPOSITORY}:{hashlib.sha256(made_of.encode()).hexdigest()[:16]}"

    async def image(self, podman: Podman, workdir: Path) -> str:
        """The base image's tag: made and imported unless an earlier run left it."""
        if await podman.exists(self.tag):
            return self.tag
        mmdebstrap = require_binary("mmdebstrap", INSTALL)
        tarball = workdir / "debian-base.tar"
        done = await execute([mmdebstrap, *self.arguments(tarball)], os.environ, timeout=900)
        if done.returncode != 0:
            raise PodmanError(f"mmdebstrap exited with {done.returncode}:\n{done.stderr}")
        try:
            await podman("import", str(tarball), self.tag)
        finally:
            tarball.unlink()
        return self.tag


def pip_settings() -> tuple[list[str], set[Path]]:
    """The pip configuration files this machine's pip reads (global and the user's, as
    `pip config debug` lists them) and the local paths their settings, and PIP_* variables,
    name: an index or wheels on disk (`file://`), constraints, a CA bundle."""
    done = _pip_config_debug()
    files, named = [], set()
    for line in done.splitlines():
        if found := re.fullmatch(r"  (/\S.*), exists: True", line):
            files.append(found[1])
        # A setting of a file ("    global.cert: /etc/ssl/..."), or a variable ("  PIP_CERT='...'").
        elif found := re.fullmatch(r"    [\w.-]+: (.*)|  PIP_\w+='(.*)'", line):
            named.update(_paths((found[1] or found[2]).split()))
    return files, named


def _pip_config_debug() -> str:
    return subprocess.run(
        [sys.executable, "-m", "pip", "config", "debug"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _paths(values: Iterable[str]) -> set[Path]:
    found = set()
    for value in values:
        path = Path(value.removeprefix("file://"))
        if not path.is_absolute() or not path.exists():
            continue
        # A file index's pages link to its files beside `simple/`, as PEP 503 mirrors lay out.
        found.add(path.parent if path.name == "simple" else path)
    return found


def pip_volumes() -> list[str]:
    """`-v SOURCE:TARGET:ro` for what pip needs in the build: the user's configuration goes to
    root's home (the build runs as root), the rest to the same place."""
    files, named = pip_settings()
    home = Path.home()
    volumes = {}
    for source in [*map(Path, files), *named]:
        if source.is_relative_to(Path(sys.prefix)):
            continue  # the virtualenv's own configuration, meaningless in another one
        target = Path("/root") / source.relative_to(home) if source.is_relative_to(home) else source
        volumes[str(source)] = str(target)
    return [
        arg for source, target in sorted(volumes.items()) for arg in ("-v", f"{source}:{target}:ro")
    ]


async def build_image(podman: Podman, base: str, tag: str, workdir: Path) -> str:
    """Build the repository's Containerfile on `base` as `tag`; returns the image's id."""
    iidfile = workdir / "image-id"
    await podman(
        "build",
        # Podman writes OCI images by default, which have no HEALTHCHECK.
        *("--format", "docker", "--network", "host", "--build-arg", f"BASE_IMAGE={base}"),
        *await asyncio.to_thread(pip_volumes),
        *("--iidfile", str(iidfile), "--tag", tag),
        *("--file", str(REPOSITORY / "Containerfile"), str(REPOSITORY)),
        timeout=1200,
    )
    return iidfile.read_text().strip()
