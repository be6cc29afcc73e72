"""`unparse.unparse` writes what `ast.unparse` writes, and writes the common shapes itself."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codemods import unparse as fast

SHAPES = [
    "x",
    "self.config.tie_word_embeddings",
    "get_pp_group().is_last_rank",
    "not get_pp_group().is_first_rank",
    "self.quant_config is not None",
    "a == 'llama' and b != \"it's\"",
    "a and b and x is None",
    "a and b and c and x | y",
    "a or b or c or d or x | y",
    "a or b and c",
    "(a or b) and c",
    "a and (b or c) and not d",
    "not (a and b)",
    "(not a) == b",
    "x in ('a', 'b')",
    "x not in [a, b, *c]",
    "IntermediateTensors | None",
    "A | (B | C)",
    "(A | B) | C",
    "Optional[IntermediateTensors]",
    "dict[str, torch.Tensor]",
    "tuple[int, ...]",
    "x[a,]",
    "x[()]",
    "x[1:2]",
    "isinstance(x, (A, B))",
    "isinstance(x, (A,))",
    "f(a, b, key=c, **kw)",
    "f(*args)",
    "f(x for x in y)",
    "u'text'",
    "b'bytes'",
    "'tab\\there'",
    "1 .real",
    "(1).bit_length()",
    "-1",
    "~a",
    "a + b",
    "1.5e308 * 10",
    "f'{a}.weight'",
    "lambda x: x",
    "a if b else c",
    "(a := b)",
    "...",
    "None",
    "True",
    "[a, [b, (c, d)]]",
    "(a, b) == (c, d)",
    "not a is None",
    "(a is None) is None",
    "a < b < c",
]


@pytest.mark.parametrize("source", SHAPES)
def test_same_text_as_ast_unparse(source: str) -> None:
    node = ast.parse(source, mode="eval").body
    assert fast.unparse(node) == ast.unparse(node)


COMMON = [
    "self.config.tie_word_embeddings",
    "get_pp_group().is_last_rank",
    "not get_pp_group().is_first_rank",
    "self.quant_config is not None and self.use_x",
    "IntermediateTensors | None",
    "Optional[IntermediateTensors]",
    "isinstance(x, (A, B))",
    "f(a, key='b')",
]


@pytest.mark.parametrize("source", COMMON)
def test_common_shapes_are_written_here(source: str, monkeypatch: pytest.MonkeyPatch) -> None:
    node = ast.parse(source, mode="eval").body
    expected = ast.unparse(node)

    def refuse(_: ast.AST) -> str:
        raise AssertionError("handed to ast.unparse")

    monkeypatch.setattr(fast.ast, "unparse", refuse)
    assert fast.unparse(node) == expected


def test_every_expression_of_this_package() -> None:
    """A corpus of real code at hand: every expression node of contractfix's own sources."""
    root = Path(fast.__file__).parent
    count = 0
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.expr):
                assert fast.unparse(node) == ast.unparse(node), f"{path}:{node.lineno}"
                count += 1
    assert count > 50_000
