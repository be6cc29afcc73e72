"""Compare key sets per configuration: every assignment of the configuration conditions in play."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from itertools import product

from .facts import Guard, Side

MAX_CONDITIONS = 4


@dataclass(frozen=True)
class Verdict:
    """Keys missing on one side, and under which configurations.

    `always`: missing whatever the configuration; `sometimes`: missing only under some assignment,
    with `shared` True when every condition involved guards both sides (a provable per-branch
    mismatch) and False when it cannot be proven.
    """

    always: tuple[str, ...]
    sometimes: tuple[str, ...]
    shared: bool
    conditions: tuple[str, ...]


def atoms(*sides: Side) -> list[str]:
    seen: list[str] = []
    for side in sides:
        for located in side.uses:
            for text, _ in located.use.guard:
                if text not in seen:
                    seen.append(text)
    return seen


def satisfied(guard: Guard, assignment: dict[str, bool]) -> bool:
    return all(assignment.get(text, polarity) == polarity for text, polarity in guard)


def keys_under(side: Side, assignment: dict[str, bool]) -> set[str]:
    return {u.use.key for u in side.uses if u.use.key is not None and satisfied(u.use.guard, assignment)}


def assignments(conditions: list[str]) -> list[dict[str, bool]]:
    return [dict(zip(conditions, values, strict=False)) for values in product((True, False), repeat=len(conditions))]


def is_pattern(key: str) -> bool:
    """Keys like `aux_hidden_states_*` stand for a family the runner allocates at run time."""
    return "*" in key


def missing(needed: list[Side], have: Side, within: Guard = ()) -> Verdict | None:
    """Literal keys of `needed` (union) not in `have`, per configuration (only those where
    `within` holds); a key matched by a pattern of `have` is there, and patterns needed are the
    runner's own. None when it cannot be decided."""
    conditions = atoms(*needed, have)
    conditions += [text for text, _ in within if text not in conditions]
    if len(conditions) > MAX_CONDITIONS:
        return None
    per_config = []
    for assignment in assignments(conditions):
        if not satisfied(within, assignment):
            continue
        want: set[str] = set()
        for side in needed:
            want |= keys_under(side, assignment)
        have_keys = keys_under(have, assignment)
        patterns = [k for k in have_keys if is_pattern(k)]
        per_config.append({
            k for k in want - have_keys
            if not is_pattern(k) and not any(fnmatchcase(k, p) for p in patterns)
        })
    always = set.intersection(*per_config) if per_config else set()
    sometimes = set.union(*per_config) - always if per_config else set()
    need_atoms = set(atoms(*needed))
    have_atoms = set(atoms(have))
    return Verdict(
        always=_ordered(always, needed),
        sometimes=_ordered(sometimes, needed + [have]),
        shared=bool(need_atoms) and need_atoms == have_atoms,
        conditions=tuple(conditions),
    )


def exclusive(guards: list[Guard]) -> bool:
    """No configuration satisfies two of `guards` (so each branch can be fixed on its own)."""
    conditions = list(dict.fromkeys(text for guard in guards for text, _ in guard))
    if len(conditions) > MAX_CONDITIONS:
        return False
    return all(sum(satisfied(g, a) for g in guards) <= 1 for a in assignments(conditions))


def consistent(*guards: Guard) -> bool:
    """Some configuration satisfies every one of `guards` (no condition is asked both ways)."""
    asked: dict[str, bool] = {}
    for guard in guards:
        for text, polarity in guard:
            if asked.setdefault(text, polarity) != polarity:
                return False
    return True


def _ordered(keys: set[str], sides: list[Side]) -> tuple[str, ...]:
    order: list[str] = []
    for side in sides:
        for u in side.uses:
            if u.use.key in keys and u.use.key not in order:
                order.append(u.use.key)
    return tuple(order)

