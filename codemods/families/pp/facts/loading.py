"""What weight loaders do with the parameter dict (PP008): plain facts, read from one class's AST.

A rank holds only its share of the layers (`make_layers` fills the rest with `PPMissingLayer`), so
`dict(self.named_parameters())` lacks every other rank's parameters while the checkpoint still
names them all. A lookup is guarded when a skip (`is_pp_missing_parameter(...)`, `name not in
params_dict`, an enclosing `if name in params_dict:`, `try/except KeyError`) dominates it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ....unparse import unparse
from ....walk import CHILDLESS, children, dotted_name, walk

MISSING_CHECK = "is_pp_missing_parameter"
SPLITTERS = ("make_layers", "PPMissingLayer")
TRIES = tuple(getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name))
CATCHES = {"KeyError", "LookupError", "Exception", "BaseException"}


@dataclass(frozen=True)
class Lookup:
    """`params_dict[key]` (or `.pop(key)`) not dominated by a skip. `stmt_*` locate the statement
    that holds it, where a guard goes; `exit` is the statement that skips ("continue" inside a
    loop, else "return"); `fixable` is False inside a comprehension or lambda; `given` when the
    dict is not built here (or in an enclosing function) from `named_parameters`: a caller's."""

    key: str
    line: int
    column: int
    stmt_line: int
    stmt_column: int
    exit: str
    fixable: bool = True
    given: bool = False


@dataclass(frozen=True)
class LoaderCall:
    """A call of a helper from a loader: `self.<method>(...)`, a closure, or a method of a
    submodule (`self.encoder.load_weight(...)`: `via` is ("self", "encoder"), empty for the
    others); `guarded` when a skip dominates it."""

    target: str
    line: int
    guarded: bool
    via: tuple[str, ...] = ()


@dataclass
class Loader:
    """A method or a closure (named `outer.inner`) that looks parameters up, calls helpers or
    skips missing layers. `checks` is the line of its first `is_pp_missing_parameter(...)` call
    (0: none): its author expects layers of `self` to go missing, wherever they are built.
    `returns_value` when a `return` hands back a value (a bare `return` would change it)."""

    name: str
    line: int
    lookups: list[Lookup] = field(default_factory=list)
    calls: list[LoaderCall] = field(default_factory=list)
    checks: int = 0
    returns_value: bool = False


@dataclass(frozen=True)
class Split:
    """`self.<attr> = make_layers(...)` or `= PPMissingLayer()` (attr empty when not assigned to self);
    `callee` is the name called as written (`make_layers`, `utils.make_layers`), empty when it is
    not a dotted name."""

    attr: str
    line: int
    kind: str
    callee: str


@dataclass
class LoadingFacts:
    loaders: dict[str, Loader] = field(default_factory=dict)
    splits: list[Split] = field(default_factory=list)


MARKERS = ("named_parameters", "params_dict", "def load_weights", *SPLITTERS)
"""A class whose source holds none of these has no loader or split facts (a `load_weights` that
names no parameter dict may call a submodule's loader)."""


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can hold loader or split facts (a text test before
    any walk)."""
    return any(m in text for m in MARKERS)


def loading_facts(node: ast.ClassDef, lines: list[str]) -> LoadingFacts | None:
    """Facts of `node`; `lines` are the module's. Only `load_weights` and the methods that name a
    parameter dict are walked as loaders."""
    facts = LoadingFacts()
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        text = "\n".join(lines[item.lineno - 1 : item.end_lineno])
        if any(s in text for s in SPLITTERS):
            facts.splits.extend(_splits(item))
        if item.name == "load_weights" or "named_parameters" in text or "params_dict" in text:
            _Walker(facts, item.name, item, set(), "named_parameters" in text).run()
    return facts if facts.loaders or facts.splits else None


def _splits(fn: ast.AST) -> list[Split]:
    found = []
    for node in walk(fn):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        called = _splitter(node.value)
        if called is None:
            continue
        kind, callee = called
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        attrs = [
            e.attr for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])
            if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self"
        ]
        found.append(Split(attrs[-1] if attrs else "", node.lineno, kind, callee))
    return found


def _splitter(value: ast.expr) -> tuple[str, str] | None:
    """The splitter a value calls, and the name it is called by."""
    for node in walk(value):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in SPLITTERS:
                return name, ".".join(dotted_name(func) or ())
    return None


def _is_dict_source(value: ast.expr) -> bool:
    return any(
        isinstance(n, ast.Attribute) and n.attr == "named_parameters" for n in walk(value)
    )


class _Walker:
    """Walks one function's statements, tracking whether a skip dominates the current point."""

    def __init__(self, facts: LoadingFacts, name: str, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                 dicts: set[str], named: bool, built: frozenset[str] = frozenset()) -> None:
        self.facts = facts
        self.name = name
        self.fn = fn
        self.dicts = set(dicts) | {"params_dict"}
        self.built = set(built)
        """The dicts this function or an enclosing one builds from `named_parameters`."""
        self.loader = Loader(name, fn.lineno)
        self.closures: dict[str, str] = {}
        self.named = named
        """Whether the function's text names `named_parameters` (else no dict comes from it)."""

    def run(self) -> None:
        for node in walk(self.fn) if self.named else ():
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and _is_dict_source(node.value):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                self.built.update(t.id for t in targets if isinstance(t, ast.Name))
        self.dicts |= self.built
        self._block(self.fn.body, guarded=False, in_loop=False)
        self.loader.returns_value = _returns_value(self.fn)
        if self.loader.lookups or self.loader.calls or self.loader.checks:
            self.facts.loaders[self.name] = self.loader

    def _block(self, body: list[ast.stmt], guarded: bool, in_loop: bool) -> None:
        for stmt in body:
            self._statement(stmt, guarded, in_loop)
            if not guarded and isinstance(stmt, ast.If) and _exits(stmt.body) and self._skips(stmt.test):
                guarded = True

    def _statement(self, stmt: ast.stmt, guarded: bool, in_loop: bool) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            inner = f"{self.name}.{stmt.name}"
            self.closures[stmt.name] = inner
            _Walker(self.facts, inner, stmt, self.dicts, self.named, frozenset(self.built)).run()
            return
        if isinstance(stmt, ast.ClassDef):
            return
        if isinstance(stmt, ast.If):
            self._expr(stmt.test, stmt, guarded, in_loop)
            self._block(stmt.body, guarded or self._admits(stmt.test), in_loop)
            self._block(stmt.orelse, guarded or self._skips(stmt.test), in_loop)
            return
        if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While)):
            head = stmt.iter if isinstance(stmt, (ast.For, ast.AsyncFor)) else stmt.test
            self._expr(head, stmt, guarded, in_loop)
            self._block(stmt.body, guarded, True)
            self._block(stmt.orelse, guarded, in_loop)
            return
        if isinstance(stmt, TRIES):
            caught = any(_catches(h) for h in stmt.handlers)
            self._block(stmt.body, guarded or caught, in_loop)
            for handler in stmt.handlers:
                self._block(handler.body, guarded, in_loop)
            self._block(stmt.orelse, guarded, in_loop)
            self._block(stmt.finalbody, guarded, in_loop)
            return
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self._expr(item.context_expr, stmt, guarded, in_loop)
            self._block(stmt.body, guarded, in_loop)
            return
        if isinstance(stmt, ast.Match):
            self._expr(stmt.subject, stmt, guarded, in_loop)
            for case in stmt.cases:
                self._block(case.body, guarded, in_loop)
            return
        self._expr(stmt, stmt, guarded, in_loop)

    def _expr(self, root: ast.AST, stmt: ast.stmt, guarded: bool, in_loop: bool) -> None:
        stack: list[tuple[ast.AST, bool, bool]] = [(root, guarded, True)]
        while stack:
            node, safe, fixable = stack.pop()
            if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                fixable = False
            if isinstance(node, ast.IfExp):
                stack.append((node.test, safe, fixable))
                stack.append((node.body, safe or self._admits(node.test), fixable))
                stack.append((node.orelse, safe or self._skips(node.test), fixable))
                continue
            if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
                for index, value in enumerate(node.values):
                    earlier = any(self._admits(v) for v in node.values[:index])
                    stack.append((value, safe or earlier, fixable))
                continue
            found = self._lookup(node)
            if found is not None and not safe and isinstance(node, ast.expr):
                key, held = found
                self.loader.lookups.append(Lookup(
                    unparse(key), node.lineno, node.col_offset, stmt.lineno, stmt.col_offset,
                    "continue" if in_loop else "return", fixable, held not in self.built,
                ))
            if isinstance(node, ast.Call):
                target, via = self._helper(node.func)
                if target:
                    self.loader.calls.append(LoaderCall(target, node.lineno, safe, via))
                elif _called(node.func) == MISSING_CHECK and not self.loader.checks:
                    self.loader.checks = node.lineno
            stack.extend((child, safe, fixable) for child in children(node) if type(child) not in CHILDLESS)

    def _lookup(self, node: ast.AST) -> tuple[ast.expr, str] | None:
        """The key a lookup looks up, and the dict it looks it up in."""
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name) and node.value.id in self.dicts):
            return node.slice, node.value.id
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop"
                and isinstance(node.func.value, ast.Name) and node.func.value.id in self.dicts
                and len(node.args) == 1 and not node.keywords):
            return node.args[0], node.func.value.id
        return None

    def _helper(self, func: ast.expr) -> tuple[str, tuple[str, ...]]:
        """The helper a call runs, and the submodule it is called on (none for a closure or
        `self.<method>`); "" when the call runs no helper."""
        if isinstance(func, ast.Name) and func.id in self.closures:
            return self.closures[func.id], ()
        chain = dotted_name(func) if isinstance(func, ast.Attribute) else None
        if chain and chain[0] == "self":
            return chain[-1], tuple(chain[:-1]) if len(chain) > 2 else ()
        return "", ()

    def _skips(self, test: ast.expr) -> bool:
        """Whether `test` holds for every name this rank lacks (its branch skips them)."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            return any(self._skips(v) for v in test.values)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._admits(test.operand)
        if isinstance(test, ast.Call):
            return _called(test.func) == MISSING_CHECK
        return self._membership(test, ast.NotIn)

    def _admits(self, test: ast.expr) -> bool:
        """Whether `test` fails for every name this rank lacks (its branch sees only held names)."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return any(self._admits(v) for v in test.values)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self._skips(test.operand)
        return self._membership(test, ast.In)

    def _membership(self, test: ast.expr, op: type) -> bool:
        return (
            isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], op)
            and isinstance(test.comparators[0], ast.Name) and test.comparators[0].id in self.dicts
        )


def _called(func: ast.expr) -> str:
    """The name a call calls: `f` of `f(...)` and of `a.b.f(...)`."""
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _returns_value(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a `return` of `fn` itself (not of a nested function) hands back a value."""
    stack: list[ast.AST] = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(child for child in children(node) if type(child) not in CHILDLESS)
    return False


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Continue, ast.Break, ast.Return))


def _catches(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any((t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "")) in CATCHES for t in types)
