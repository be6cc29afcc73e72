"""Inject one known contract violation into a real model file, independently of contractfix's rules.

Each kind yields one mutant per site it applies to (a `Mutant` holds the whole mutated source):
- `drop_last_key`: drop the last key of a factory's literal list when the file both reads it
  (`intermediate_tensors["k"]`) and sends it (`IntermediateTensors({"k": ...})`);
- `drop_none_default`: drop `= None` from `intermediate_tensors` in a registered class's own forward;
- `add_unsent_key`: append a key nobody sends or reads to a factory's literal list;
- `delete_delegation`: delete `self.make_empty_intermediate_tensors = <x>.make_empty_intermediate_tensors`
  from a registered class's `__init__`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

FACTORY = "make_empty_intermediate_tensors_factory"
ATTR = "make_empty_intermediate_tensors"
UNSENT = "contractfix_unsent"


@dataclass(frozen=True)
class Mutant:
    kind: str
    line: int
    source: bytes


def mutants(kind: str, source: bytes, registered: set[str]) -> list[Mutant]:
    """Every mutant of `kind` for one file; `registered` names its registered classes."""
    needs_registered = kind in ("drop_none_default", "delete_delegation")
    if FACTORY.encode() not in source and not needs_registered or needs_registered and not registered:
        return []
    return KINDS[kind](source, registered)


def _key_lists(module: cst.Module) -> list[cst.List]:
    """Literal string lists passed as the keys of the factory, in source order."""
    found: list[cst.List] = []

    class Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            name = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", "")
            if name != FACTORY or not node.args:
                return
            arg = next((a for a in node.args if a.keyword and a.keyword.value in ("keys", "tensor_names")), node.args[0])
            value = arg.value
            if isinstance(value, cst.List) and value.elements and all(
                isinstance(e.value, cst.SimpleString) for e in value.elements
            ):
                found.append(value)

    module.visit(Finder())
    return found


def _edit_list(source: bytes, edit: Callable[[cst.List], cst.List | None], kind: str) -> list[Mutant]:
    module = cst.parse_module(source)
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    out = []
    for target in _key_lists(module):
        replacement = edit(target)
        if replacement is None:
            continue
        mutated = module.deep_replace(target, replacement)
        out.append(Mutant(kind, positions[target].start.line, mutated.bytes))
    return out


def _sent_and_read(source: bytes) -> set[str]:
    tree = ast.parse(source)
    read, sent = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            owner = node.value.value if isinstance(node.value, ast.Attribute) and node.value.attr == "tensors" else node.value
            if isinstance(owner, ast.Name) and owner.id == "intermediate_tensors":
                read.add(node.slice.value)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "IntermediateTensors":
            for arg in node.args[:1]:
                if isinstance(arg, ast.Dict):
                    sent.update(k.value for k in arg.keys if isinstance(k, ast.Constant))
    return read & sent


def drop_last_key(source: bytes, registered: set[str]) -> list[Mutant]:
    both = _sent_and_read(source)

    def edit(node: cst.List) -> cst.List | None:
        elements = list(node.elements)
        if len(elements) < 2 or elements[-1].value.evaluated_value not in both:
            return None
        last, prev = elements[-1], elements[-2]
        comma = last.comma
        if isinstance(comma, cst.Comma) and isinstance(prev.comma, cst.Comma):
            old, new = prev.comma.whitespace_after, comma.whitespace_after
            if isinstance(old, cst.ParenthesizedWhitespace) and isinstance(new, cst.ParenthesizedWhitespace):
                comma = comma.with_changes(whitespace_after=new.with_changes(first_line=old.first_line))
        return node.with_changes(elements=elements[:-2] + [prev.with_changes(comma=comma)])

    return _edit_list(source, edit, "drop_last_key")


def add_unsent_key(source: bytes, registered: set[str]) -> list[Mutant]:
    def edit(node: cst.List) -> cst.List | None:
        elements = list(node.elements)
        last = elements[-1]
        opener = node.lbracket.whitespace_after
        if isinstance(opener, cst.ParenthesizedWhitespace):
            between = cst.Comma(whitespace_after=opener.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=()))
        else:
            between = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        quote = last.value.quote
        added = cst.Element(cst.SimpleString(f"{quote}{UNSENT}{quote}"), comma=last.comma)
        return node.with_changes(elements=elements[:-1] + [last.with_changes(comma=between), added])

    return _edit_list(source, edit, "add_unsent_key")


def drop_none_default(source: bytes, registered: set[str]) -> list[Mutant]:
    module = cst.parse_module(source)
    wrapper = cst.MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    out = []
    for cls in module.body:
        if not (isinstance(cls, cst.ClassDef) and cls.name.value in registered):
            continue
        for fn in cls.body.body:
            if not (isinstance(fn, cst.FunctionDef) and fn.name.value == "forward"):
                continue
            params = fn.params
            positional = [*params.posonly_params, *params.params]
            target = next((p for p in [*positional, *params.kwonly_params] if p.name.value == "intermediate_tensors"), None)
            if target is None or not (isinstance(target.default, cst.Name) and target.default.value == "None"):
                continue
            if target in positional and any(p.default for p in positional[: positional.index(target)]):
                continue  # without its default it would follow a defaulted parameter: not valid Python
            bare = target.with_changes(default=None, equal=cst.MaybeSentinel.DEFAULT)
            out.append(Mutant("drop_none_default", positions[target].start.line, module.deep_replace(target, bare).bytes))
    return out


def delete_delegation(source: bytes, registered: set[str]) -> list[Mutant]:
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    out = []
    for cls in tree.body:
        if not (isinstance(cls, ast.ClassDef) and cls.name in registered):
            continue
        for fn in cls.body:
            if not (isinstance(fn, ast.FunctionDef) and fn.name == "__init__"):
                continue
            for stmt in fn.body:
                if _is_delegation(stmt):
                    kept = lines[: stmt.lineno - 1] + lines[stmt.end_lineno :]
                    out.append(Mutant("delete_delegation", stmt.lineno, b"".join(kept)))
    return out


def _is_delegation(stmt: ast.stmt) -> bool:
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return False
    target, value = stmt.targets[0], stmt.value
    return (
        isinstance(target, ast.Attribute) and target.attr == ATTR
        and isinstance(target.value, ast.Name) and target.value.id == "self"
        and isinstance(value, ast.Attribute) and value.attr == ATTR
    )


KINDS: dict[str, Callable[[bytes, set[str]], list[Mutant]]] = {
    "drop_last_key": drop_last_key,
    "drop_none_default": drop_none_default,
    "add_unsent_key": add_unsent_key,
    "delete_delegation": delete_delegation,
}
