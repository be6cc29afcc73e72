"""Where a class tests `is_first_rank` (PP010): plain facts from one class's AST.

A drafter lives on the last PP rank and sees the target's PP group, so there `is_first_rank` is
False whenever PP>1."""

from __future__ import annotations

import ast

from ....walk import walk

WORD = "is_first_rank"


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can test the first rank (a text test before any walk)."""
    return WORD in text


def first_rank_tests(node: ast.ClassDef, lines: list[str]) -> tuple[tuple[int, int], ...]:
    """(line, column) of every `<group>.is_first_rank` read in the class's methods. Only the
    statements of the class body whose text (decorators included) holds the word are walked."""
    found: list[tuple[int, int]] = []
    for item in node.body:
        start = min([item.lineno, *(d.lineno for d in getattr(item, "decorator_list", ()))])
        if any(WORD in line for line in lines[start - 1 : item.end_lineno]):
            found.extend(
                (n.lineno, n.col_offset) for n in walk(item)
                if isinstance(n, ast.Attribute) and n.attr == WORD and isinstance(n.ctx, ast.Load)
            )
    return tuple(sorted(found))
