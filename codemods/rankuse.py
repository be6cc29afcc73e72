"""Where a class tests `is_first_rank` (PP010): plain facts from one class's AST.

A drafter lives on the last PP rank and sees the target's PP group, so there `is_first_rank` is
False whenever PP>1."""

from __future__ import annotations

import ast

WORD = "is_first_rank"


def wanted(source_lines: list[str]) -> bool:
    return any(WORD in line for line in source_lines)


def first_rank_tests(node: ast.ClassDef) -> tuple[tuple[int, int], ...]:
    """(line, column) of every `<group>.is_first_rank` read in the class's methods."""
    return tuple(sorted(
        (n.lineno, n.col_offset) for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and n.attr == WORD and isinstance(n.ctx, ast.Load)
    ))
