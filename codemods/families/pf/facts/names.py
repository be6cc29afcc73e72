"""How a class names the modules it assigns to its attributes, and what its weights mapper renames
(PF004): each call assigned to `self.<attr>` (or built as an element of a container assigned to
it) with `prefix=f"{prefix}.<tail>"` or `prefix=maybe_prefix(prefix, "<tail>")`, and the renames
of the `hf_to_vllm_mapper` the class assigns. Plain facts from one class's AST."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ....walk import dotted_name, statements, walk
from .prefixes import PREFIX, dot_tail, names_any, source_text

MAPPER = "WeightsMapper("
MAPPER_ATTR = re.compile(r"hf_to_\w+_mapper")
"""`hf_to_vllm_mapper`, or a fork's (`hf_to_aphrodite_mapper`)."""
NAMED = (PREFIX, "_mapper")
"""The words of a statement a name fact can be read from: a `prefix=` argument, an `hf_to_*_mapper`."""
MAYBE = "maybe_prefix(prefix,"
CONFIG = "_config"
CONTAINERS = frozenset({"ModuleList", "Sequential", "ModuleDict"})
"""Containers whose elements are named `<attr>.<key>` in the module tree."""
RENAMES = {"orig_to_new_regex": "regex", "orig_to_new_substr": "substr", "orig_to_new_prefix": "prefix",
           "orig_to_new_suffix": "suffix"}
"""The `WeightsMapper` fields `get_rename_mapper()` keeps for the quantization config (stacked
maps are dropped), by the kind `WeightsMapper` applies them as, in its order."""


@dataclass(frozen=True)
class Named:
    """A call handed `prefix=<text>` that names `<prefix>.<tail>`, built as `self.<attr>` or as an
    element of the container `self.<attr>` holds (`element`)."""

    attr: str
    ctor: str
    method: str
    line: int
    column: int
    """Where the `prefix=` argument's value starts."""
    text: str
    tail: str
    """What the value appends to `prefix` when it is plain text ("" when it holds placeholders)."""
    head: str
    """The first dotted part of what it appends when that is plain text, else ""."""
    element: bool
    configs: tuple[str, ...]
    """The configs the call hands, by name or by place (`quant_config`, `vllm_config`, a fork's
    engine config; "**" for a spread): whether what it builds can ask a quantization method for
    its method by this name."""


@dataclass(frozen=True)
class Rename:
    """One entry of a weights mapper: `kind` ("regex", "substr", "prefix", "suffix") maps `old`
    to `new` (`old` a pattern for "regex")."""

    kind: str
    old: str
    new: str


@dataclass(frozen=True)
class NameFacts:
    named: tuple[Named, ...] = ()
    takes_prefix: bool = False
    """Its `__init__` has a parameter `prefix` (not only `**kwargs`)."""
    renames: tuple[Rename, ...] = ()
    """Every literal entry of the `WeightsMapper`s the class assigns to `hf_to_vllm_mapper` (a
    fork's `hf_to_<package>_mapper`; in its body, or `self.` in a method), in the order written."""


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can name a module by a prefix tail or hold a weights mapper."""
    return "{prefix}." in text or MAYBE in text or MAPPER in text


def name_facts(node: ast.ClassDef, lines: list[str]) -> NameFacts | None:
    named: list[Named] = []
    renames: list[Rename] = []
    takes = False
    for item in node.body:
        if isinstance(item, (ast.Assign, ast.AnnAssign)) and _assigns_mapper(item):
            renames.extend(_renames(item.value))
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if item.name == "__init__":
            takes = PREFIX in [a.arg for a in item.args.posonlyargs + item.args.args + item.args.kwonlyargs]
        body = item.body if names_any(item, lines, NAMED) else []  # one test spares a test a statement in most methods
        for stmt in statements([top for top in body if names_any(top, lines, NAMED)]):
            if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or stmt.value is None:
                continue
            if _assigns_mapper(stmt):
                renames.extend(_renames(stmt.value))
            attr = _self_attr(stmt)
            if attr:
                named.extend(_named(item.name, attr, stmt.value, lines))
    if not (named or renames or takes):
        return None
    return NameFacts(tuple(named), takes, tuple(renames))


def _self_attr(stmt: ast.Assign | ast.AnnAssign) -> str:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    if len(targets) != 1:
        return ""
    target = targets[0]
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return target.attr
    return ""


def _named(method: str, attr: str, value: ast.expr, lines: list[str]) -> list[Named]:
    """The call `value` itself, or the elements of the container it builds."""
    if not isinstance(value, ast.Call):
        return []
    ctor = ".".join(dotted_name(value.func) or ())
    if ctor.rsplit(".", 1)[-1] not in CONTAINERS:
        found = _one(method, attr, value, lines, element=False)
        return [found] if found else []
    return [n for call in _elements(value) if (n := _one(method, attr, call, lines, element=True))]


def _elements(container: ast.Call) -> list[ast.Call]:
    """The calls that are a container's elements: `Sequential(a, b)`, `ModuleList([a, b])`,
    `ModuleList(a for ...)`, `ModuleDict({k: a})` and the comprehension forms."""
    found: list[ast.expr] = []
    for arg in container.args:
        if isinstance(arg, (ast.List, ast.Tuple)):
            found.extend(arg.elts)
        elif isinstance(arg, (ast.ListComp, ast.GeneratorExp)):
            found.append(arg.elt)
        elif isinstance(arg, ast.Dict):
            found.extend(arg.values)
        elif isinstance(arg, ast.DictComp):
            found.append(arg.value)
        else:
            found.append(arg)
    return [e for e in found if isinstance(e, ast.Call)]


def _one(method: str, attr: str, call: ast.Call, lines: list[str], element: bool) -> Named | None:
    given = next((k.value for k in call.keywords if k.arg == PREFIX), None)
    if given is None:
        return None
    tail = dot_tail(given) or _maybe_tail(given)
    if tail is None:
        return None
    return Named(
        attr, ".".join(dotted_name(call.func) or ()), method, given.lineno, given.col_offset, source_text(given, lines), *tail,
        element, _configs(call),
    )


def _maybe_tail(node: ast.expr) -> tuple[str, str] | None:
    """For `maybe_prefix(prefix, "<rest>")` (or an f-string second argument): as `dot_tail`."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "maybe_prefix"
            and len(node.args) == 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == PREFIX):
        return None
    name = node.args[1]
    if isinstance(name, ast.Constant) and isinstance(name.value, str):
        return name.value, name.value.partition(".")[0]
    if isinstance(name, ast.JoinedStr) and name.values and isinstance(name.values[0], ast.Constant):
        first, sep, _ = str(name.values[0].value).partition(".")
        return "", first if sep else ""
    return None


def _configs(call: ast.Call) -> tuple[str, ...]:
    found = []
    for keyword in call.keywords:
        if isinstance(keyword.value, ast.Constant) and keyword.value.value is None:
            continue
        found += ["**"] if keyword.arg is None else [keyword.arg] if keyword.arg.endswith(CONFIG) else []
        found += _config_name(keyword.value)
    for arg in call.args:
        found += ["**"] if isinstance(arg, ast.Starred) else _config_name(arg)
    return tuple(dict.fromkeys(found))


def _config_name(node: ast.expr) -> list[str]:
    """`quant_config`, `vllm_config.quant_config`, `self.quant_config`: the config's name."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return [name] if name.endswith(CONFIG) else []


def _assigns_mapper(stmt: ast.Assign | ast.AnnAssign) -> bool:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return any(
        isinstance(t, ast.Name) and MAPPER_ATTR.fullmatch(t.id) is not None
        or isinstance(t, ast.Attribute) and MAPPER_ATTR.fullmatch(t.attr) is not None
        and isinstance(t.value, ast.Name) and t.value.id == "self"
        for t in targets
    )


def _renames(value: ast.expr | None) -> list[Rename]:
    """The literal entries of every `WeightsMapper(...)` in the value (`A.hf_to_vllm_mapper |
    WeightsMapper(...)` included)."""
    found = []
    for call in walk(value) if value is not None else ():
        if not (isinstance(call, ast.Call) and (dotted_name(call.func) or [""])[-1] == "WeightsMapper"):
            continue
        for keyword in call.keywords:
            kind = RENAMES.get(keyword.arg or "")
            if kind and isinstance(keyword.value, ast.Dict):
                for key, new in zip(keyword.value.keys, keyword.value.values, strict=True):
                    old = _pattern(key) if kind == "regex" else _string(key)
                    if old is not None and (text := _string(new)) is not None:
                        found.append(Rename(kind, old, text))
    return found


def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _pattern(node: ast.expr | None) -> str | None:
    """`re.compile("<pattern>")` -> the pattern."""
    if isinstance(node, ast.Call) and (dotted_name(node.func) or [""])[-1] == "compile" and node.args:
        return _string(node.args[0])
    return _string(node)
