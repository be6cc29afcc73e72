"""The prefix family's kinds of edit: one frozen dataclass each, applied by the transformer
`fixes` registers for its type."""

from __future__ import annotations

from dataclasses import dataclass

from ...edits import Edit

__all__ = ["AddPrefix", "AddPrefixParameter", "Edit", "MaybePrefix"]


@dataclass(frozen=True)
class AddPrefix(Edit):
    """Give the call that starts at `line` and `column` the argument `prefix=<value>` (replacing
    its `prefix=` argument when it has one), laid out as ruff formats vLLM: on the call's line
    while it fits `width`, else one argument per line with a trailing comma."""

    value: str
    width: int = 88


@dataclass(frozen=True)
class MaybePrefix(Edit):
    """`f"{prefix}.<rest>"` at `line` and `column` -> `maybe_prefix(prefix, "<rest>")`, with
    `maybe_prefix` imported from module `source` when the file does not bind it."""

    source: str


@dataclass(frozen=True)
class AddPrefixParameter(Edit):
    """`prefix: str = ""` as the last parameter of class `cls`'s `__init__` (that starts at `line`),
    in the parameters' own layout."""

    cls: str
    width: int = 88
