"""The managed smoke environment: a cached virtualenv with vLLM and a CPU torch, outside the repo,
and the pinned vLLM wheel it is installed from (kept: the tests read real vLLM sources from it).

`setup()` is idempotent: a ready environment (its marker matches the recipe) is reused at once;
anything else (missing, half-installed, built from another recipe) is removed and rebuilt.
The marker is written last, so an interrupted install is never taken for a finished one; the
wheel is moved into place only once fully downloaded. Only a folder that holds a virtualenv is ever
removed, and lock and log files are opened without following a symbolic link: a link planted in the
cache never leads a rebuild into someone's data.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from . import recipe
from .errors import SetupError
from .runner import run

MARKER = "contractfix-smoke.json"
OWNED = ".contractfix-env"
"""Written into the environment's folder before anything is installed: what may be removed."""
SETUP_LOG = "setup.log"
CPU_ENV = {"VLLM_TARGET_DEVICE": "cpu"}


def cache_dir() -> Path:
    """`$CONTRACTFIX_CACHE`, else `$XDG_CACHE_HOME/contractfix`, else `~/.cache/contractfix`."""
    if os.environ.get("CONTRACTFIX_CACHE"):
        return Path(os.environ["CONTRACTFIX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "contractfix"


@dataclass(frozen=True)
class ManagedEnv:
    """A managed virtualenv at `root`, ready once its marker holds `fingerprint` (its recipe's)."""

    root: Path
    fingerprint: str

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def marker(self) -> Path:
        return self.root / MARKER

    def ready(self) -> bool:
        """True when a finished install of the current recipe is there."""
        try:
            data = json.loads(self.marker.read_text())
        except (OSError, ValueError):
            return False
        return data.get("fingerprint") == self.fingerprint and self.python.exists()

    def info(self) -> dict:
        """What the marker recorded (versions, setup time); empty when not ready."""
        return json.loads(self.marker.read_text()) if self.ready() else {}


def managed_env() -> ManagedEnv:
    name = recipe.VLLM.replace("==", "-") + "-cpu"
    return ManagedEnv(cache_dir() / "envs" / name, recipe.fingerprint())


def wheel_dir() -> Path:
    """`<cache>/whl/<version>/`, where the pinned vLLM wheel is kept (bench/bench.py uses the same)."""
    return cache_dir() / "whl" / recipe.VLLM.partition("==")[2]


def cached_wheel() -> Path | None:
    return next(iter(sorted(wheel_dir().glob("vllm-*.whl"))), None)


def fetch_wheel(echo: Callable[[str], None] = print) -> Path:
    """The pinned vLLM wheel for this platform, downloaded once into `wheel_dir()`."""
    folder = wheel_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder.with_name(folder.name + ".lock")):
        found = cached_wheel()
        if found is not None:
            return found
        title = f"download {recipe.VLLM}"
        echo(f"{title} ...")
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".download-") as scratch:
            cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-input",
                   "--no-deps", "--only-binary", ":all:", recipe.VLLM, "-d", scratch]
            try:
                done = run(cmd, timeout=None)
            except OSError as error:
                raise SetupError(f"{title} failed: {error}") from None
            wheels = list(Path(scratch).glob("vllm-*.whl"))
            if done.returncode != 0 or len(wheels) != 1:
                raise SetupError(f"{title} failed (exit {done.returncode}):\n{done.tail()}")
            wheels[0].replace(folder / wheels[0].name)
        echo(f"  done in {done.duration_s:.0f}s")
        return folder / wheels[0].name


@dataclass(frozen=True)
class SetupResult:
    env: ManagedEnv
    cached: bool
    duration_s: float
    versions: dict[str, str]
    wheel: Path


def setup(env: ManagedEnv | None = None, echo: Callable[[str], None] = print) -> SetupResult:
    """Fetch (or reuse) the vLLM wheel, then create (or reuse) the managed environment from it;
    raises SetupError with the failing step's log."""
    env = env or managed_env()
    start = time.monotonic()
    wheel = fetch_wheel(echo)
    cached, versions = prepare(env, lambda: _build(env, wheel, echo), echo)
    return SetupResult(env, cached, time.monotonic() - start, versions, wheel)


def prepare(env: ManagedEnv, build: Callable[[], dict[str, str]], echo: Callable[[str], None]) -> tuple[bool, dict]:
    """(True, versions) when `env` is ready; else (False, versions) once `build` made it afresh in an
    emptied folder, under a lock, its marker written last."""
    start = time.monotonic()
    env.root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(env.root.with_name(env.root.name + ".lock")):
        if env.ready():
            return True, env.info().get("versions", {})
        if _remove_env(env.root):
            echo(f"removed incomplete or outdated environment {env.root}")
        env.root.mkdir()
        os.close(_open_no_follow(env.root / OWNED, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        versions = build()
        marker = {"fingerprint": env.fingerprint, "versions": versions, "setup_s": round(time.monotonic() - start, 1)}
        fd, tmp = tempfile.mkstemp(dir=env.root, suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            handle.write(json.dumps(marker, indent=1))
        os.replace(tmp, env.marker)
    return False, versions


def _build(env: ManagedEnv, wheel: Path, echo: Callable[[str], None]) -> dict[str, str]:
    pip = pip_install(env)
    steps = [
        ("create virtualenv", [sys.executable, "-m", "venv", str(env.root)]),
        (f"install {recipe.TORCH} and vLLM's CPU-side dependencies", [*pip, recipe.TORCH, *recipe.REQUIREMENTS]),
        (f"install {recipe.VLLM} and {' '.join(recipe.NO_DEPS)} (without their dependencies)",
         [*pip, "--no-deps", str(wheel), *recipe.NO_DEPS]),
    ]
    return run_steps(env, steps, _VERIFY, echo)


def pip_install(env: ManagedEnv) -> list[str]:
    return [str(env.python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--no-compile"]


Step = tuple[str, list[str]]


def run_steps(env: ManagedEnv, steps: Iterable[Step], verify: str, echo: Callable[[str], None]) -> dict[str, str]:
    """Run each (title, command) of `steps` in turn (a generator may make a step from the ones before),
    logged to `<env>.setup.log`; then `verify`, a script that prints the versions as JSON on its last
    line. A SetupError names the failing step and the log."""
    if sys.version_info < (3, 11):
        raise SetupError(f"vLLM needs Python >= 3.11; contractfix runs on {sys.version.split()[0]}")
    log = env.root.parent / (env.root.name + "." + SETUP_LOG)
    log.unlink(missing_ok=True)  # a name only: what a planted link or hard link leads to stays
    with os.fdopen(_open_no_follow(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL), "w") as handle:
        for title, cmd in steps:
            echo(f"{title} ...")
            try:
                done = run(cmd, timeout=None)
            except OSError as error:
                raise SetupError(f"{title} failed: {error}") from None
            handle.write(f"$ {' '.join(cmd)}\n{done.stdout}\n{done.stderr}\n")
            if done.returncode != 0:
                raise SetupError(f"{title} failed (exit {done.returncode}); log: {log}\n{done.tail()}")
            echo(f"  done in {done.duration_s:.0f}s")
        echo("verify: import vllm on the CPU platform ...")
        check = run([str(env.python), "-c", verify], timeout=300, env=_writing_bytecode({**os.environ, **CPU_ENV}))
        handle.write(f"$ verify\n{check.stdout}\n{check.stderr}\n")
        echo(f"  done in {check.duration_s:.0f}s")
    if check.returncode != 0:
        raise SetupError(f"the new environment cannot import vLLM; log: {log}\n{check.tail()}")
    return json.loads(check.stdout.strip().splitlines()[-1])


def _writing_bytecode(env: dict[str, str]) -> dict[str, str]:
    """`env` without PYTHONDONTWRITEBYTECODE. pip installs with `--no-compile` (bytecode for every
    file costs a minute); the verify script's imports write it for the modules a run imports, so
    that each later harness process (several per smoke, each importing vLLM and torch) reads them
    instead of compiling vLLM again, twice as fast, where PYTHONDONTWRITEBYTECODE is set."""
    return {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}


_VERIFY = """
import json, torch, transformers, vllm
from vllm.platforms import current_platform
assert type(current_platform).__name__ == "CpuPlatform", current_platform
from vllm import ModelRegistry
from vllm.config import set_current_vllm_config
from vllm.model_executor.model_loader import get_model
from vllm.sequence import IntermediateTensors
from vllm.transformers_utils.config import _CONFIG_REGISTRY
import vllm.model_executor.models.llama
print(json.dumps({"vllm": vllm.__version__, "torch": torch.__version__,
                  "transformers": transformers.__version__}))
"""
"""Imports what the contract tier imports (its modules' bytecode is written then: see `run_steps`)."""


def remove(echo: Callable[[str], None] = print) -> list[Path]:
    """Remove every managed environment and kept vLLM wheel under `cache_dir()`, with their locks
    and set-up logs; return what was removed. Only what `setup` makes goes: anything else there is
    left alone, and said so."""
    removed: list[Path] = []
    envs = cache_dir() / "envs"
    for root in sorted(p for p in envs.glob("*") if not p.name.endswith((".lock", "." + SETUP_LOG))):
        lock = root.with_name(root.name + ".lock")
        had_lock = lock.exists()
        with _locked(lock):
            try:
                ours = _remove_env(root)
            except SetupError:
                echo(f"left {root} alone: not an environment contractfix made")
                ours = False
            if ours:
                removed.append(root)
                removed += _unlink(root.with_name(root.name + "." + SETUP_LOG))
        if ours:
            removed += _unlink(lock)
        elif not had_lock:
            _unlink(lock)  # made just now, by `_locked`
    for wheel in sorted((cache_dir() / "whl").glob("*/vllm-*.whl")):
        with _locked(wheel.parent.with_name(wheel.parent.name + ".lock")):
            removed += _unlink(wheel)
        removed += _unlink(wheel.parent.with_name(wheel.parent.name + ".lock"))
    for folder in (*sorted((cache_dir() / "whl").glob("*")), cache_dir() / "whl", envs):
        with suppress(OSError):
            folder.rmdir()  # only once empty: a file of someone else's keeps its folder
    return removed


def _unlink(path: Path) -> list[Path]:
    """[path] once the regular file (or link: only the name goes) at `path` is unlinked; [] if none."""
    try:
        if stat.S_ISDIR(path.lstat().st_mode):
            return []
        path.unlink()
    except FileNotFoundError:
        return []
    return [path]


def _remove_env(root: Path) -> bool:
    """Remove the folder at `root` if setup made it (its OWNED mark, or a virtualenv's `pyvenv.cfg`);
    False when there is none. Anything else there (a symbolic link, a file, another folder) is a
    SetupError."""
    try:
        info = root.lstat()
    except FileNotFoundError:
        return False
    ours = any((root / name).is_file() for name in (OWNED, "pyvenv.cfg"))
    if stat.S_ISDIR(info.st_mode) and (ours or not any(root.iterdir())):
        shutil.rmtree(root)
        return True
    kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a virtualenv"
    raise SetupError(f"{root} is {kind}, where the smoke environment goes; move it aside (nothing was removed)")


def _open_no_follow(path: Path, flags: int) -> int:
    """A descriptor on `path`, never through a symbolic link; a SetupError that says so otherwise."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW, 0o644)
    except OSError as error:
        raise SetupError(f"cannot open {path}: {error.strerror}") from None


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock file, so that two setups (e.g. parallel test sessions) do not race. It is
    opened without truncation: whatever the file holds is left as it was."""
    with os.fdopen(_open_no_follow(path, os.O_RDWR | os.O_CREAT), "r+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
