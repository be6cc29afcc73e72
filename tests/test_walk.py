"""`walk` and `children` visit what `ast.walk` and `ast.iter_child_nodes` visit, in their order,
less the contexts and operators."""

from __future__ import annotations

import ast
import textwrap

import pytest

from contractfix.walk import LEAVES, children, walk

SOURCE = textwrap.dedent('''\
    import a.b as c
    from . import d


    @decorate(x=1)
    class Model(nn.Module, metaclass=Meta):
        """Doc."""

        def forward(self, *args, key: int = 0, **kwargs) -> None:
            global g
            values = {**kwargs, "a": [i async for i in args if i], None: (lambda y: y)(1)}
            match values:
                case Point(x=0, y=_) | [1, *rest] | {"k": v, **others}:
                    pass
                case str() as s if s:
                    del s
            try:
                yield from f"{key!r:>{width}}"
            except (ValueError, TypeError) as error:
                raise error from None
            finally:
                x = 1 if a < b <= c else ~d
                x += await g
''')
NEWER = [
    "try:\n    pass\nexcept* (ValueError, TypeError) as error:\n    raise error from None\n",  # 3.11
    "type Alias[T: int, *Ts, **P] = list[T]\n",  # 3.12
]


LEAF = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)
SOURCES = pytest.mark.parametrize("source", [SOURCE, *NEWER], ids=["3.10", "except*", "type"])


def parsed(source: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError:
        pytest.skip("a syntax this Python does not have")


@SOURCES
def test_the_same_nodes_in_the_same_order(source: str) -> None:
    tree = parsed(source)
    assert [id(n) for n in walk(tree)] == [id(n) for n in ast.walk(tree) if not isinstance(n, LEAF)]
    for node in ast.walk(tree):
        assert [id(n) for n in children(node)] == [id(n) for n in ast.iter_child_nodes(node) if not isinstance(n, LEAF)]


@SOURCES
def test_the_fields_left_out_hold_only_contexts_and_operators(source: str) -> None:
    seen = 0
    for node in ast.walk(parsed(source)):
        for name in LEAVES & set(node._fields):
            value = getattr(node, name)
            assert all(isinstance(v, LEAF) and not v._fields for v in (value if isinstance(value, list) else [value]))
            seen += 1
    assert seen


def test_a_field_left_unset_is_skipped() -> None:
    node = ast.Name(id="x")  # built by hand: no ctx, no position
    del node.id
    assert children(node) == [] and walk(node) == [node]
