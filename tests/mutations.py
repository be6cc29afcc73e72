"""Inject one known contract violation into a real model file, independently of contractfix's rules.

Each kind yields one mutant per site it applies to (a `Mutant` holds the whole mutated source):
- `drop_last_key`: drop the last key of a factory's literal list when the file both reads it
  (`intermediate_tensors["k"]`) and sends it (`IntermediateTensors({"k": ...})`);
- `drop_none_default`: drop `= None` from `intermediate_tensors` in a registered class's own forward;
- `add_unsent_key`: append a key nobody sends or reads to a factory's literal list whose keys the
  file all sends;
- `delete_delegation`: delete `self.make_empty_intermediate_tensors = <x>.make_empty_intermediate_tensors`
  from the `__init__` of a registered class that declares `SupportsPP` (see `declares_pp`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace

import libcst as cst

FACTORY = "make_empty_intermediate_tensors_factory"
ATTR = "make_empty_intermediate_tensors"
UNSENT = "contractfix_unsent"


@dataclass(frozen=True)
class Mutant:
    kind: str
    line: int
    source: bytes
    cls: str = ""  # the registered class mutated (drop_none_default, delete_delegation)


def mutants(kind: str, source: bytes, registered: set[str]) -> list[Mutant]:
    """Every mutant of `kind` for one file; `registered` names its registered classes."""
    needs_registered = kind in ("drop_none_default", "delete_delegation")
    if FACTORY.encode() not in source and not needs_registered or needs_registered and not registered:
        return []
    return KINDS[kind](source, registered)


def _key_lists(tree: ast.Module) -> list[ast.List]:
    """Literal string lists passed as the keys of the factory, in source order."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == FACTORY):
            continue
        keyword = next((k.value for k in node.keywords if k.arg in ("keys", "tensor_names")), None)
        value = node.args[0] if node.args else keyword
        if isinstance(value, ast.List) and value.elts and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
        ):
            found.append(value)
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _span(source: bytes, node: ast.AST, end: ast.AST | None = None) -> tuple[int, int]:
    """Byte offsets of `node` (through `end`): ast columns are UTF-8 byte offsets."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    end = end or node
    return starts[node.lineno - 1] + node.col_offset, starts[end.end_lineno - 1] + end.end_col_offset


def _edit_list(source: bytes, edit: Callable[[cst.List], cst.List | None], kind: str) -> list[Mutant]:
    """Apply `edit` to each factory key list alone (parsed from its own text) and splice it back."""
    out = []
    for node in _key_lists(ast.parse(source)):
        start, stop = _span(source, node)
        replacement = edit(cst.parse_expression(source[start:stop].decode()))
        if replacement is not None:
            text = cst.Module([]).code_for_node(replacement).encode()
            out.append(Mutant(kind, node.lineno, source[:start] + text + source[stop:]))
    return out


def _read_and_sent(source: bytes) -> tuple[set[str], set[str]]:
    """Keys the file reads from `intermediate_tensors` and sends in `IntermediateTensors({...})`."""
    read, sent = set(), set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            owner = node.value.value if isinstance(node.value, ast.Attribute) and node.value.attr == "tensors" else node.value
            if isinstance(owner, ast.Name) and owner.id == "intermediate_tensors":
                read.add(node.slice.value)
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "IntermediateTensors":
            for arg in node.args[:1]:
                if isinstance(arg, ast.Dict):
                    sent.update(k.value for k in arg.keys if isinstance(k, ast.Constant))
    return read, sent


def drop_last_key(source: bytes, registered: set[str]) -> list[Mutant]:
    read, sent = _read_and_sent(source)
    both = read & sent

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
    _, sent = _read_and_sent(source)

    def edit(node: cst.List) -> cst.List | None:
        elements = list(node.elements)
        if not {e.value.evaluated_value for e in elements} <= sent:
            return None  # the file does not send what this factory allocates: "unsent" is moot
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
    out = []
    for cls in ast.parse(source).body:
        if not (isinstance(cls, ast.ClassDef) and cls.name in registered):
            continue
        for fn in cls.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                out += [replace(m, cls=cls.name) for m in _without_default(source, fn.args)]
    return out


def _without_default(source: bytes, args: ast.arguments) -> list[Mutant]:
    """`intermediate_tensors: X = None` -> `intermediate_tensors: X` (the text between the end of
    the parameter and the end of its default removed), when that stays valid Python."""
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults, strict=False)) + list(zip(args.kwonlyargs, args.kw_defaults, strict=False))
    for index, (arg, default) in enumerate(pairs):
        if arg.arg != "intermediate_tensors" or not (isinstance(default, ast.Constant) and default.value is None):
            continue
        if index < len(positional) and any(d is not None for d in defaults[:index]):
            return []  # it would follow a parameter with a default: not valid Python
        _, start = _span(source, arg)
        _, stop = _span(source, default)
        return [Mutant("drop_none_default", arg.lineno, source[:start] + source[stop:])]
    return []


def declares_pp(sources: list[bytes]) -> set[str]:
    """Names of the classes with `SupportsPP` among their bases, followed by name across
    `sources` (a wrapper without it only loses PP when its delegation goes: no violation)."""
    bases: dict[str, set[str]] = {}
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                names = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
                bases.setdefault(node.name, set()).update(names)
    found = {"SupportsPP"}
    while True:
        more = {name for name, parents in bases.items() if parents & found} - found
        if not more:
            return found - {"SupportsPP"}
        found |= more


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
                if is_delegation(stmt):
                    start, end = stmt.lineno - 1, stmt.end_lineno
                    if start and not lines[start - 1].strip() and (end == len(lines) or not lines[end].strip()):
                        start -= 1  # it stood alone between blank lines: keep one, as a formatter would
                    kept = lines[:start] + lines[end:]
                    out.append(Mutant("delete_delegation", stmt.lineno, b"".join(kept), cls.name))
    return out


def is_delegation(stmt: ast.stmt) -> bool:
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
