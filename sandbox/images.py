"""Images for the docker sandbox, built without a registry, and the staged Recursor source.

``build_base_image`` makes a Debian root file system with ``debootstrap`` (Python and the
packages the built-in tasks need), imports it through the engine's API and tags it by the
hash of its recipe, so a second build is a no-op. A campaign may name any other image that
has ``python3`` instead.

``stage_source`` copies the guest side of ``recursor`` (``recursor.layout.guest_files``: the
guest-side core, the container agent and the built-in tasks' evaluator parts; their packages
get empty ``__init__.py`` files) into one importable tree, mounted read-only into every
container. Nothing of the controller, the archive, the proposers or the front ends is there.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import docker
import docker.errors

from recursor.errors import SandboxError
from recursor.layout import guest_files, package_dirs

IMAGE_REPOSITORY = "localhost/recursor-sandbox"
RECIPE_LABEL = "recursor.recipe"
# Removed from the root file system after debootstrap: caches and documentation.
STRIP = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
         "usr/share/locale", "usr/share/info")


@dataclass(frozen=True)
class ImageRecipe:
    """What goes into the base image; its hash is the image's tag."""

    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    variant: str = "minbase"
    packages: tuple[str, ...] = field(default=("python3-minimal", "python3-numpy"))
    version: int = 1  # bump when the build steps change

    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def tag(self) -> str:
        return f"{IMAGE_REPOSITORY}:{self.digest()}"


DEFAULT_RECIPE = ImageRecipe()


def connect(docker_host: str | None = None) -> docker.DockerClient:
    """A client for the engine at ``docker_host`` (default ``$DOCKER_HOST``) that answers."""
    try:
        client = (docker.DockerClient(base_url=docker_host, timeout=120) if docker_host
                  else docker.from_env(timeout=120))
        client.ping()
    except docker.errors.DockerException as exc:
        where = docker_host or os.environ.get("DOCKER_HOST") or "the default socket"
        raise SandboxError(
            f"no Docker-API engine answers at {where}: {exc}. Start Docker, or run "
            "scripts/container-engine.sh to serve the API with podman, and set DOCKER_HOST"
        ) from exc
    return client


def image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def build_base_image(
    client: docker.DockerClient, recipe: ImageRecipe = DEFAULT_RECIPE,
    log: Callable[[str], None] = print, force: bool = False,
) -> str:
    """The tag of the recipe's image, building it first when the engine lacks it."""
    if not force and image_exists(client, recipe.tag):
        return recipe.tag
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not Path(debootstrap).exists():
        raise SandboxError("building the base image needs debootstrap: `apt-get install "
                           "debootstrap`, or name an image with python3 in `sandbox.image`")
    if os.geteuid() != 0:
        raise SandboxError("debootstrap must run as root; run `sudo recursor sandbox "
                           "build-image`, or name an image with python3 in `sandbox.image`")
    with tempfile.TemporaryDirectory(prefix="recursor-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        _debootstrap(debootstrap, recipe, rootfs, log)
        for name in STRIP:
            shutil.rmtree(rootfs / name, ignore_errors=True)
        archive = Path(tmp) / "rootfs.tar"
        log("packing the root file system")
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(archive), "."], check=True)
        log(f"importing it as {recipe.tag}")
        _import(client, archive, recipe)
    return recipe.tag


def _debootstrap(
    binary: str, recipe: ImageRecipe, rootfs: Path, log: Callable[[str], None]
) -> None:
    command = [binary, f"--variant={recipe.variant}", f"--include={','.join(recipe.packages)}",
               recipe.suite, str(rootfs), recipe.mirror]
    log("running " + " ".join(command) + " (about 90 s)")
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SandboxError(f"debootstrap failed (status {proc.returncode}): "
                           f"{(proc.stdout + proc.stderr)[-2000:]}")


def _import(client: docker.DockerClient, archive: Path, recipe: ImageRecipe) -> None:
    """Import the tarball and tag it (engines differ on honouring a tag given to import)."""
    changes = [f"LABEL {RECIPE_LABEL}={recipe.digest()}", "USER 1000:1000",
               "ENV PATH=/usr/local/bin:/usr/bin:/bin"]
    with archive.open("rb") as data:
        answer = client.api.import_image_from_data(data, changes=changes)
    lines = [json.loads(line) for line in str(answer).strip().splitlines() if line.strip()]
    image_id = next((line.get("id") or line.get("status") for line in reversed(lines)), None)
    if not image_id or "error" in lines[-1]:
        raise SandboxError(f"the engine did not import the image: {answer}")
    repository, tag = recipe.tag.rsplit(":", 1)
    client.api.tag(image_id, repository, tag)


def source_tree() -> dict[str, Path]:
    """Import name (``recursor`` or ``recursor.<sub>``) to the folder that holds it: the
    layout of this installation (``recursor.layout``)."""
    tree = package_dirs()
    for name, folder in tree.items():
        if not folder.is_dir():
            raise SandboxError(f"cannot locate the {name} package ({folder}) to stage it")
    return tree


def stage_source(cache_root: Path, hide: Sequence[str] = ()) -> Path:
    """A directory holding an importable copy of ``recursor``'s guest side, keyed by the
    source's hash; without the modules or packages ``hide`` names (those inside ``recursor``;
    an image's own packages are the image's), for candidate runs that must not import them."""
    full = _stage_full(cache_root)
    hidden = sorted({name for name in hide if name.startswith("recursor.")})
    if not hidden:
        return full
    key = hashlib.sha256("\0".join(hidden).encode()).hexdigest()[:8]
    target = full.with_name(f"{full.name}-without-{key}")
    if target.is_dir():
        return target
    building = Path(tempfile.mkdtemp(prefix="staging-", dir=cache_root))
    shutil.copytree(full, building, dirs_exist_ok=True)
    for name in hidden:
        base = building.joinpath(*name.split("."))
        shutil.rmtree(base, ignore_errors=True)
        base.with_suffix(".py").unlink(missing_ok=True)
    make_readable(building)
    try:
        building.rename(target)
    except OSError:
        shutil.rmtree(building, ignore_errors=True)
    return target


STAGED_PACKAGE_DOC = ('"""Staged by Recursor\'s docker sandbox: the guest side only '
                      '(recursor.layout.guest_files)."""\n')


def _stage_full(cache_root: Path) -> Path:
    """The staged guest side (see the module docstring), keyed by its files' hash."""
    for name, folder in source_tree().items():
        if not folder.is_dir():
            raise SandboxError(f"cannot locate the {name} package ({folder}) to stage it")
    files = sorted(guest_files().items())
    digest = hashlib.sha256()
    for rel, source in files:
        digest.update(f"{rel}\0".encode())
        digest.update(source.read_bytes())
    target = cache_root / f"recursor-guest-{digest.hexdigest()[:16]}"
    if target.is_dir():
        return target
    building = Path(tempfile.mkdtemp(prefix="staging-", dir=cache_root))
    for rel, source in files:
        dest = building / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)
    for folder in sorted({p for rel, _ in files for p in (building / rel).parents
                          if p != building and building in p.parents}):
        init = folder / "__init__.py"
        if not init.exists():  # a package above a guest module: import runs nothing
            init.write_text(STAGED_PACKAGE_DOC)
    make_readable(building)
    try:
        building.rename(target)
    except OSError:  # another process staged the same source first
        shutil.rmtree(building, ignore_errors=True)
    return target


def make_readable(root: Path) -> None:
    """Everything readable (and directories searchable) by the container's unprivileged user."""
    root.chmod(0o755)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)


__all__ = ["DEFAULT_RECIPE", "ImageRecipe", "build_base_image", "connect", "image_exists",
           "make_readable", "stage_source"]
