"""TensorsAccess: `.get` and `in` routed through `.tensors`."""

from __future__ import annotations

from contractfix.families.pp.edits import TensorsAccess
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


def test_keys_alone_and_under_in_on_the_located_calls_only() -> None:
    """PP007 locates `x.keys()` at the call, also under `in` / `not in`; other `.keys()` stay."""
    assert_codemod(
        """\
        def forward(self, intermediate_tensors, cache):
            for key in intermediate_tensors.keys():
                pass
            if "b" not in intermediate_tensors.keys() and "c" in cache.keys():
                pass
            names = sorted(cache.keys())
        """,
        """\
        def forward(self, intermediate_tensors, cache):
            for key in intermediate_tensors.tensors.keys():
                pass
            if "b" not in intermediate_tensors.tensors.keys() and "c" in cache.keys():
                pass
            names = sorted(cache.keys())
        """,
        TensorsAccess(path=PATH, line=2, column=15, access="keys"),
        TensorsAccess(path=PATH, line=4, column=18, access="keys"),
    )


def test_keys_edit_spans_its_own_line() -> None:
    result = assert_codemod(
        """\
        def forward(self, intermediate_tensors):
            x = 1
            return list(intermediate_tensors.keys())
        """,
        """\
        def forward(self, intermediate_tensors):
            x = 1
            return list(intermediate_tensors.tensors.keys())
        """,
        TensorsAccess(path=PATH, line=3, column=16, access="keys"),
    )
    assert result.spans == ((3, 3),)
