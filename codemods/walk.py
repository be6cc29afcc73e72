"""`ast.walk` and `ast.iter_child_nodes` as lists, in the same order, without their generators,
and without the nodes no fact is read from: expression contexts (`Load`, `Store`, `Del`) and
operators (`Add`, `And`, `Not`, `In`, ...), field-less singletons that the analysis reads
through their parent (`name.ctx`, `compare.ops`) and never meets on a walk.

A cold check of a whole vLLM tree visits about half a million nodes through these, most of them
several times (each fact module walks the methods it reads); the stdlib versions spend most of
that time in two nested generators per node, and a third of the nodes they yield are contexts
and operators. The fields that hold a name or a constant are not looked at either, and a list
field is taken whole.

`statements` is the same walk over statements alone, for facts that read only assignments
and other statements: a method's statements are about a tenth of its nodes.

Also `dotted_name`, which the fact modules outside `analysis` share.
"""

from __future__ import annotations

import ast

LEAVES = frozenset({"ctx", "op", "ops"})
"""The fields that hold only contexts and operators."""
PLAIN = frozenset({
    "id", "attr", "arg", "asname", "module", "level", "kind", "type_comment", "is_async", "conversion", "simple",
    "tag", "rest", "kwd_attrs",
})
"""The fields that hold a name, a number or a string, never a node, in every class that has one."""
PLAIN_IN = {
    "Constant": {"value"}, "Global": {"names"}, "Nonlocal": {"names"}, **dict.fromkeys((
        "FunctionDef", "AsyncFunctionDef", "ClassDef", "alias", "ExceptHandler", "MatchAs", "MatchStar", "TypeVar",
        "ParamSpec", "TypeVarTuple",
    ), {"name"}),
}
"""The fields that hold no node in these classes only (elsewhere `value` and `names` do, and a
`TypeAlias`'s `name` is a node). Left out of a walk, they spare a lookup on most nodes (a `Name`
has no other field)."""
SPARSE = {"Dict": {"keys"}, "arguments": {"kw_defaults"}}
"""The list fields that may hold None (the key of `**spread`, a keyword-only argument without a
default); every other list field holds only nodes, and is taken whole."""
CHILDLESS = frozenset({ast.Name, ast.Constant})
"""The commonest nodes with no child (a name, a literal): a walk that looks for other kinds of
node need not visit them."""


def _classes(cls: type[ast.AST]) -> list[type[ast.AST]]:
    return [cls, *(found for sub in cls.__subclasses__() for found in _classes(sub))]


FIELDS: dict[type[ast.AST], tuple[tuple[str, bool], ...]] = {
    cls: tuple(
        (name, name in SPARSE.get(cls.__name__, ()))
        for name in cls._fields if name not in LEAVES | PLAIN | PLAIN_IN.get(cls.__name__, set())
    )
    for cls in _classes(ast.AST)
}
"""Each node class's fields to visit, in order, each with whether its list may hold None."""


def children(node: ast.AST) -> list[ast.AST]:
    """The direct child nodes, in `ast.iter_child_nodes` order, contexts and operators left out."""
    found: list[ast.AST] = []
    for name, sparse in FIELDS[type(node)]:
        value = getattr(node, name, None)
        if isinstance(value, list):
            found.extend([item for item in value if item is not None] if sparse else value)
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def walk(node: ast.AST) -> list[ast.AST]:
    """`node` and every node below it, breadth first, in `ast.walk` order, contexts and
    operators left out."""
    return walk_all([node])


def walk_all(roots: list[ast.AST]) -> list[ast.AST]:
    """`roots` and every node below them, breadth first: the order `walk` meets them in, from a
    parent whose children are `roots` and some others left out (with every node below those)."""
    found = list(roots)
    fields = FIELDS
    for current in found:  # the list grows while it is read: a queue without popping
        # `children` inlined: a call per node costs about 30% more here
        for name, sparse in fields[type(current)]:
            value = getattr(current, name, None)
            if isinstance(value, list):
                found.extend([item for item in value if item is not None] if sparse else value)
            elif isinstance(value, ast.AST):
                found.append(value)
    return found


BLOCKS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})
"""The fields that hold statements, or the `except` handlers and `case`s that hold them: the only
places a statement can sit (an expression holds none)."""
STATEMENT_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {
    cls: tuple(name for name, _ in fields if name in BLOCKS) for cls, fields in FIELDS.items()
}


def statements(roots: list[ast.stmt]) -> list[ast.AST]:
    """`roots` and every statement below them (with the `except` handlers and `case`s between),
    in the order `walk` meets them: a statement's parents are statements, handlers and cases
    only, so its depth, and with it the breadth-first order, is the same as in `walk`."""
    found: list[ast.AST] = list(roots)
    blocks = STATEMENT_FIELDS
    for current in found:  # a queue without popping, as in `walk`
        for name in blocks[type(current)]:
            found.extend(getattr(current, name))
    return found


def dotted_name(node: ast.AST) -> list[str] | None:
    """The parts of a dotted name (`a.b.c` -> ["a", "b", "c"]); None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None
