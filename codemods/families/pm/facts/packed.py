"""What a class says about its packed modules (PM): the `packed_modules_mapping` its body
assigns, written as it is; what its methods add to it at run time; and the
`(param_name, shard_name, shard_id)` triples its loaders stack: a `stacked_params_mapping` of a
method (every release), or a `WeightsMapper(orig_to_new_stacked={shard_name: (param_name,
shard_id)})` (from 0.31, most models).

Plain data from one class's AST, picklable for the facts cache.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TypeGuard

from ....walk import children, dotted_name, walk, walk_all

MAPPING = "packed_modules_mapping"
STACKED = "stacked_params_mapping"
MAPPER = "orig_to_new_stacked"
LORA_MODULES = "supported_lora_modules"
WORDS = (MAPPING, STACKED, MAPPER)
DELEGATES = ("AutoWeightsLoader", ".load_weights(")
"""What a `load_weights` that hands weights on to its submodules' loaders names."""


@dataclass(frozen=True)
class Entry:
    """`"<key>": [<shards>]` of a mapping; `shards` is None when the value is not a list or
    tuple of strings. `line` and `column` place the value."""

    key: str
    shards: tuple[str, ...] | None
    line: int
    column: int


@dataclass(frozen=True)
class Mapping:
    """A class-body `packed_modules_mapping = ...` (at `line`, `column`, the dict literal's place,
    else the value's). `bases` are the classes whose mappings it merges first, its own `entries`
    then overriding theirs: `Base.packed_modules_mapping`, `Base.packed_modules_mapping | {...}`,
    `{**Base.packed_modules_mapping, ...}`. `complete` is False when some key is not a string or
    some part is neither a dict literal nor a class's mapping (then it says nothing of its
    entries, yet still hides its bases' mappings). `layout` holds the dict literal's keys as
    written (None for a `**` element); `literal` is False when there is no dict literal to edit."""

    line: int
    column: int
    entries: tuple[Entry, ...]
    complete: bool
    bases: tuple[str, ...] = ()
    layout: tuple[str | None, ...] = ()
    literal: bool = True

    def get(self, key: str) -> Entry | None:
        return next((e for e in self.entries if e.key == key), None)


@dataclass(frozen=True)
class Stack:
    """One `(param_name, shard_name, shard_id)` a loader stacks, names without their leading
    dots (`".qkv_proj"`); `shard_id` is an int, a string, or a tuple of ints (a shard that spans
    several slices of the fused output, Qwen3.5's `("in_proj_qkvz", "in_proj_qkv", (0, 1, 2))`);
    None when it is none of these."""

    param: str
    shard: str
    shard_id: int | str | tuple[int, ...] | None
    line: int


@dataclass(frozen=True)
class PackedFacts:
    mapping: Mapping | None = None
    runtime: tuple[str, ...] = ()
    """Keys a method sets on `self.packed_modules_mapping[...]` (a mapping extended at run time;
    `cls.` in `__new__` too)."""
    runtime_unknown: bool = False
    """A method reassigns, updates or pops `self.packed_modules_mapping`: what it holds then is not known."""
    stacks: tuple[Stack, ...] = ()
    stacks_opaque: bool = False
    """Some element of a `stacked_params_mapping` is not a literal triple."""
    lora_modules: tuple[str, ...] | None = None
    """Its class-body `supported_lora_modules` (the older LoRA API, as in aphrodite 0.6.1): the only
    modules LoRA reaches; None when it has none."""
    loads_alone: bool = False
    """Its own `load_weights` loads every weight itself: it neither builds an `AutoWeightsLoader`
    nor calls another `load_weights`, so its submodules' loaders never run."""


def wanted(text: str) -> bool:
    return any(word in text for word in WORDS)


def packed_facts(node: ast.ClassDef, lines: list[str]) -> PackedFacts | None:
    mapping = next((_mapping(s.value) for s in node.body if _assigns(s, MAPPING) and s.value is not None), None)
    lora = next((_strings(s.value) for s in node.body if _assigns(s, LORA_MODULES) and s.value is not None), None)
    runtime: list[str] = []
    unknown = False
    stacks: list[Stack] = []
    opaque = False
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found, odd = _mapper(item)
            stacks.extend(found)
            opaque = opaque or odd
            continue
        if not wanted("\n".join(lines[item.lineno - 1 : item.end_lineno])):
            continue  # a method without the words changes neither (most of a model's)
        lists = _Lists(item)
        for sub in walk_all([part for part in children(item) if _has_words(part, lines)]):
            key, changed = _runtime_change(sub)
            if key:
                runtime.append(key)
            unknown = unknown or changed
            found, odd = _mapper(sub) if isinstance(sub, ast.Call) and not _extends(sub) else _stacked(sub, lists)
            stacks.extend(found)
            opaque = opaque or odd
    alone = any(
        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "load_weights"
        and not any(word in line for line in lines[item.lineno - 1 : item.end_lineno] for word in DELEGATES)
        for item in node.body
    )
    if mapping is None and not runtime and not unknown and not stacks and not opaque and not alone:
        return None
    return PackedFacts(mapping, tuple(runtime), unknown, tuple(stacks), opaque, lora, alone)


def _has_words(node: ast.AST, lines: list[str]) -> bool:
    """Whether a part of a method (a statement, its arguments) can change the mapping or stack
    params: its text names one of `WORDS` (a part with no place, `arguments`, is kept)."""
    start = getattr(node, "lineno", None)
    return start is None or wanted("\n".join(lines[start - 1 : node.end_lineno]))  # type: ignore[attr-defined]


def _assigns(stmt: ast.stmt, name: str) -> TypeGuard[ast.Assign | ast.AnnAssign]:
    if isinstance(stmt, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets)
    return isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name


def _mapping(value: ast.expr) -> Mapping:
    parts = _operands(value)
    bases: list[str] = []
    entries: dict[str, Entry] = {}
    complete = True
    literal: ast.Dict | None = None
    for part in parts:
        if isinstance(part, ast.Dict):
            literal = part
            for key, item in zip(part.keys, part.values, strict=True):
                base = _base_mapping(item) if key is None else None
                if base:
                    bases.append(base)
                elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                    entries.pop(key.value, None)
                    entries[key.value] = Entry(key.value, _strings(item), item.lineno, item.col_offset)
                else:
                    complete = False
        elif base := _base_mapping(part):
            if entries or literal is not None:
                complete = False  # a base merged over entries: which wins is not written down here
            bases.append(base)
        else:
            complete = False
    place = literal or value
    layout = tuple(
        k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in literal.keys
    ) if literal is not None else ()
    return Mapping(place.lineno, place.col_offset, tuple(entries.values()), complete, tuple(bases), layout,
                   literal is not None)


def _operands(value: ast.expr) -> list[ast.expr]:
    """The dicts merged by `|`, left to right (one operand when there is no `|`)."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr):
        return _operands(value.left) + _operands(value.right)
    return [value]


def _base_mapping(node: ast.expr) -> str:
    """`Base` of `Base.packed_modules_mapping` (dotted), else ""."""
    parts = dotted_name(node.value) if isinstance(node, ast.Attribute) and node.attr == MAPPING else None
    return ".".join(parts) if parts and parts[0] not in ("self", "cls") else ""


def _strings(node: ast.expr) -> tuple[str, ...] | None:
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    found = tuple(e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return found if len(found) == len(node.elts) else None


def _is_self_mapping(node: ast.expr) -> bool:
    """`self.packed_modules_mapping`, or `cls.packed_modules_mapping` (in `__new__`)."""
    return (isinstance(node, ast.Attribute) and node.attr == MAPPING
            and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))


def _runtime_change(node: ast.AST) -> tuple[str, bool]:
    """(the key set, whether the mapping changes in a way not known) by one node of a method."""
    targets = node.targets if isinstance(node, ast.Assign) else (
        [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
    )
    for target in targets:
        if _is_self_mapping(target):
            return "", True
        if isinstance(target, ast.Subscript) and _is_self_mapping(target.value):
            key = target.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return key.value, False
            return "", True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_self_mapping(node.func.value):
        return "", node.func.attr not in ("get", "items", "keys", "values", "copy")
    return "", False


def _stacked(node: ast.AST, lists: _Lists) -> tuple[list[Stack], bool]:
    """The triples a statement adds to a `stacked_params_mapping` (assigned, `+=`, `.extend`,
    `.append`; a list or tuple written there or in a local the method binds once to one), and
    whether some element is not a literal triple."""
    elements: list[ast.expr] = []
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if not any(isinstance(t, ast.Name) and t.id == STACKED for t in targets):
            return [], False
        written = lists.literal(node.value)
        if written is None:
            return [], True
        elements = written
    elif _extends(node) and isinstance(node.func, ast.Attribute):
        method = node.func.attr
        written = lists.literal(node.args[0]) if method == "extend" and len(node.args) == 1 else None
        if method == "append" and len(node.args) == 1:
            elements = [node.args[0]]
        elif written is not None:
            elements = written
        else:
            return [], method not in ("copy", "index", "count")
    found = []
    opaque = False
    for element in elements:
        stack = _triple(element)
        if stack is None:
            opaque = True
        else:
            found.append(stack)
    return found, opaque


def _extends(node: ast.AST) -> TypeGuard[ast.Call]:
    """A method call on the `stacked_params_mapping` local (`.extend(...)`, `.append(...)`)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == STACKED)


class _Lists:
    """The locals of a method that hold a list or tuple as written: each bound once, by a plain
    assignment, and read only where a `stacked_params_mapping` takes its elements (DeepSeek-V2's
    `stacked_params_mapping.extend(indexer_fused_mapping)`). Found on the first ask."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.fn = fn
        self.found: dict[str, list[ast.expr]] | None = None

    def literal(self, value: ast.expr) -> list[ast.expr] | None:
        """The elements `value` holds: a list or tuple written there, or a local holding one."""
        if isinstance(value, (ast.List, ast.Tuple)):
            return list(value.elts)
        if not isinstance(value, ast.Name):
            return None
        if self.found is None:
            self.found = self._find()
        return self.found.get(value.id)

    def _find(self) -> dict[str, list[ast.expr]]:
        nodes = walk(self.fn)
        taken = {id(n.args[0]) for n in nodes if _extends(n) and n.args}
        taken |= {id(n.value) for n in nodes if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
                  and n.target.id == STACKED}
        bound: dict[str, list[ast.expr] | None] = {}
        for node in nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                target = targets[0] if len(targets) == 1 else None
                if isinstance(target, ast.Name):
                    held = list(node.value.elts) if isinstance(node.value, (ast.List, ast.Tuple)) else None
                    bound[target.id] = held if target.id not in bound else None
        uses: dict[str, int] = {}
        for node in nodes:
            if isinstance(node, ast.Name) and id(node) not in taken:
                uses[node.id] = uses.get(node.id, 0) + 1  # its binding, and any other read or write
        return {name: held for name, held in bound.items() if held is not None and uses.get(name) == 1}


def _mapper(node: ast.AST) -> tuple[list[Stack], bool]:
    """The triples of each `orig_to_new_stacked={shard_name: (param_name, shard_id)}` keyword of
    the calls in `node`, and whether some item is not a literal one."""
    found: list[Stack] = []
    opaque = False
    for call in walk(node) if not isinstance(node, ast.Call) else [node]:
        if not isinstance(call, ast.Call):
            continue
        for keyword in call.keywords:
            if keyword.arg != MAPPER:
                continue
            if not isinstance(keyword.value, ast.Dict):
                opaque = True
                continue
            for key, value in zip(keyword.value.keys, keyword.value.values, strict=True):
                pair = value.elts if isinstance(value, ast.Tuple) and len(value.elts) == 2 else None
                stack = _triple(ast.Tuple([pair[0], key, pair[1]], lineno=value.lineno)) if pair and key else None
                if stack is None:
                    opaque = True
                else:
                    found.append(stack)
    return found, opaque


def _triple(node: ast.expr) -> Stack | None:
    if not (isinstance(node, ast.Tuple) and len(node.elts) == 3):
        return None
    param, shard, shard_id = node.elts
    if not (isinstance(param, ast.Constant) and isinstance(param.value, str)
            and isinstance(shard, ast.Constant) and isinstance(shard.value, str)):
        return None
    return Stack(param.value.strip("."), shard.value.strip("."), _shard_id(shard_id), node.lineno)


def _shard_id(node: ast.expr) -> int | str | tuple[int, ...] | None:
    if isinstance(node, ast.Tuple):
        ids = tuple(_shard_id(e) for e in node.elts)
        return ids if ids and all(isinstance(i, int) for i in ids) else None  # type: ignore[return-value]
    value = node.value if isinstance(node, ast.Constant) else None
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None
