"""Modules that a rank test leaves unbuilt, and what the loader names (PP013): plain facts from one
class's AST.

`AutoWeightsLoader` skips a child that is a `PPMissingLayer`, but every rank reads the whole
checkpoint: a weight whose module this rank never built (the attribute left unset, or None) stops
the load, unless the loader is told to skip or drop that name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TypeGuard

from ....aliases import class_aliases
from ....unparse import unparse
from ....vllm_names import FIRST_RANK, LAST_RANK
from ....walk import dotted_name, walk

WORDS = (LAST_RANK, FIRST_RANK)
LOADER = "AutoWeightsLoader"
ENTRY = "load_weights"
PARAMETERLESS = frozenset({"LogitsProcessor", "Sampler", "PPMissingLayer", "Identity"})
"""Modules without weights: a rank that lacks one has nothing to skip."""
PLAIN_ENDINGS = ("Config", "Args", "Metadata", "Params", "Spec", "State", "Buffer", "Cache", "Stream", "Event")
"""Endings of class names that build plain objects (a config, a buffer), not modules with weights."""


@dataclass(frozen=True)
class Unbuilt:
    """`self.<attr> = <ctor>(...)` under one branch of a rank test in `__init__`, where nothing
    else in `__init__` sets the attribute (`other` "") or sets it to anything but None (`other`
    "None"); `built` is the test as written, negated when the build is in the `else` branch."""

    attr: str
    ctor: str
    line: int
    column: int
    built: str
    other: str


@dataclass(frozen=True)
class UnbuiltFacts:
    """The modules left unbuilt on some ranks; where `load_weights`, or a method of the class it
    calls, builds `AutoWeightsLoader(self, ...)` (line 0: none does, or the class has no
    `load_weights`); and the names those methods and the class attributes give in strings, or read
    as `self.<attr>` (a loader that names a module knows about it)."""

    unbuilt: tuple[Unbuilt, ...]
    loader_line: int
    loader_column: int
    names: frozenset[str]


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can hold these facts (a text test before any walk)."""
    return LOADER in text or any(word in text for word in WORDS)


def unbuilt_facts(node: ast.ClassDef) -> UnbuiltFacts | None:
    """Facts of `node`; None when it builds nothing on one side of a rank test and has no loader."""
    unbuilt: list[Unbuilt] = []
    loader = (0, 0)
    names: set[str] = set()
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for item in node.body:
        if isinstance(item, (ast.Assign, ast.AnnAssign)):
            names.update(_names(walk(item)))
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        methods[item.name] = item
        if item.name == "__init__":
            unbuilt.extend(_unbuilt(item.body, class_aliases(item)))
    for method in _reached(methods):
        nodes = walk(method)
        names.update(_names(nodes))
        aliases = _loader_aliases(nodes)
        if not loader[0]:
            loader = next(((n.lineno, n.col_offset) for n in nodes if _builds_loader(n, aliases)), (0, 0))
    if not unbuilt and not loader[0]:
        return None
    return UnbuiltFacts(tuple(unbuilt), loader[0], loader[1], frozenset(names))


def _reached(methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """`load_weights` and the methods of the class it calls on `self`, at any depth (the loader
    may be built in a helper, whatever its name), `load_weights` first."""
    found: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    pending = [ENTRY]
    while pending:
        method = methods.get(pending.pop(0))
        if method is None or method in found:
            continue
        found.append(method)
        pending.extend(
            n.func.attr for n in walk(method)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and dotted_name(n.func) == ["self", n.func.attr]
        )
    return found


def _unbuilt(body: list[ast.stmt], aliases: dict[str, tuple[str, ...]]) -> list[Unbuilt]:
    """The attributes that a rank test among `body`'s statements builds in one branch, and that
    nothing else in `body` (the other branch, another statement, at any depth) sets to anything
    but None; a class may be built through one of `aliases` (`Cls = partial(Mixer, ...)`)."""
    tests = [stmt for stmt in body if isinstance(stmt, ast.If) and _rank_test(stmt.test)]
    if not tests:
        return []
    assigned = [(stmt, _assignments([stmt])) for stmt in body]  # each statement walked once
    found = []
    for stmt in tests:
        for branch, other, negated in ((stmt.body, stmt.orelse, False), (stmt.orelse, stmt.body, True)):
            candidates = _built(branch, aliases)
            if not candidates:
                continue
            built = _negated(stmt.test) if negated else unparse(stmt.test)
            others = [pair for each, pairs in assigned if each is not stmt for pair in pairs]
            elsewhere = _assigned_values(others + _assignments(other))
            for attr, (ctor, target) in candidates.items():
                if elsewhere.get(attr, "None") != "None":
                    continue
                found.append(Unbuilt(attr, ctor, target.lineno, target.col_offset, built,
                                     "None" if attr in elsewhere else ""))
    return found


def _negated(test: ast.expr) -> str:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return unparse(test.operand)
    text = unparse(test)
    return f"not ({text})" if isinstance(test, (ast.BoolOp, ast.Compare, ast.IfExp, ast.NamedExpr)) else f"not {text}"


def _rank_test(test: ast.expr) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in WORDS for n in walk(test))


def _assignments(body: list[ast.stmt]) -> list[tuple[ast.Attribute, ast.expr]]:
    """(target, value) of every `self.<attr> = value` among the statements, at any depth."""
    found: list[tuple[ast.Attribute, ast.expr]] = []
    for node in (n for stmt in body for n in walk(stmt)):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        found.extend((t, value) for t in targets if isinstance(t, ast.Attribute) and dotted_name(t) == ["self", t.attr])
    return found


def _assigned_values(pairs: list[tuple[ast.Attribute, ast.expr]]) -> dict[str, str]:
    """Each `self.<attr>` among the (target, value) pairs: "None" when every value is None, else
    "set"."""
    found: dict[str, str] = {}
    for target, value in pairs:
        none = isinstance(value, ast.Constant) and value.value is None
        found[target.attr] = "None" if none and found.get(target.attr, "None") == "None" else "set"
    return found


def _built(body: list[ast.stmt], aliases: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ast.Attribute]]:
    """`self.<attr> = <Module>(...)` among the statements (at any depth): a capitalized class that
    can hold weights, called by its name or through a local alias; each with that class's name."""
    found: dict[str, tuple[str, ast.Attribute]] = {}
    for target, value in _assignments(body):
        chain = dotted_name(value.func) if isinstance(value, ast.Call) else None
        if not chain or chain[0] == "self":
            continue
        named = aliases.get(chain[0], ()) if len(chain) == 1 else ()
        ctor = next((c for c in named if _module_class(c.rsplit(".", 1)[-1])), "")
        if not named and _module_class(chain[-1]):
            ctor = ".".join(chain)
        if ctor:
            found.setdefault(target.attr, (ctor, target))
    return found


def _module_class(name: str) -> bool:
    return name[:1].isupper() and name not in PARAMETERLESS and not name.endswith(PLAIN_ENDINGS)


def _loader_aliases(nodes: list[ast.AST]) -> set[str]:
    """Local names bound to a loader class (`loader_cls = AutoWeightsLoader`, then maybe to a
    subclass of it): calling one builds a loader."""
    return {
        target.id for node in nodes if isinstance(node, ast.Assign) and _loader_class(node.value)
        for target in node.targets if isinstance(target, ast.Name)
    }


def _loader_class(node: ast.expr) -> bool:
    """`AutoWeightsLoader`, or a subclass named after it (`StackedAutoWeightsLoader`), by any
    dotted name."""
    return (dotted_name(node) or [""])[-1].endswith(LOADER)


def _builds_loader(node: ast.AST, aliases: set[str]) -> TypeGuard[ast.Call]:
    """`AutoWeightsLoader(self, ...)`, or a local alias of it called with `self`: the loader of
    this module's own children."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    first = node.args[0]
    if not (isinstance(first, ast.Name) and first.id == "self"):
        return False
    return _loader_class(node.func) or isinstance(node.func, ast.Name) and node.func.id in aliases


def _names(nodes: list[ast.AST]) -> set[str]:
    """The dotted names that the strings among `nodes` (f-strings' literal parts too) end with
    (`"model.norm."` -> model.norm and norm), and the attributes they read from `self`."""
    found: set[str] = set()
    for n in nodes:
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            parts = [p for p in n.value.split(".") if p]
            found.update(".".join(parts[i:]) for i in range(len(parts)))
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
            found.add(n.attr)
    return found
