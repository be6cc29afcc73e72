"""The changed blocks between two lists of lines, in `difflib.SequenceMatcher.get_opcodes` form.

`SequenceMatcher(autojunk=False)` costs about the sum, over the distinct lines, of how often each
occurs in one list times in the other, once per changed block: a file of 20,000 lines with 2,000
blank ones, or one with 200 fixed classes, takes minutes. Here the common head and tail are
matched, then the lines that occur once in each side (in the same order) split the rest into
short stretches, diffed by `SequenceMatcher` where that is cheap. Where `SequenceMatcher` on the
whole is cheap too (every vLLM model file), its own opcodes are returned, so every diff the fixer
proved before is the same; both are correct diffs, and the second may only place a changed line
differently among identical neighbours.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from difflib import SequenceMatcher

BUDGET = 4_000_000
"""The most line pairs `SequenceMatcher` is left to compare: its sum of line pair counts times the
changed blocks (vLLM 0.33.0's largest model file sums to 214,000)."""

Opcode = tuple[str, int, int, int, int]


def opcodes(a: Sequence[Hashable], b: Sequence[Hashable]) -> Sequence[Opcode]:
    found = anchored(a, b)
    if _cost(a, b) * len(found) <= BUDGET:
        return SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    return found


def anchored(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[Opcode]:
    """The head-tail-anchors diff alone: a correct diff, in a tenth of `SequenceMatcher`'s time
    on a model file with a few changed lines (the common head and tail are most of it)."""
    return _opcodes(_blocks(a, b), len(a), len(b))


def _cost(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    counts = Counter(b)
    return sum(n * counts[line] for line, n in Counter(a).items())


def _blocks(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int, int]]:
    """Matching blocks (i, j, size), in order, adjacent ones joined."""
    found: list[tuple[int, int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:
        alo, ahi, blo, bhi = stack.pop()
        head = 0
        while alo + head < ahi and blo + head < bhi and a[alo + head] == b[blo + head]:
            head += 1
        tail = 0
        while alo + head < ahi - tail and blo + head < bhi - tail and a[ahi - tail - 1] == b[bhi - tail - 1]:
            tail += 1
        found += [(alo, blo, head), (ahi - tail, bhi - tail, tail)]
        alo, blo, ahi, bhi = alo + head, blo + head, ahi - tail, bhi - tail
        if alo == ahi or blo == bhi:
            continue
        if _cost(a[alo:ahi], b[blo:bhi]) * min(ahi - alo, bhi - blo) <= BUDGET:
            matcher = SequenceMatcher(a=a[alo:ahi], b=b[blo:bhi], autojunk=False)
            found += [(alo + i, blo + j, n) for i, j, n in matcher.get_matching_blocks()]
            continue
        anchors = _anchors(a, alo, ahi, b, blo, bhi)
        if not anchors:
            continue  # nothing to split on: the stretch is one replaced block
        found += [(i, j, 1) for i, j in anchors]
        for (i1, j1), (i2, j2) in zip([(alo - 1, blo - 1), *anchors], [*anchors, (ahi, bhi)], strict=True):
            stack.append((i1 + 1, i2, j1 + 1, j2))
    joined: list[tuple[int, int, int]] = []
    for i, j, n in sorted(block for block in found if block[2]):
        if joined and joined[-1][0] + joined[-1][2] == i and joined[-1][1] + joined[-1][2] == j:
            joined[-1] = (joined[-1][0], joined[-1][1], joined[-1][2] + n)
        else:
            joined.append((i, j, n))
    return joined


def _anchors(a, alo: int, ahi: int, b, blo: int, bhi: int) -> list[tuple[int, int]]:
    """Pairs (i, j) of lines that occur once in each range, the longest run of them in the same
    order on both sides (patience diff's anchors)."""
    ca, cb = Counter(a[alo:ahi]), Counter(b[blo:bhi])
    where = {b[j]: j for j in range(blo, bhi) if cb[b[j]] == 1}
    pairs = [(i, where[a[i]]) for i in range(alo, ahi) if ca[a[i]] == 1 and a[i] in where]
    return _increasing(pairs)


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest subsequence of `pairs` (in increasing i) whose j increase too."""
    from bisect import bisect_left

    tails: list[int] = []  # tails[k]: the smallest last j of a run of length k + 1
    ends: list[int] = []  # ends[k]: the index in pairs of that last element
    back = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        k = bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[k], ends[k] = j, index
        back[index] = ends[k - 1] if k else -1
    out = []
    at = ends[-1] if ends else -1
    while at >= 0:
        out.append(pairs[at])
        at = back[at]
    return out[::-1]


def _opcodes(blocks: list[tuple[int, int, int]], la: int, lb: int) -> list[Opcode]:
    """`SequenceMatcher.get_opcodes` from matching blocks."""
    out: list[Opcode] = []
    i = j = 0
    for ai, bj, size in [*blocks, (la, lb, 0)]:
        tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert" if j < bj else ""
        if tag:
            out.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            out.append(("equal", ai, i, bj, j))
    return out
