"""`walk` and `children` visit what `ast.walk` and `ast.iter_child_nodes` visit, in their order,
less the contexts and operators."""

from __future__ import annotations

import ast
import asyncio.base_events
import dataclasses
import inspect
import textwrap
import typing
from pathlib import Path

import pytest

from contractfix.walk import CHILDLESS, FIELDS, LEAVES, SPARSE, children, statements, walk, walk_all

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


STDLIB = [Path(module.__file__) for module in (ast, dataclasses, inspect, typing, asyncio.base_events)]


@SOURCES
def test_the_other_fields_left_out_hold_no_node(source: str) -> None:
    """Names, numbers and strings (`Name.id`, `Constant.value`, a function's name) are left out
    too: never a node."""
    _no_node_left_out(parsed(source))


@pytest.mark.parametrize("path", STDLIB, ids=[p.stem for p in STDLIB])
def test_stdlib_modules_walk_the_same_and_leave_out_no_node(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert [id(n) for n in walk(tree)] == [id(n) for n in ast.walk(tree) if not isinstance(n, LEAF)]
    _no_node_left_out(tree)


def test_only_the_sparse_lists_hold_none() -> None:
    """A list field taken whole must hold nothing but nodes; `{**a}` and `def f(*, b)` put None
    in the two that may."""
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in STDLIB] + [ast.parse("{**a}\ndef f(*, b): ...\n")]
    sparse = set()
    for node in (node for tree in trees for node in ast.walk(tree)):
        for name, may_hold_none in FIELDS[type(node)]:
            value = getattr(node, name, None)
            if isinstance(value, list):
                assert may_hold_none or all(isinstance(item, ast.AST) for item in value), (type(node).__name__, name)
                if None in value:
                    sparse.add((type(node).__name__, name))
    assert sparse == {(cls, name) for cls, names in SPARSE.items() for name in names}


BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


@SOURCES
def test_statements_meet_the_statements_of_a_walk_in_its_order(source: str) -> None:
    tree = parsed(source)
    assert [id(n) for n in statements(tree.body)] == [id(n) for n in walk(tree) if isinstance(n, BLOCKS)]


@pytest.mark.parametrize("path", STDLIB, ids=[p.stem for p in STDLIB])
def test_statements_of_some_roots_are_those_a_walk_meets_below_them(path: Path) -> None:
    """Roots taken out of a body leave their statements out, and the others keep `walk`'s
    order: a statement sits only in statements, handlers and cases."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert functions
    for fn in functions:
        roots = fn.body[::2]
        below = {id(n) for root in roots for n in walk(root)}
        expected = [id(n) for n in walk(fn) if isinstance(n, BLOCKS) and id(n) in below]
        assert [id(n) for n in statements(roots)] == expected


@pytest.mark.parametrize("path", STDLIB, ids=[p.stem for p in STDLIB])
def test_a_walk_from_some_children_keeps_the_order_of_the_whole_walk(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        roots = children(fn)[1::2]
        below = {id(n) for root in roots for n in walk(root)}
        assert [id(n) for n in walk_all(roots)] == [id(n) for n in walk(fn) if id(n) in below]


def _no_node_left_out(tree: ast.AST) -> None:
    seen = 0
    for node in ast.walk(tree):
        for name in set(node._fields) - LEAVES - {name for name, _ in FIELDS[type(node)]}:
            value = getattr(node, name, None)
            assert not any(isinstance(v, ast.AST) for v in (value if isinstance(value, list) else [value])), name
            seen += 1
    assert seen


def test_the_childless_nodes_have_no_field_to_visit() -> None:
    assert CHILDLESS and all(FIELDS[cls] == () for cls in CHILDLESS)


def test_a_field_left_unset_is_skipped() -> None:
    node = ast.Name(id="x")  # built by hand: no ctx, no position
    del node.id
    assert children(node) == [] and walk(node) == [node]
