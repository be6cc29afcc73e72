"""The managed smoke environment: a cached virtualenv with vLLM and a CPU torch, outside the repo,
and the pinned vLLM wheel it is installed from (kept: the tests read real vLLM sources from it).

`setup()` is idempotent: a ready environment (its marker matches the recipe) is reused at once;
anything else (missing, half-installed, built from another recipe) is removed and rebuilt.
The marker is written last, so an interrupted install is never taken for a finished one; the
wheel is moved into place only once fully downloaded.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import recipe
from .errors import SetupError
from .runner import run

MARKER = "contractfix-smoke.json"
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
    root: Path

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
        return data.get("fingerprint") == recipe.fingerprint() and self.python.exists()

    def info(self) -> dict:
        """What the marker recorded (versions, setup time); empty when not ready."""
        return json.loads(self.marker.read_text()) if self.ready() else {}


def managed_env() -> ManagedEnv:
    name = recipe.VLLM.replace("==", "-") + "-cpu"
    return ManagedEnv(cache_dir() / "envs" / name)


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
    env.root.parent.mkdir(parents=True, exist_ok=True)
    with _locked(env.root.with_name(env.root.name + ".lock")):
        if env.ready():
            info = env.info()
            return SetupResult(env, True, time.monotonic() - start, info.get("versions", {}), wheel)
        if env.root.exists():
            echo(f"removing incomplete or outdated environment {env.root}")
            shutil.rmtree(env.root)
        versions = _build(env, wheel, echo)
        duration = time.monotonic() - start
        marker = {"fingerprint": recipe.fingerprint(), "versions": versions, "setup_s": round(duration, 1)}
        tmp = env.marker.with_suffix(".tmp")
        tmp.write_text(json.dumps(marker, indent=1))
        tmp.replace(env.marker)
    return SetupResult(env, False, duration, versions, wheel)


def _build(env: ManagedEnv, wheel: Path, echo: Callable[[str], None]) -> dict[str, str]:
    if sys.version_info < (3, 11):
        raise SetupError(f"vLLM needs Python >= 3.11; contractfix runs on {sys.version.split()[0]}")
    pip = [str(env.python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--no-compile"]
    steps = [
        ("create virtualenv", [sys.executable, "-m", "venv", str(env.root)]),
        (f"install {recipe.TORCH} and vLLM's CPU-side dependencies", [*pip, recipe.TORCH, *recipe.REQUIREMENTS]),
        (f"install {recipe.VLLM} (without its CUDA dependencies)", [*pip, "--no-deps", str(wheel)]),
    ]
    log = env.root.parent / (env.root.name + "." + SETUP_LOG)
    with log.open("w") as handle:
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
        check = run([str(env.python), "-c", _VERIFY], timeout=300, env={**os.environ, **CPU_ENV})
        handle.write(f"$ verify\n{check.stdout}\n{check.stderr}\n")
        echo(f"  done in {check.duration_s:.0f}s")
    if check.returncode != 0:
        raise SetupError(f"the new environment cannot import vLLM; log: {log}\n{check.tail()}")
    return json.loads(check.stdout.strip().splitlines()[-1])


_VERIFY = """
import json, torch, transformers, vllm
from vllm.platforms import current_platform
assert type(current_platform).__name__ == "CpuPlatform", current_platform
print(json.dumps({"vllm": vllm.__version__, "torch": torch.__version__,
                  "transformers": transformers.__version__}))
"""


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock file, so that two setups (e.g. parallel test sessions) do not race."""
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
