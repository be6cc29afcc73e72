"""`contractfix smoke`: the command's behaviour (cli.py only declares its options)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from . import cpu_engine, venv
from .api import run_smoke
from .errors import SetupError, UsageError

EXIT_OK, EXIT_SETUP = 0, 2


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
            result = venv.setup(echo=echo_err)
            state = "reused" if result.cached else "created"
            echo_err(f"smoke environment {state}: {result.env.root} ({_versions(result.versions)}, "
                     f"{result.duration_s:.1f}s); vLLM wheel: {result.wheel}")
            engine = cpu_engine.setup(echo=echo_err)
            state = "reused" if engine.cached else "created"
            echo_err(f"CPU engine environment {state}: {engine.env.root} ({_versions(engine.versions)}, "
                     f"{engine.duration_s:.1f}s)")
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


def _versions(versions: dict[str, str]) -> str:
    return ", ".join(f"{name} {version}" for name, version in versions.items())
