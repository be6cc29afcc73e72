"""Where a class ties its output head to an embedding, and where it builds a `PPMissingLayer`
(PP009): plain facts from one class's AST, each with the rank and configuration condition under
which it runs.

A condition is a small formula of nested tuples (picklable, for the facts cache): `("first",)` /
`("last",)` for `<group>.is_first_rank` / `.is_last_rank`, `("call", text)` for what a call
returns (other than `getattr` / `hasattr`): a function the facts do not read, which may well test a
flag the formula names elsewhere, `("atom", name)` for anything else (named by its last attribute,
so `config.tie_word_embeddings` and `self.config.tie_word_embeddings` are one atom), `("not", c)`,
`("and", (c, ...))`, `("or", (c, ...))` and `TRUE`. A local or a `self` attribute that `__init__`
assigned before the test stands for its value.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass

from ....unparse import unparse
from ....vllm_names import FIRST_RANK, LAST_RANK
from ....walk import walk

Cond = tuple
TRUE: Cond = ("and", ())
PLACEHOLDERS = {"PPMissingLayer"}
TIE_CALL = "tie_weights"
LOGITS = "logits_processor"
HEAD = re.compile(r"head|^output|^proj_out$")
EMBEDDING_WORDS = ("emb", "wte")
"""Searched in lower-cased text, they match where the case-blind `EMBEDDING` would (no character
outside ASCII folds to one of their letters), ten times as fast on a whole class."""
EMBEDDING = re.compile("|".join(EMBEDDING_WORDS), re.I)
MAX_ATOMS = 12
"""Beyond this many unknown conditions a question is left unanswered (never a finding)."""


@dataclass(frozen=True)
class Tie:
    """`head` is made to share `embedding`'s weight (paths under `self`): `tie_weights` reads
    `embedding.weight` and calls `head.tie_weights` where it runs; `weight` (`head.weight =
    embedding.weight`) reads `embedding.weight`; `alias` (`head = embedding`) and `logits`
    (`logits_processor(embedding, h)` in compute_logits) need a real embedding on the last rank."""

    form: str
    head: tuple[str, ...]
    embedding: tuple[str, ...]
    line: int
    column: int
    guard: Cond
    top: tuple[int, int] = (0, 0)
    """Where the top-level statement of the method that holds it starts."""
    alone: bool = False
    """Whether that statement is the tie, or an `if` without `else` around only the tie (it can move)."""


@dataclass(frozen=True)
class Placeholder:
    """`self.<attr> = PPMissingLayer()` in `__init__`, run under `guard`."""

    attr: str
    line: int
    guard: Cond


@dataclass(frozen=True)
class Branch:
    """A top-level `if <group>.is_first_rank:` (or `is_last_rank`) of `__init__` whose `else`
    holds `self.<attr> = PPMissingLayer()` (on `placeholder_line`): where a fix widens the
    condition or moves a tie."""

    attr: str
    rank: str
    line: int
    column: int
    placeholder_line: int


@dataclass(frozen=True)
class TieFacts:
    """`built`: attributes `__init__` sets to something other than a placeholder on every rank
    (a subclass that does so replaces its bases' placeholders); `names`: the parameters and
    locals of `__init__`."""

    ties: tuple[Tie, ...]
    placeholders: tuple[Placeholder, ...]
    built: frozenset[str] = frozenset()
    branches: tuple[Branch, ...] = ()
    names: frozenset[str] = frozenset()


def wanted(text: str) -> bool:
    """Whether a class whose source is `text` can hold tie facts (a text test before any walk)."""
    if "PPMissingLayer" in text or TIE_CALL in text:
        return True
    lowered = text.lower()
    return any(word in lowered for word in EMBEDDING_WORDS)


def tie_facts(node: ast.ClassDef, lines: list[str]) -> TieFacts | None:
    """`lines` are the module's source lines: a method whose text names neither `tie_weights` nor
    the logits processor makes no tie call, so its calls are not walked."""
    ties: list[Tie] = []
    placeholders: list[Placeholder] = []
    built: set[str] = set()
    branches: list[Branch] = []
    names: set[str] = set()
    for item in node.body:
        if not isinstance(item, ast.FunctionDef):
            continue
        text = "\n".join(lines[item.lineno - 1 : item.end_lineno])
        scan = TIE_CALL in text or LOGITS in text
        if item.name == "__init__":
            walker = _Walker(ties, placeholders, built, scan)
            for stmt in item.body:
                walker.top, walker.alone = (stmt.lineno, stmt.col_offset), _alone(stmt)
                walker.statement(stmt, TRUE)
            branches.extend(b for b in map(_branch, item.body) if b)
            names.update(a.arg for a in item.args.args + item.args.kwonlyargs)
            names.update(walker.local)
        elif item.name == "compute_logits":
            _Walker(ties, None, set(), scan).block(item.body, ("last",))
    if not (ties or placeholders or built):
        return None
    return TieFacts(tuple(ties), tuple(placeholders), frozenset(built), tuple(branches), frozenset(names))


def _alone(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1:
        stmt = stmt.body[0]
    return isinstance(stmt, ast.Assign) and _is_tie(stmt.value)


def _is_tie(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == TIE_CALL \
        or self_path(value) is not None


def _branch(stmt: ast.stmt) -> Branch | None:
    if not isinstance(stmt, ast.If) or not isinstance(stmt.test, ast.Attribute):
        return None
    rank = {FIRST_RANK: "first", LAST_RANK: "last"}.get(stmt.test.attr, "")
    for other in stmt.orelse if rank else ():
        if isinstance(other, ast.Assign) and len(other.targets) == 1 and _placeholder(other.value):
            path = self_path(other.targets[0])
            if path and len(path) == 1:
                return Branch(path[0], rank, stmt.lineno, stmt.col_offset, other.targets[0].lineno)
    return None


def self_path(node: ast.AST) -> tuple[str, ...] | None:
    """`self.a.b` -> ("a", "b"); None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "self" and parts:
        return tuple(reversed(parts))
    return None


class _Walker:
    """Walks one method's statements with the condition of the branch they sit in. `placeholders`
    is None where no `PPMissingLayer` is collected (compute_logits)."""

    def __init__(self, ties: list[Tie], placeholders: list[Placeholder] | None, built: set[str], scan: bool) -> None:
        self.ties = ties
        self.scan = scan
        self.placeholders = placeholders
        self.built = built
        self.local: dict[str, ast.expr] = {}
        self.attrs: dict[str, ast.expr] = {}
        """`self.<attr>` -> the value last assigned to it, for conditions that test it."""
        self.top = (0, 0)
        self.alone = False

    def block(self, body: list[ast.stmt], guard: Cond) -> None:
        for stmt in body:
            self.statement(stmt, guard)

    def statement(self, stmt: ast.stmt, guard: Cond) -> None:
        if isinstance(stmt, ast.If):
            test = self.cond(stmt.test)
            self.block(stmt.body, conj(guard, test))
            self.block(stmt.orelse, conj(guard, ("not", test)))
            return
        if isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
            for field in ("body", "orelse", "finalbody"):
                self.block(getattr(stmt, field, []), guard)
            for handler in getattr(stmt, "handlers", []):
                self.block(handler.body, guard)
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target = stmt.target
        if target is not None:
            assert isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None
            if isinstance(target, ast.Name):
                self.local[target.id] = stmt.value
            elif len(path := self_path(target) or ()) == 1:
                self.attrs[path[0]] = stmt.value
            self.assign(target, stmt.value, guard)
        if self.scan:
            self.calls(stmt, guard)

    def assign(self, target: ast.expr, value: ast.expr, guard: Cond) -> None:
        if isinstance(value, ast.IfExp):
            test = self.cond(value.test)
            self.assign(target, value.body, conj(guard, test))
            self.assign(target, value.orelse, conj(guard, ("not", test)))
            return
        left, right = self_path(target), self_path(value)
        if left is None:
            return
        if self.placeholders is not None and len(left) == 1 and _placeholder(value):
            self.placeholders.append(Placeholder(left[0], target.lineno, guard))
        elif len(left) == 1 and guard == TRUE:
            self.built.add(left[0])
        elif right and left[-1] == "weight" == right[-1] and len(right) > 1 and EMBEDDING.search(right[-2]):
            self._tie("weight", left[:-1], right[:-1], target, guard)
        elif right and HEAD.search(left[-1]) and EMBEDDING.search(right[-1]):
            self._tie("alias", left, right, target, guard)

    def calls(self, stmt: ast.stmt, guard: Cond) -> None:
        for node in walk(stmt):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or not node.args:
                continue
            embedding = self_path(node.args[0])
            if embedding is None:
                continue
            if node.func.attr == TIE_CALL:
                head = self_path(node.func.value)
                if head:
                    self._tie("tie_weights", head, embedding, node, guard)
            elif node.func.attr == LOGITS and EMBEDDING.search(embedding[-1]):
                self._tie("logits", (), embedding, node, guard)

    def _tie(self, form: str, head: tuple[str, ...], embedding: tuple[str, ...], node: ast.expr,
             guard: Cond) -> None:
        self.ties.append(Tie(form, head, embedding, node.lineno, node.col_offset, guard, self.top, self.alone))

    def cond(self, test: ast.expr, depth: int = 0) -> Cond:
        if isinstance(test, ast.BoolOp):
            kind = "and" if isinstance(test.op, ast.And) else "or"
            return (kind, tuple(self.cond(v, depth) for v in test.values))
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return ("not", self.cond(test.operand, depth))
        if isinstance(test, ast.Attribute) and test.attr == FIRST_RANK:
            return ("first",)
        if isinstance(test, ast.Attribute) and test.attr == LAST_RANK:
            return ("last",)
        if isinstance(test, ast.Name) and test.id in self.local and depth < 3:
            return self.cond(self.local[test.id], depth + 1)
        if len(path := self_path(test) or ()) == 1 and path[0] in self.attrs and depth < 3:
            return self.cond(self.attrs[path[0]], depth + 1)
        if isinstance(test, ast.Call) and _looked_up(test) is None:
            return ("call", unparse(test))
        return ("atom", _atom_name(test))


def _placeholder(value: ast.expr) -> bool:
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in PLACEHOLDERS


def _atom_name(test: ast.expr) -> str:
    """`config.tie_word_embeddings`, `self.config.tie_word_embeddings`, `getattr(config,
    "tie_word_embeddings", True)` -> "tie_word_embeddings"."""
    if isinstance(test, ast.Attribute):
        return test.attr
    if isinstance(test, ast.Name):
        return test.id
    return _looked_up(test) or unparse(test)


def _looked_up(test: ast.expr) -> str | None:
    """The attribute `getattr(x, "name", ...)` / `hasattr(x, "name")` reads; None for any other expression."""
    if (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id in ("getattr", "hasattr")
            and len(test.args) >= 2 and isinstance(test.args[1], ast.Constant)):
        return str(test.args[1].value)
    return None


def conj(*conds: Cond) -> Cond:
    return ("and", tuple(c for c in conds if c != TRUE))


RANKS = {"first": (True, False), "middle": (False, False), "last": (False, True)}
"""The ranks of a PP>1 group: (is_first_rank, is_last_rank)."""


def witness(cond: Cond) -> str | None:
    """A rank ("last", "first" or "middle", tried in that order) where `cond` holds under some
    setting of its unknown atoms; None when it holds on no rank of a PP>1 group, or when there
    are too many atoms to tell."""
    names = sorted(atoms(cond))
    if len(names) > MAX_ATOMS:
        return None
    for rank in ("last", "first", "middle"):
        first, last = RANKS[rank]
        for values in itertools.product((False, True), repeat=len(names)):
            if _eval(cond, first, last, dict(zip(names, values, strict=True))):
                return rank
    return None


def atoms(cond: Cond, kinds: tuple[str, ...] = ("atom", "call")) -> set[str]:
    """The unknown conditions `cond` names (of `kinds`: calls' results only, with `("call",)`)."""
    kind = cond[0]
    if kind in ("atom", "call"):
        return {cond[1]} if kind in kinds else set()
    if kind == "not":
        return atoms(cond[1], kinds)
    if kind in ("and", "or"):
        return set().union(*(atoms(c, kinds) for c in cond[1]))
    return set()


def _eval(cond: Cond, first: bool, last: bool, atoms: dict[str, bool]) -> bool:
    kind = cond[0]
    if kind == "first":
        return first
    if kind == "last":
        return last
    if kind in ("atom", "call"):
        return atoms[cond[1]]
    if kind == "not":
        return not _eval(cond[1], first, last, atoms)
    if kind == "and":
        return all(_eval(c, first, last, atoms) for c in cond[1])
    return any(_eval(c, first, last, atoms) for c in cond[1])
