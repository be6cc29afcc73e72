"""What the checked tree's vLLM release does, read from the release's own files: those of the
package that defines `SupportsPP` for the checked models (vLLM, a fork that renamed it such as
aphrodite, or the vLLM beside a plugin), else of a `vllm` package under an import root."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .... import inputs
from ....index import ClassRef
from ....rules.base import Context
from ....vllm_names import PP_INTERFACE


def release_text(ctx: Context, *parts: str) -> str | None:
    """The text of `<package>/<parts>` of the release, or None where there is no such file.
    `parts` are relative to the top-level package, as in vLLM (`config/speculative.py`)."""
    return _first_text(folder.joinpath(*parts) for folder in _packages(ctx, _interface(ctx)))


def release_folder(ctx: Context, *parts: str) -> Path | None:
    """The folder `<package>/<parts>` of the release, or None where there is none."""
    return next((f for f in (p.joinpath(*parts) for p in _packages(ctx, _interface(ctx))) if inputs.is_dir(f)), None)


def interface_text(ctx: Context) -> str | None:
    """The text of the module that defines `SupportsPP`, or of `vllm`'s interfaces module."""
    found = _interface(ctx)
    if found is not None:
        return _first_text([Path(found.module.path)])
    return _first_text(folder / "model_executor" / "models" / "interfaces.py" for folder in _packages(ctx, None))


def _first_text(paths: Iterable[Path]) -> str | None:
    for path in paths:
        try:
            return path.read_text(errors="replace")
        except OSError:
            continue
    return None


def _packages(ctx: Context, found: ClassRef | None) -> list[Path]:
    """The release's top-level package folder: the one `found` (`SupportsPP`) comes from, else
    each import root's `vllm`."""
    if found is None:
        return [root / "vllm" for root in ctx.index.roots]
    path = Path(found.module.path)
    depth = len(found.module.module.split("."))
    return [path.parents[depth - (1 if path.name == "__init__.py" else 2)]]


def _interface(ctx: Context) -> ClassRef | None:
    """`SupportsPP` as the first entry (or subject) that declares it resolves it."""
    for ref in [*ctx.entries, *ctx.subjects]:
        for node in ctx.index.mro(ref):
            if node.header.name == PP_INTERFACE and node.module.path:
                return node
    return None
