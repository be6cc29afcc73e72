"""`ModuleFacts` of one source: its imports, suppression comments and top-level classes."""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize

from ..facts import ModuleFacts
from .classes import ClassAnalyzer

SUPPRESSION = re.compile(r"#\s*contractfix:\s*ignore\[([A-Za-z0-9,\s]+)\]")


def analyze_source(source: bytes, path: str, module: str) -> ModuleFacts:
    """Parse `source` and return its facts. Raises SyntaxError / ValueError on bad input."""
    tree = ast.parse(source, filename=path)
    _char_columns(tree, source)
    text = source.decode("utf-8", errors="replace")
    facts = ModuleFacts(
        path=path,
        module=module,
        uses_pipe_optional="| None" in text,
        uses_typing_optional="Optional[" in text,
        future_annotations="from __future__ import annotations" in text,
        suppressions=_suppressions(text),
    )
    lines = text.splitlines()
    for node in _module_statements(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _record_import(facts, node)
        elif isinstance(node, ast.ClassDef):
            facts.classes[node.name] = ClassAnalyzer(node, lines).run()
    return facts


def _char_columns(tree: ast.AST, source: bytes) -> None:
    """ast counts columns in UTF-8 bytes; libcst, editors and SARIF count characters. Convert,
    on the lines where the two differ."""
    if source.isascii():
        return
    encoding = tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    lines = re.split(r"\r\n|\r|\n", source.decode(encoding, errors="replace"))
    wide = [number for number, line in enumerate(lines, start=1) if not line.isascii()]
    ends = set(wide)

    def chars(number: int, offset: int) -> int:
        return len(lines[number - 1].encode()[:offset].decode("utf-8", errors="replace"))

    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        first = getattr(node, "lineno", None)
        if first is not None:
            at = bisect.bisect_left(wide, first)
            if at == len(wide) or wide[at] > (node.end_lineno or first):
                continue  # no wide line in this subtree
            if wide[at] == first:
                node.col_offset = chars(first, node.col_offset)
            if node.end_col_offset is not None and node.end_lineno in ends:
                node.end_col_offset = chars(node.end_lineno, node.end_col_offset)
        stack.extend(ast.iter_child_nodes(node))


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
        comments = list(enumerate(re.split(r"\r\n|\r|\n", text), start=1))
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
    base = node.module or ""
    if node.level:
        package = facts.module.split(".")
        if not facts.path.endswith("__init__.py"):
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    for alias in node.names:
        if alias.name != "*":
            facts.imports.setdefault(alias.asname or alias.name, []).append((base, alias.name))
