"""Return the inner model's output unchanged on non-last ranks, right after the inner call.

`get_pp_group` is whatever the module already binds under that name (imported from any module);
otherwise it is imported from the package the module's other `distributed` imports come from
(a fork's own `<fork>.distributed`), else from `vllm.distributed`."""

from __future__ import annotations

import libcst as cst

from ....fixes.base import InsertAfter
from ....fixes.imports import import_sources
from .. import edits

GUARD = "if not get_pp_group().is_last_rank:\n    return {var}\n"
DEFAULT_SOURCE = "vllm.distributed"


class EarlyReturn(InsertAfter[edits.EarlyReturn]):
    edit = edits.EarlyReturn
    method = "forward"
    source = DEFAULT_SOURCE

    def prepare(self, module: cst.Module) -> None:
        self.source = distributed_package(import_sources(module)) or DEFAULT_SOURCE

    def statement(self, edit: edits.EarlyReturn, column: int) -> str:
        self.need_import(edit, self.source, "get_pp_group")
        return GUARD.format(var=edit.var)


def distributed_package(sources: list[str]) -> str:
    """`fork.distributed` for `from fork.distributed(.parallel_state) import ...`; "" for none."""
    for source in sources:
        parts = source.split(".")
        if "distributed" in parts:
            return ".".join(parts[: parts.index("distributed") + 1])
    return ""
