"""Loops over every entry of a layer list that read an attribute of the entry (PP014): plain
facts from one class's AST.

`make_layers` returns a full-length `ModuleList` whose entries outside the rank's
`[start_layer, end_layer)` are `PPMissingLayer` (an `nn.Identity` with no attribute of its own):
`for layer in self.layers: layer.mlp` raises AttributeError on every rank with PP>1, unless the
loop skips the placeholder first (`isinstance(layer, PPMissingLayer)`, a filter on the layer's
class, `hasattr(layer, ...)`). A loop over `self.layers[self.start_layer:self.end_layer]` or
`islice(...)` is not over every entry, and is not read here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ....walk import dotted_name, walk

WORD = "layers"
MARKER = ".layers"
LOOP = re.compile(r"(?:\bin\s+(?:enumerate\(\s*)?|=\s*)self(?:\.\w+)*\.layers\b(?!\s*\[)")
"""A line that can start a loop over a whole list (`in self.model.layers`, `in enumerate(self.layers`)
or bind a local to one (`layers = self.model.layers`): only the methods that hold one are walked."""
TESTS = frozenset({"isinstance", "hasattr"})
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
DEFERRED = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)
MODULE_ATTRS = frozenset({
    "T_destination", "add_module", "apply", "bfloat16", "buffers", "call_super_init", "children", "compile", "cpu",
    "cuda", "double", "dump_patches", "eval", "extra_repr", "float", "forward", "get_buffer", "get_extra_state",
    "get_parameter", "get_submodule", "half", "ipu", "load_state_dict", "modules", "mtia", "named_buffers",
    "named_children", "named_modules", "named_parameters", "parameters", "register_backward_hook",
    "register_buffer", "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
    "register_full_backward_pre_hook", "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook",
    "register_module", "register_parameter", "register_state_dict_post_hook", "register_state_dict_pre_hook",
    "requires_grad_", "set_extra_state", "set_submodule", "share_memory", "state_dict", "to", "to_empty", "train",
    "training", "type", "xpu", "zero_grad",
})
"""What a `PPMissingLayer` has as an `nn.Module` (and any object's dunders): reading one of these
on it is no error."""


@dataclass(frozen=True)
class LayerLoop:
    """A `for` loop (`kind` "loop") or comprehension ("comprehension") in `method` over every
    entry of `self.<chain>` (the last name is `layers`), whose body reads `read` (`layer.mlp`) at `read_line`/`read_column` before
    any skip of the entry `var`. `body_line`/`body_column` locate the first statement of a `for`
    loop's indented body, where a skip goes (0: a comprehension or a one-line body)."""

    method: str
    kind: str
    chain: tuple[str, ...]
    line: int
    column: int
    var: str
    read: str
    read_line: int
    read_column: int
    body_line: int
    body_column: int


@dataclass(frozen=True)
class LoopFacts:
    """The class's loops over all its layers, and which of its own methods each method calls
    (`self.<name>(...)`), to tell the loops that `__init__` runs."""

    loops: tuple[LayerLoop, ...]
    calls: tuple[tuple[str, frozenset[str]], ...]


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can loop over a layer list (a text test before any walk)."""
    return MARKER in text


def loop_facts(node: ast.ClassDef, lines: list[str]) -> LoopFacts | None:
    """Facts of `node`; None when no method loops over a whole layer list and reads its entries."""
    methods = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
    loops = [
        loop for item in methods if any(LOOP.search(line) for line in lines[item.lineno - 1 : item.end_lineno])
        for loop in _loops(item.name, walk(item))
    ]
    if not loops:
        return None
    return LoopFacts(tuple(loops), tuple((item.name, frozenset(_self_calls(walk(item)))) for item in methods))


def _self_calls(nodes: list[ast.AST]) -> list[str]:
    return [
        n.func.attr for n in nodes
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
    ]


def _loops(method: str, nodes: list[ast.AST]) -> list[LayerLoop]:
    aliases = _aliases(nodes)
    found = []
    for node in nodes:
        if isinstance(node, ast.For):
            chain, var = _whole_list(node.iter, node.target, aliases)
            read = _unguarded_read(node.body, var) if chain else None
            first = node.body[0]
            indented = first.lineno > node.lineno
            body = (first.lineno, first.col_offset) if indented else (0, 0)
            kind = "loop"
        elif isinstance(node, COMPREHENSIONS):
            generator = node.generators[0]
            chain, var = _whole_list(generator.iter, generator.target, aliases)
            guarded = any(_tests(test, var) for test in generator.ifs)
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            read = None if guarded or not chain else _first_read(parts, var)
            body = (0, 0)
            kind = "comprehension"
        else:
            continue
        if chain and read is not None:
            found.append(LayerLoop(method, kind, chain, node.lineno, node.col_offset, var, ast.unparse(read),
                                   read.lineno, read.col_offset, *body))
    return found


def _aliases(nodes: list[ast.AST]) -> dict[str, tuple[str, ...]]:
    """Locals bound once in the method, to a whole layer list (`layers = self.model.layers`)."""
    bound: dict[str, list[tuple[str, ...]]] = {}
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            chain = tuple(dotted_name(node.value) or ()) if isinstance(node, ast.Assign) else ()
            for name in (n.id for t in targets for n in walk(t) if isinstance(n, ast.Name)):
                bound.setdefault(name, []).append(chain)
    return {
        name: chains[0][1:] for name, chains in bound.items()
        if len(chains) == 1 and len(chains[0]) > 1 and chains[0][0] == "self" and chains[0][-1] == WORD
    }


def _whole_list(iterable: ast.expr, target: ast.expr,
                aliases: dict[str, tuple[str, ...]]) -> tuple[tuple[str, ...], str]:
    """(`self.<chain>`, the entry's name) when the loop runs over every entry of a layer list:
    `self.layers`, `self.model.layers`, a local bound to one, or `enumerate(...)` of one; else
    ((), "")."""
    if isinstance(iterable, ast.Call) and dotted_name(iterable.func) == ["enumerate"] and iterable.args:
        iterable = iterable.args[0]
        target = target.elts[1] if isinstance(target, ast.Tuple) and len(target.elts) == 2 else target
    if not isinstance(target, ast.Name):
        return (), ""
    if isinstance(iterable, ast.Name):
        return aliases.get(iterable.id, ()), target.id
    chain = dotted_name(iterable)
    if not chain or chain[0] != "self" or chain[-1] != WORD or len(chain) < 2:
        return (), ""
    return tuple(chain[1:]), target.id


def _unguarded_read(body: list[ast.stmt], var: str) -> ast.Attribute | None:
    """The first read of `var.<attr>` among the statements that no skip protects: an
    `if <test of var>: continue` before it, or an enclosing `if` / conditional whose test is one."""
    for stmt in body:
        if isinstance(stmt, ast.If) and _tests(stmt.test, var):
            read = _first_read([stmt.test], var)
            if read is not None or _exits(stmt.body):
                return read
            continue
        read = _first_read([stmt], var)
        if read is not None:
            return read
    return None


def _first_read(parts: Sequence[ast.AST], var: str) -> ast.Attribute | None:
    """The first `var.<attr>` among `parts` that is not an `nn.Module` member and that no test of
    `var` guards (the body of an `if`, the branches of a conditional, what follows the test in an
    `and`). Deferred code (a lambda, a nested def) is not read."""
    for part in parts:
        if isinstance(part, DEFERRED):
            continue
        if isinstance(part, ast.If):
            read = _first_read([part.test], var)
            if read is None and not _tests(part.test, var):
                read = _first_read([*part.body, *part.orelse], var)
        elif isinstance(part, ast.IfExp):
            read = None if _tests(part.test, var) else _first_read([part.test, part.body, part.orelse], var)
        elif isinstance(part, ast.BoolOp) and isinstance(part.op, ast.And):
            guard = next((i for i, value in enumerate(part.values) if _tests(value, var)), len(part.values))
            read = _first_read(part.values[:guard], var)
        elif _is_read(part, var):
            read = part  # type: ignore[assignment]
        else:
            read = _first_read(list(ast.iter_child_nodes(part)), var)
        if read is not None:
            return read
    return None


def _is_read(node: ast.AST, var: str) -> bool:
    return (
        isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == var
        and node.attr not in MODULE_ATTRS and not node.attr.startswith("__")
    )


def _tests(test: ast.expr, var: str) -> bool:
    """Whether `test` asks what `var` is: `isinstance(var, ...)` or `hasattr(var, ...)`,
    negated or inside `and` / `or`."""
    return any(
        isinstance(n, ast.Call) and dotted_name(n.func) is not None and (dotted_name(n.func) or [""])[-1] in TESTS
        and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == var
        for n in walk(test)
    )


def _exits(body: list[ast.stmt]) -> bool:
    """Whether a block ends the entry's turn (`continue`; `return` or `raise` leave the loop)."""
    return bool(body) and isinstance(body[-1], (ast.Continue, ast.Return, ast.Raise))
