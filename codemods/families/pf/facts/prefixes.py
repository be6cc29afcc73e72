"""How a class names the layers it builds: every construction handed a `quant_config`, the
`prefix` it is given, whether each method can pass one on, and the f-string prefixes that start
with a dot when `prefix` is empty. Plain facts from one class's AST (PF001-PF004)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ....walk import walk

PREFIX = "prefix"
QUANT = "quant_config"
QUANT_GIVEN = "quant_config="
"""In a class's text: it hands a `quant_config` on by name (or defaults its own)."""
NAMED = (QUANT, PREFIX)
"""The words of a statement a prefix fact can be read from."""


@dataclass(frozen=True)
class Build:
    """A call handed `quant_config=<quant>` (not the literal None) in method `method`."""

    ctor: str
    """The callee as a dotted name ("" when it is not a plain name or attribute chain)."""
    attr: str
    """`self.<attr>` the call is assigned to, "" otherwise."""
    method: str
    line: int
    column: int
    quant: str
    prefix: str | None
    """Source of the `prefix=` argument; None when the call has none."""
    positional: int
    spread: bool
    """The call spreads `*args` or `**kwargs` (which may carry a prefix)."""


@dataclass(frozen=True)
class Dotted:
    """An f-string `f"{prefix}.<tail>"` handed to a call (`prefix=` or by place) in `method`."""

    method: str
    line: int
    column: int
    text: str
    tail: str
    """What follows `{prefix}.` when it is plain text ("" when it holds placeholders)."""
    head: str
    """The first dotted part after `{prefix}.` when it is plain text, else ""."""
    ctor: str
    attr: str
    keyword: bool


@dataclass(frozen=True)
class PrefixFacts:
    builds: tuple[Build, ...] = ()
    dotted: tuple[Dotted, ...] = ()
    scopes: tuple[str, ...] = ()
    """Methods that take a `prefix` parameter."""
    init: str = ""
    """How `__init__` takes a prefix: "param", "kwargs" (only through `**kwargs`), "none", or ""
    when the class defines no `__init__`."""
    takes_quant: bool = False
    """`__init__` takes a `quant_config` parameter."""
    passes: tuple[str, ...] = ()
    """Callees handed `prefix` itself, unchanged ("super" for a base's `__init__`): they get the
    class's own prefix, empty when the class is the top level."""
    maybe: int = 0
    """`prefix=maybe_prefix(prefix, ...)` arguments in the class: the file's idiom, with `fstring`
    (`f"{prefix}.<name>"` arguments, by name or by place)."""
    fstring: int = 0
    by_place: tuple[Build, ...] = ()
    """Calls handed `quant_config` by place (`quant` is that argument): the calls PF003's fix
    passes a prefix at, with those of `builds`."""
    stored: str = ""
    """`self.<stored>` holds the `prefix` of `__init__` (`self.prefix = prefix`), set before
    `__init__` calls a method of its own: a method without a `prefix` parameter names its layers
    by it (MiniCPM's `_init_ffn_block`); "" when none."""


DOTTED = "{prefix}."


PASSED = "prefix=prefix"


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can build a quantized layer, write a dotted prefix or
    hand its own prefix on by name."""
    return QUANT_GIVEN in text or DOTTED in text or PASSED in text


def prefix_facts(node: ast.ClassDef, lines: list[str]) -> PrefixFacts | None:
    builds: list[Build] = []
    by_place: list[Build] = []
    dotted: list[Dotted] = []
    scopes: list[str] = []
    passes: list[str] = []
    init, takes_quant, maybe, fstring, stored = "", False, 0, 0, ""
    for fn in node.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = [a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs]
        if PREFIX in names:
            scopes.append(fn.name)
        if fn.name == "__init__":
            init = "param" if PREFIX in names else "kwargs" if fn.args.kwarg else "none"
            takes_quant = QUANT in names
            stored = _stored(fn) if PREFIX in names else ""
        body = fn.body if names_any(fn, lines, NAMED) else []  # most methods name neither: one test spares a test a statement
        nodes = [n for stmt in body if names_any(stmt, lines, NAMED) for n in walk(stmt)]
        assigned = _assigned(nodes)
        rebound = _rebound(fn, nodes)
        for call in nodes:
            if type(call) is not ast.Call or not _may_matter(call):
                continue
            own = id(call) not in rebound
            ctor = ".".join(_dotted(call.func) or ())
            if _is_super_init(call.func):
                ctor = "super"
            attr = assigned.get(id(call), "")
            keywords = {k.arg: k.value for k in call.keywords}
            given = keywords.get(PREFIX)
            maybe += _is_maybe(given)
            if own and fn.name == "__init__" and ctor and any(_is_prefix(a) for a in [given, *call.args]):
                passes.append(ctor)
            quant, found = keywords.get(QUANT), builds
            if quant is None:
                quant, found = next((a for a in call.args if _is_quant(a)), None), by_place
            if quant is not None and not (isinstance(quant, ast.Constant) and quant.value is None):
                found.append(Build(
                    ctor, attr, fn.name, call.lineno, call.col_offset, source_text(quant, lines),
                    None if given is None else source_text(given, lines), len(call.args),
                    None in keywords or any(isinstance(a, ast.Starred) for a in call.args),
                ))
            for arg, keyword in [(given, True), *((a, False) for a in call.args)]:
                tail = dot_tail(arg)
                fstring += tail is not None
                if arg is not None and tail is not None and PREFIX in names and own:
                    dotted.append(Dotted(fn.name, arg.lineno, arg.col_offset, source_text(arg, lines), *tail, ctor, attr, keyword))
    if not (builds or by_place or dotted or init == "param"):
        return None
    return PrefixFacts(
        tuple(builds), tuple(dotted), tuple(scopes), init, takes_quant, tuple(dict.fromkeys(passes)), maybe, fstring,
        tuple(by_place), stored,
    )


def _stored(init: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The attribute a top-level `self.<attr> = prefix` of `__init__` sets before any statement
    that calls a method of the instance (which could read it first); "" when there is none."""
    for stmt in init.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name)
                and stmt.value.id == PREFIX and _is_self_attr(stmt.targets[0])):
            return stmt.targets[0].attr  # type: ignore[attr-defined]
        if any(isinstance(n, ast.Call) and _is_self_attr(n.func) for n in walk(stmt)):
            return ""
    return ""


def _is_self_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _may_matter(call: ast.Call) -> bool:
    """Whether a call hands a prefix or a quant_config, by name or by place, or an f-string by
    place: the only calls read here (most calls of a method that names either hand neither)."""
    return any(k.arg == PREFIX or k.arg == QUANT for k in call.keywords) or any(
        type(a) is ast.JoinedStr or _is_prefix(a) or _is_quant(a) for a in call.args
    )


def names_any(stmt: ast.stmt, lines: list[str], words: tuple[str, ...]) -> bool:
    """Whether a statement's (or a method's) text holds one of `words` (a text test that spares
    its walk)."""
    return any(word in line for line in lines[stmt.lineno - 1 : stmt.end_lineno] for word in words)


def _assigned(nodes: list[ast.AST]) -> dict[int, str]:
    """id(call) -> attr for each `self.<attr> = <call>` among a method's nodes."""
    found = {}
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Call):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if _is_self_attr(target):
                    found[id(node.value)] = target.attr  # type: ignore[attr-defined]
    return found


def source_text(node: ast.expr, lines: list[str]) -> str:
    """The expression as written when it sits on one line, else as `ast` writes it."""
    if node.lineno == node.end_lineno and node.end_col_offset is not None:
        return lines[node.lineno - 1].encode()[node.col_offset : node.end_col_offset].decode()
    return ast.unparse(node)


def _rebound(fn: ast.AST, nodes: list[ast.AST]) -> set[int]:
    """ids of the calls inside a lambda or nested function that takes its own `prefix`
    (`make_layers(n, lambda prefix: Layer(prefix=prefix))`): theirs is not the method's."""
    inner: set[int] = set()
    for node in nodes:
        if node is not fn and isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            if PREFIX in [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]:
                inner.update(id(n) for n in walk(node) if isinstance(n, ast.Call))
    return inner


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _is_super_init(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute) and node.attr == "__init__" and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name) and node.value.func.id == "super"
    )


def _is_prefix(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Name) and node.id == PREFIX


def _is_quant(node: ast.AST) -> bool:
    """`quant_config`, or `<...>.quant_config` (`vllm_config.quant_config`, `self.quant_config`)."""
    return isinstance(node, ast.Name) and node.id == QUANT or isinstance(node, ast.Attribute) and node.attr == QUANT


def _is_maybe(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "maybe_prefix"
        and bool(node.args) and isinstance(node.args[0], ast.Name) and node.args[0].id == PREFIX
    )


def dot_tail(node: ast.AST | None) -> tuple[str, str] | None:
    """For `f"{prefix}.rest"`: (rest when plain text, else ""; its first dotted part when plain
    text, else ""); None for anything else."""
    if not isinstance(node, ast.JoinedStr) or len(node.values) < 2:
        return None
    head, dot = node.values[0], node.values[1]
    if not (isinstance(head, ast.FormattedValue) and isinstance(head.value, ast.Name) and head.value.id == PREFIX
            and head.conversion == -1 and head.format_spec is None):
        return None
    if not (isinstance(dot, ast.Constant) and isinstance(dot.value, str) and dot.value.startswith(".")):
        return None
    rest = dot.value[1:]
    plain = len(node.values) == 2
    first, sep, _ = rest.partition(".")
    return (rest if plain else "", first if plain or sep else "")
