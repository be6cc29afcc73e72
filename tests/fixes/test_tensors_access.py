"""TensorsAccess: `.get` and `in` routed through `.tensors`."""

from __future__ import annotations

from contractfix.edits import TensorsAccess
from tests.fixes.codemodtest import PATH, assert_codemod


def test_get_and_in_on_the_located_nodes_only() -> None:
    assert_codemod(
        """\
        def forward(self, intermediate_tensors, cache):
            a = intermediate_tensors.get("a")
            b = cache.get("a")
            if "b" not in intermediate_tensors:
                pass
        """,
        """\
        def forward(self, intermediate_tensors, cache):
            a = intermediate_tensors.tensors.get("a")
            b = cache.get("a")
            if "b" not in intermediate_tensors.tensors:
                pass
        """,
        TensorsAccess(path=PATH, line=2, column=8, access="get"),
        TensorsAccess(path=PATH, line=4, column=7, access="in"),
    )
