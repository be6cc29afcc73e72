"""`ClassFacts` of one class: bases, methods, the producers it defines, and what its `__init__`
builds and calls (where a fix can insert a delegation; whether a base's `__init__` runs)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TypeVar

from ..aliases import aliased
from ..facts import ClassFacts, Producer
from ..families import class_facts
from ..walk import walk
from .members import MemberWalker
from .syntax import ATTR, IT, IT_CLASS, Function, base_name, blocks, dotted, dynamic_builder, name_defaults, named
from .traffic import FunctionAnalyzer

K = TypeVar("K", str, int)


class ClassAnalyzer:
    """Every method is walked for what it assigns to `self` (producers, submodules); only the
    methods that name intermediate tensors, and producer methods, get `FunctionFacts`.
    `lines` are the module's source lines (index 0 is line 1), for text tests."""

    def __init__(self, node: ast.ClassDef, lines: list[str]) -> None:
        self.node = node
        self.lines = lines
        self.facts = ClassFacts(
            name=node.name,
            line=node.lineno,
            column=node.col_offset,
            bases=[base_name(b) for b in node.bases],
        )
        self.facts.is_protocol = any(b.split(".")[-1] == "Protocol" for b in self.facts.bases)
        self.named = True
        """Whether the class's text can name intermediate tensors (known once `run` reads it)."""

    def run(self) -> ClassFacts:
        text = "\n".join(self.lines[self.node.lineno - 1 : self.node.end_lineno])
        self.named = "ntermediate" in text
        defs = {}
        for item in self.node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs[item.name] = item
                self._method(item)
            elif isinstance(item, ast.Assign):
                self._class_attribute(item)
        for producer in self.facts.producers:
            if producer.kind == "method" and producer.method in defs and producer.method != ATTR:
                self.facts.methods[producer.method] = FunctionAnalyzer(defs[producer.method], producer=True).run()
        for fact in class_facts():
            if fact.wanted(text):
                setattr(self.facts, fact.attribute, fact.read(self.node, self.lines))
        return self.facts

    def mentions(self, fn: Function) -> bool:
        """Whether a method's source names intermediate tensors at all (a text test, no walk;
        none does in a class whose text never has the words' common part)."""
        body = self.lines[fn.lineno - 1 : fn.end_lineno]
        return self.named and any("ntermediate" in line and (IT in line or IT_CLASS in line) for line in body)

    def _class_attribute(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == ATTR:
                self.facts.producers.append(
                    Producer("unknown", node.lineno, node.col_offset, attr=ATTR)
                )
            elif isinstance(target, ast.Name) and (name := named(node.value) or _one(aliased(node.value))):
                self.facts.class_attrs[target.id] = name

    def _method(self, fn: Function) -> None:
        self.facts.method_names.add(fn.name)
        if fn.name == ATTR:
            facts = FunctionAnalyzer(fn, producer=True).run()
            self.facts.methods[fn.name] = facts
            self.facts.producers.append(
                Producer("method", fn.lineno, fn.col_offset, method=fn.name)
            )
            return
        if fn.name == "__init__":
            for stmt in fn.body:
                for attr in _assigned_in(stmt):
                    self.facts.init_last_assign[attr] = stmt.end_lineno or stmt.lineno
            built = next((stmt for stmt in reversed(fn.body) if _builds(stmt)), None)
            self.facts.init_last_build = built.end_lineno or built.lineno if built else 0
            self.facts.init_calls = tuple(_init_calls(fn))
            self.facts.init_defaults = name_defaults(fn)
            self.facts.init_params = tuple(a.arg for a in fn.args.posonlyargs + fn.args.args)[1:]
            self.facts.init_passes, self.facts.init_passes_at = _passed_on(fn.body)
        MemberWalker(self.facts, fn).walk(fn.body, ())
        if self.mentions(fn):
            self.facts.methods[fn.name] = FunctionAnalyzer(fn, producer=False).run()


def _one(classes: list[str]) -> str:
    """The class, when exactly one is named (`partial(Cls, ...)`), else ""."""
    return classes[0] if len(classes) == 1 else ""


def _builds(stmt: ast.stmt) -> bool:
    """Whether a statement constructs something: calls a class (a capitalized name) or a builder."""
    for node in walk(stmt):
        if isinstance(node, ast.Call):
            chain = dotted(node.func) or ("",)
            if chain[-1][:1].isupper() or dynamic_builder(chain[-1]):
                return True
    return False


def _init_calls(fn: Function) -> list[str]:
    """The `__init__` calls among the method's top-level statements: `super().__init__(...)` ->
    "super"; `super(Base, self).__init__()` -> "super:Base" (the classes after Base);
    `Base.__init__(self, ...)` -> "Base"."""
    found = []
    for stmt in fn.body:
        node = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            owner = node.func.value
            chain = dotted(owner)
            if isinstance(owner, ast.Call) and owner.args and chain == ("super",):
                start = dotted(owner.args[0])
                chain = ("super:" + ".".join(start),) if start else None
            if chain and ".".join(chain) not in found:
                found.append(".".join(chain))
    return found


def _passed_on(body: list[ast.stmt]) -> tuple[dict[str, str], dict[int, str]]:
    """What the `<base>.__init__(...)` calls among `body`'s statements, in any block of it (a
    call under an `if` counts), hand on: by keyword, and by place (after the `self` of
    `Base.__init__(self, ...)`). A dotted name, or "" where it is not known: the value is
    something else, or calls to the same `__init__` hand on different names (or one leaves the
    parameter to its default)."""
    by_target: dict[str, list[tuple[dict[str, str], dict[int, str]]]] = {}
    for owner, call in _base_init_calls(body):
        explicit = not isinstance(owner, ast.Call)  # not super().__init__
        places: dict[int, str] = {}
        for place, arg in enumerate(call.args[1:] if explicit else call.args):
            if isinstance(arg, ast.Starred):
                break
            places[place] = named(arg) or ""
        names = {k.arg: named(k.value) or "" for k in call.keywords if k.arg}
        by_target.setdefault(ast.dump(owner), []).append((names, places))
    by_name: dict[str, str] = {}
    by_place: dict[int, str] = {}
    for calls in by_target.values():
        _agreed(by_name, [names for names, _ in calls])
        _agreed(by_place, [places for _, places in calls])
    return by_name, by_place


def _agreed(found: dict[K, str], calls: list[dict[K, str]]) -> None:
    """Add to `found` what every call of `calls` hands on for each key; "" where they differ,
    or where `found` holds another value already."""
    for key in {key for call in calls for key in call}:
        values = {call.get(key, "") for call in calls}
        value = values.pop() if len(values) == 1 else ""
        found[key] = value if found.get(key, value) == value else ""


def _base_init_calls(body: list[ast.stmt]) -> Iterator[tuple[ast.expr, ast.Call]]:
    """(whose `__init__`, the call) of each `<owner>.__init__(...)` statement in `body`'s blocks."""
    for stmt in body:
        if isinstance(stmt, ast.If):
            yield from _base_init_calls(stmt.body)
            yield from _base_init_calls(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While, ast.Try)):
            for block in blocks(stmt):
                yield from _base_init_calls(block)
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__":
            yield call.func.value, call


def _assigned_in(stmt: ast.stmt) -> list[str]:
    """`self.<attr>` assigned by a statement, or unconditionally inside its `with` blocks."""
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [attr for inner in stmt.body for attr in _assigned_in(inner)]
    return _self_targets(stmt)


def _self_targets(stmt: ast.stmt) -> list[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else (
        [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    )
    return [
        t.attr
        for t in targets
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    ]
