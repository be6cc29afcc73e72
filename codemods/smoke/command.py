"""`contractfix smoke`: the command's behaviour (cli.py only declares its options)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

from . import cpu_engine, runner, venv
from .api import run_smoke
from .errors import SetupError, UsageError

EXIT_OK, EXIT_SETUP = 0, 2
_Built = venv.SetupResult | cpu_engine.EngineSetup


def main(
    paths: list[Path],
    *,
    tier: str | None = None,
    arch: str | None = None,
    python: Path | None = None,
    config: Path | None = None,
    json_out: Path | None = None,
    allow_skip: bool = False,
    prepare: bool = False,
    remove: bool = False,
    timeout: float | None = None,
    base: str = "HEAD",
    echo: Callable[[str], None] = print,
    echo_err: Callable[[str], None] = print,
) -> int:
    """Run the smoke and print its summary; returns the exit code (0 ok, 1 failed, 2 setup).
    `prepare`: set up (or reuse) the managed smoke and CPU engine environments first. `remove`:
    delete them and the wheel instead, and say what went."""
    if remove:
        if paths or arch or prepare:
            echo_err("error: --remove takes no model files, --arch or --setup")
            return EXIT_SETUP
        try:
            removed = venv.remove(echo=echo_err)
        except (SetupError, OSError) as error:
            echo_err(f"error: {error}")
            return EXIT_SETUP
        echo("\n".join(f"removed {path}" for path in removed) or f"nothing to remove under {venv.cache_dir()}")
        return EXIT_OK
    if json_out is not None and not json_out.parent.is_dir():
        echo_err(f"error: --json {json_out}: folder {json_out.parent} does not exist")
        return EXIT_SETUP
    try:
        if prepare:
            _setup(echo_err)
            if not paths and not arch:
                return EXIT_OK
        report = run_smoke(paths, tier=tier, arch=arch, python=python, config=config,
                           allow_skip=allow_skip, timeout=timeout, base=base)
    except (SetupError, UsageError) as error:
        echo_err(f"error: {error}")
        return EXIT_SETUP
    echo(report.summary())
    if json_out is not None:
        try:
            json_out.write_text(json.dumps(report.to_json(), indent=2) + "\n")
        except OSError as error:
            echo_err(f"error: --json {json_out}: cannot write: {error.strerror or error}")
            return EXIT_SETUP
    return report.exit_code


def _setup(echo_err: Callable[[str], None]) -> None:
    """Set up both environments at once: a build is pip waiting on downloads and on the disk as much
    as computing, so two side by side take little longer than the longer one. Each one's lines carry
    its name (its full log is its own `setup.log`); a failure of one lets the other finish, and the
    SetupError names each that failed. A Ctrl-C stops both."""
    lock, stop = threading.Lock(), threading.Event()

    def build(tag: str, setup: Callable[..., _Built]) -> _Built:
        def echo(text: str) -> None:
            with lock:
                echo_err("\n".join(f"[{tag}] {line}" for line in text.splitlines()))
        runner.STOP.set(stop)
        return setup(echo=echo)

    with ThreadPoolExecutor(max_workers=2) as pool:
        smoke = pool.submit(build, "smoke", venv.setup)
        engine = pool.submit(build, "engine", cpu_engine.setup)
        try:
            wait((smoke, engine))
        except BaseException:
            stop.set()
            raise
    errors = {"smoke": smoke.exception(), "CPU engine": engine.exception()}
    for error in errors.values():
        if error is not None and not isinstance(error, SetupError):
            raise error
    failed = [f"{name} environment: {error}" for name, error in errors.items() if error is not None]
    if failed:
        raise SetupError("\n".join(failed))
    for name, result in (("smoke", smoke.result()), ("CPU engine", engine.result())):
        wheel = f"; vLLM wheel: {result.wheel}" if isinstance(result, venv.SetupResult) else ""
        echo_err(f"{name} environment {'reused' if result.cached else 'created'}: {result.env.root} "
                 f"({_versions(result.versions)}, {result.duration_s:.1f}s){wheel}")


def _versions(versions: dict[str, str]) -> str:
    return ", ".join(f"{name} {version}" for name, version in versions.items())
