"""The pipeline-parallel family's kinds of edit: one frozen dataclass each, applied by the
transformer `fixes` registers for its type. The shapes they share are `codemods.edits`'."""

from __future__ import annotations

from dataclasses import dataclass

from ...edits import Edit, InsertStatement, LiteralEdit

__all__ = [
    "AddFactoryKeys", "AuxOptOut", "CloneDictEntry", "DefaultNone", "EarlyReturn", "Edit", "InsertDelegation",
    "InsertStatement", "KeyGuard", "LiteralEdit", "MissingGuard", "RemoveFactoryKeys", "SkipPlaceholder",
    "TensorsAccess", "TiedEmbedding", "TieOnLastRank",
]


@dataclass(frozen=True)
class AddFactoryKeys(LiteralEdit):
    """Append `keys` to a `make_empty_intermediate_tensors_factory([...])` key list."""


@dataclass(frozen=True)
class RemoveFactoryKeys(LiteralEdit):
    """Remove `keys` from a `make_empty_intermediate_tensors_factory([...])` key list."""


@dataclass(frozen=True)
class CloneDictEntry(LiteralEdit):
    """Add `keys` to a hand-written producer's dict literal, each a copy of the first entry's value."""


@dataclass(frozen=True)
class DefaultNone(Edit):
    """Give `params` of `function` (whose `intermediate_tensors` starts at `line`) a `= None`
    default; `style` ("", "pipe" or "optional") says how to make its annotation admit None."""

    function: str
    params: tuple[str, ...]
    style: str = ""


@dataclass(frozen=True)
class InsertDelegation(InsertStatement):
    """`self.make_empty_intermediate_tensors = self.<attr>.make_empty_intermediate_tensors` in `__init__`."""

    attr: str


@dataclass(frozen=True)
class EarlyReturn(InsertStatement):
    """`if not get_pp_group().is_last_rank: return <var>` in `forward`; `line` ends the inner call."""

    var: str


@dataclass(frozen=True)
class TensorsAccess(Edit):
    """Route `x.get(...)` (`access` "get"), `x.keys()` ("keys") or `k in x` ("in") through `x.tensors`."""

    access: str


@dataclass(frozen=True)
class MissingGuard(Edit):
    """`if is_pp_missing_parameter(<key>, self): <exit>` right before the statement that starts
    at `line` and `column` (the one holding a `params_dict[<key>]` lookup); `exit` is
    "continue" or "return". The check is imported from module `source` (the one whose splitter
    built the layers); `package` is the file's own, from which its relative imports start."""

    key: str
    exit: str
    source: str
    package: str


@dataclass(frozen=True)
class AuxOptOut(Edit):
    """`supports_aux_hidden_states_over_pp = False` as the first statement of class `cls` after its
    docstring (the statement that starts at `line`), followed by a blank line."""

    cls: str


@dataclass(frozen=True)
class TiedEmbedding(Edit):
    """Widen the `if <group>.is_first_rank:` that starts at `line` and `column` (it builds an
    embedding, else a `PPMissingLayer`) to `<group>.is_first_rank or (<flag> and
    <group>.is_last_rank)`, laid out as upstream writes it (PP009)."""

    flag: str


@dataclass(frozen=True)
class TieOnLastRank(Edit):
    """Move the `__init__` statement that starts at `line` and `column` (a tie, alone or under its
    flag) to the end of the body of the `if <group>.is_last_rank:` of the same block that starts
    at `target_line` and `target_column` (PP009)."""

    target_line: int
    target_column: int


@dataclass(frozen=True)
class SkipPlaceholder(Edit):
    """`if isinstance(<var>, PPMissingLayer): continue` right before the statement that starts at
    `line` and `column` (the first of a loop's body over every layer, PP014); `PPMissingLayer` is
    imported from module `source` (already bound where it is empty); `package` is the file's own,
    from which its relative imports start."""

    var: str
    source: str
    package: str


@dataclass(frozen=True)
class KeyGuard(Edit):
    """Replace the test of the `if` that starts at `line` and `column` (`<local> is not None`) by
    `"<key>" in <tensors>.tensors` (PP015)."""

    key: str
    tensors: str
