"""`ModuleFacts` of one source: its imports, suppression comments and top-level classes.

Only the classes a need asks for (`needs.py`) are parsed with the module's imports and `if` /
`try` blocks, found by `outline.py` without parsing; of the others only the header is parsed,
and the body when a `ClassRef` reads its facts (`complete`). Line and column numbers are those of
the whole file: the text parsed keeps every line in place, blank where it is not needed.
"""

from __future__ import annotations

import ast
import bisect
import functools
import io
import itertools
import re
import tokenize
from typing import NamedTuple, TypeGuard

from ..facts import ClassFacts, ModuleFacts
from ..walk import children
from . import lazy, needs
from .classes import ClassAnalyzer
from .outline import Statement, Unplaceable, outline

Positioned = ast.expr | ast.stmt | ast.arg | ast.keyword | ast.alias | ast.excepthandler | ast.pattern
"""The nodes with a position (3.12's `type_param` too, which the 3.10 stubs lack)."""

SUPPRESSION = re.compile(r"#\s*contractfix:\s*ignore\[([A-Za-z0-9,\s]+)\]")
LAZY = re.compile(r"(async\s+)?def\s+__getattr__\b")
"""A module-level `__getattr__` (PEP 562): parsed with the imports, for the classes it returns."""


class Earlier(NamedTuple):
    """What a rewritten text shares with the text before it, line for line at the same place:
    lines 1 to `head`, and lines `tail` to the end; and the classes the facts of that text hold
    whole, by their `class` line."""

    head: int
    tail: int
    classes: dict[int, ClassFacts]

    def holds(self, statement: Statement) -> bool:
        return statement.head in self.classes and (statement.end <= self.head or statement.start >= self.tail)


def reanalyze(source: bytes, path: str, module: str, before: bytes, earlier: ModuleFacts) -> ModuleFacts:
    """The facts of `source`, a rewrite of `before` whose facts are `earlier` (a copy this call
    may take from: a pickled one): a class the analysis would parse, or a class it parses ahead,
    that lies wholly in lines the two texts share at the same place (before the first changed
    line, or after the last where no line was added or removed) keeps the facts `earlier`
    holds for it, its text and place being the same. A fix lands in a file's last classes,
    most often without a line more (a default, a keyword, a key): this analyzes a quarter of
    the classes `analyze_source` would."""
    old, new = before.split(b"\n"), source.split(b"\n")
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = len(new)
    while len(old) == len(new) and tail > head and old[tail - 1] == new[tail - 1]:
        tail -= 1
    whole = {cls.line: cls for name, cls in earlier.classes.items() if name not in earlier.pending}
    return analyze_source(source, path, module, earlier=Earlier(head, tail + 1, whole))


def analyze_source(source: bytes, path: str, module: str, headers_only: bool = False,
                   earlier: Earlier | None = None) -> ModuleFacts:
    """Parse `source` and return its facts. Raises SyntaxError / ValueError on bad input (a
    syntax error in a part no need asks for may go unseen). `headers_only` leaves every class
    body pending: for a module read only to resolve names, whose classes are read through a
    `ClassRef` (never as a target's). `earlier`: see `reanalyze`."""
    text = source.decode("utf-8", errors="replace")
    facts = ModuleFacts(
        path=path,
        module=module,
        uses_pipe_optional="| None" in text,
        uses_typing_optional="Optional[" in text,
        future_annotations="from __future__ import annotations" in text,
        suppressions=_suppressions(text),
        source=source,
    )
    lines = _lines(text)
    try:
        _partial(facts, text, lines, headers_only, earlier)
    except (Unplaceable, SyntaxError, ValueError):
        facts.imports.clear()
        facts.lazy.clear()
        facts.classes.clear()
        facts.pending.clear()
        tree = ast.parse(source, filename=path)
        _char_columns(tree, source)
        _read(facts, tree, lines, {})
    return facts


def complete(module: ModuleFacts, name: str) -> ClassFacts:
    """Parse the body of a pending class and fill its entry of `module.classes` in place (so
    every holder of the header-only entry sees the whole)."""
    if not module.source:
        raise RuntimeError(f"{module.path}: the source of pending class {name} is not known")
    start, end, _, _ = module.pending.pop(name)
    rows, lines = _split(module.source)
    try:
        text = "\n".join(rows[start - 1 : end])
        if start - 1 > BLANKS_PER_LINE * (end - start + 1):  # far down a long file: moved, not padded
            tree = ast.increment_lineno(ast.parse(text, filename=module.path), start - 1)
        else:
            tree = ast.parse("\n" * (start - 1) + text, filename=module.path)
        node = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name][-1]
    except (SyntaxError, ValueError, IndexError):
        tree = ast.parse(module.source, filename=module.path)
        node = [n for n in _module_statements(tree.body) if isinstance(n, ast.ClassDef) and n.name == name][-1]
    _char_columns(tree, module.source)
    entry = module.classes[name]
    entry.__dict__.update(ClassAnalyzer(node, lines).run().__dict__)
    return entry


BLANKS_PER_LINE = 100
"""A blank line costs the tokenizer about a hundredth of what moving one parsed line's nodes to
their place costs (`ast.increment_lineno`): a class is parsed behind blank lines up to its line
unless they are a hundred times its own (completing every class of a 20,000-line file behind
blank lines grew with the square of its length)."""


def fill(module: ModuleFacts, name: str, facts: ClassFacts) -> None:
    """Make pending class `name` whole with `facts`, in place: every holder of its header-only
    entry sees the whole."""
    del module.pending[name]
    module.classes[name].__dict__.update(facts.__dict__)


def _line_starts(source: bytes) -> list[int]:
    """The offset of each line's first byte (index 0: line 1), lines ended by `\\n` (a module
    with other line ends has no pending class: `outline` refuses it)."""
    return list(itertools.accumulate(map((1).__add__, map(len, source.split(b"\n"))), initial=0))


@functools.lru_cache(maxsize=2)
def _split(source: bytes) -> tuple[list[str], list[str]]:
    """The rows (`_decoded`) and the lines ast numbers, of a module whose classes are completed
    one by one (bytes hash once, so the lookup is cheap)."""
    text = source.decode("utf-8", errors="replace")
    return _decoded(source, text).split("\n"), _lines(text)


def _lines(text: str) -> list[str]:
    """The lines as ast numbers them: ended by `\\r\\n`, `\\r` or `\\n` (not `str.splitlines`,
    which also ends one at a form feed)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _decoded(source: bytes, text: str = "") -> str:
    """The source in its declared encoding; its rows are its lines as Python numbers them
    (`outline` refuses other line ends). `text`, the source decoded as UTF-8 with errors
    replaced, is that already when UTF-8 is declared and nothing was replaced."""
    encoding = tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    if text and encoding == "utf-8" and "\ufffd" not in text:
        return text
    return source.decode(encoding)


def _keep(rows: list[str], spans: list[tuple[int, int]], stubs: tuple[Statement, ...] = ()) -> str:
    """The source with only the lines of `spans` (1-based, inclusive) and the headers of
    `stubs` (whose body becomes `pass`): every other line is blank, so nothing moves."""
    kept = [""] * len(rows)
    for start, end in spans:
        kept[start - 1 : end] = rows[start - 1 : end]
    for stub in stubs:
        kept[stub.head - 1 : stub.colon] = rows[stub.head - 1 : stub.colon]
        if not stub.inline:
            if stub.colon >= stub.end:
                raise Unplaceable("class without a body")
            kept[stub.colon] = " pass"
    return "\n".join(kept)


def _partial(facts: ModuleFacts, text: str, lines: list[str], headers_only: bool, earlier: Earlier | None = None
             ) -> None:
    """Imports, `if` / `try` blocks and needed classes parsed; other classes only by header,
    except those with a base imported from a needed package or defined in this module (a
    subclass inherits what its base's facts say), and those a parsed class of this module
    builds as a submodule or as the layers whose output it sends (whose `forward` PP012 reads):
    a `ClassRef` would parse them anyway, later and in the one main process. A class `earlier`
    holds, in the lines it shares, is read by its header alone and then takes those facts."""
    decoded = _decoded(facts.source, text)
    rows = lines if decoded is text and "\r" not in text else decoded.split("\n")  # one split where both agree
    statements = outline(decoded)
    markers = needs.markers()
    spans, stubs, kept = [], {}, []
    for statement in statements:
        span = (statement.start, statement.end)
        if statement.kind in ("import", "compound") or statement.kind == "def" and LAZY.match(rows[statement.head - 1]):
            spans.append(span)
        elif statement.kind == "class":
            block = "" if headers_only else "\n".join(rows[statement.start - 1 : statement.end])
            if not any(m in block for m in markers):
                stubs[statement.head] = statement
            elif earlier and earlier.holds(statement):
                stubs[statement.head] = statement
                kept.append(statement)
            else:
                spans.append(span)
    tree = ast.parse(_keep(rows, spans, tuple(stubs.values())), filename=facts.path)
    _char_columns(tree, facts.source)
    _read(facts, tree, lines, stubs)
    for statement in kept:
        _taken(facts, statement, earlier)
    if headers_only:
        return
    packages = needs.base_packages()
    _parse_pending(facts, rows, lines, stubs, {
        name for name, _ in _pending_stubs(facts, stubs)
        if any(_imported_from(facts, base, packages) or base in facts.classes for base in facts.classes[name].bases)
    }, earlier)
    for _ in range(BUILT_DEPTH):
        parsed = [cls for name, cls in facts.classes.items() if name not in facts.pending]
        built = {
            sub.ctor for cls in parsed for subs in cls.submodules.values() for sub in subs if sub.ctor in facts.pending
        } | {
            ctor for cls in parsed if cls.values for send in cls.values.sends if send.origin.kind == "layer"
            for attr, ctor, _ in cls.values.layer_ctors if attr == send.origin.attr and ctor in facts.pending
        }
        if not built:
            break
        _parse_pending(facts, rows, lines, stubs, built, earlier)


BUILT_DEPTH = 1
"""Levels of submodules parsed ahead in the worker: one (a model's decoder layer) takes most of
the completions off the main process; each further level costs memory for fewer."""


def _taken(facts: ModuleFacts, statement: Statement, earlier: Earlier | None) -> bool:
    """Whether pending class `statement` took the facts `earlier` holds for it (see `reanalyze`)."""
    taken = earlier.classes[statement.head] if earlier and earlier.holds(statement) else None
    if taken is None or facts.pending.get(taken.name, ())[:2] != (statement.start, statement.end):
        return False
    fill(facts, taken.name, taken)
    return True


def _parse_pending(facts: ModuleFacts, rows: list[str], lines: list[str], stubs: dict[int, Statement],
                   names: set[str], earlier: Earlier | None = None) -> None:
    """Parse the pending classes `names` of this module, in one parse (those `earlier` holds
    take its facts instead)."""
    pending = [stub for name, stub in _pending_stubs(facts, stubs) if name in names]
    chosen = [stub for stub in pending if not _taken(facts, stub, earlier)]
    if not chosen:
        return
    tree = ast.parse(_keep(rows, [(stub.start, stub.end) for stub in chosen]), filename=facts.path)
    _char_columns(tree, facts.source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and facts.pending.get(node.name, ())[:2] == (
            stubs[node.lineno].start, stubs[node.lineno].end
        ):
            fill(facts, node.name, ClassAnalyzer(node, lines).run())


def _read(facts: ModuleFacts, tree: ast.Module, lines: list[str], stubs: dict[int, Statement]) -> None:
    """Imports and classes, in order (a later class of the same name replaces an earlier one)."""
    starts = _line_starts(facts.source) if stubs else []
    getattrs = []
    for node in _module_statements(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _record_import(facts, node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__":
            getattrs.append(node)
        elif isinstance(node, ast.ClassDef):
            stub = stubs.get(node.lineno)
            analyzer = ClassAnalyzer(node, lines)
            facts.classes[node.name] = analyzer.facts if stub else analyzer.run()
            if stub:
                facts.pending[node.name] = (stub.start, stub.end, starts[stub.start - 1], starts[stub.end])
            else:
                facts.pending.pop(node.name, None)
    for fn in getattrs[-1:]:  # the last definition is the one the module keeps
        facts.lazy = lazy.exports(fn, lazy.module_bindings(facts.imports), functools.partial(_absolute, facts))


def _pending_stubs(facts: ModuleFacts, stubs: dict[int, Statement]):
    for stub in stubs.values():
        for name, block in facts.pending.items():
            if block[:2] == (stub.start, stub.end):
                yield name, stub


def _imported_from(facts: ModuleFacts, base: str, packages: frozenset[str]) -> bool:
    """Whether a base's name is imported from a module with a part in `packages`."""
    head = base.split(".")[0]
    return any(packages.intersection(source.split(".")) for source, _ in facts.imports.get(head, ()))


def _located(node: ast.AST) -> TypeGuard[Positioned]:
    return getattr(node, "lineno", None) is not None


def _char_columns(tree: ast.AST, source: bytes) -> None:
    """ast counts columns in UTF-8 bytes; libcst, editors and SARIF count characters. Convert,
    on the lines where the two differ."""
    if source.isascii():
        return
    lines, wide = _wide(source)
    ends = set(wide)

    def chars(number: int, offset: int) -> int:
        return len(lines[number - 1].encode()[:offset].decode("utf-8", errors="replace"))

    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if _located(node):
            first = node.lineno
            at = bisect.bisect_left(wide, first)
            if at == len(wide) or wide[at] > (node.end_lineno or first):
                continue  # no wide line in this subtree
            if wide[at] == first:
                node.col_offset = chars(first, node.col_offset)
            if node.end_col_offset is not None and node.end_lineno in ends:
                node.end_col_offset = chars(node.end_lineno, node.end_col_offset)
        stack.extend(children(node))


@functools.lru_cache(maxsize=2)
def _wide(source: bytes) -> tuple[list[str], list[int]]:
    """The lines of `source` as ast numbers them, and the numbers of those that are not ASCII
    (kept for the next class of the same module)."""
    encoding = tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    lines = _lines(source.decode(encoding, errors="replace"))
    return lines, [number for number, line in enumerate(lines, start=1) if not line.isascii()]


def _suppressions(text: str) -> dict[int, tuple[str, ...]]:
    """Line -> rule codes (upper-cased) of each `# contractfix: ignore[...]` comment, read from
    comment tokens (never from a string literal), lines numbered as Python's tokenizer numbers them."""
    if "contractfix:" not in text:
        return {}
    found = {}
    try:
        comments = [
            (token.start[0], token.string)
            for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline)
            if token.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):
        comments = list(enumerate(_lines(text), start=1))
    for number, comment in comments:
        match = SUPPRESSION.search(comment)
        if match:
            found[number] = tuple(c.strip().upper() for c in match.group(1).split(",") if c.strip())
    return found


def _module_statements(body: list[ast.stmt]):
    """Module-level statements, looking into `if` / `try` blocks (TYPE_CHECKING, platform)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _module_statements(node.body)
            yield from _module_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                yield from _module_statements(block)
        else:
            yield node


def _record_import(facts: ModuleFacts, node: ast.Import | ast.ImportFrom) -> None:
    """Local name -> (module, attribute) it is bound to; attribute None for `import a.b`."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            target = alias.name if alias.asname else alias.name.split(".")[0]
            facts.imports.setdefault(local, []).append((target, None))
        return
    base = _absolute(facts, node)
    for alias in node.names:
        if alias.name != "*":
            facts.imports.setdefault(alias.asname or alias.name, []).append((base, alias.name))


def _absolute(facts: ModuleFacts, node: ast.ImportFrom) -> str:
    """The absolute module a `from` import of this module names."""
    if not node.level:
        return node.module or ""
    package = facts.module.split(".")
    if not facts.path.endswith("__init__.py"):
        package = package[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join(package + ([node.module] if node.module else []))
