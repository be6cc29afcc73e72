"""`discover.relevant`, the byte search that decides which files are parsed, gives what its plain
definition gives, whatever the order it searches in."""

from __future__ import annotations

import itertools

from contractfix.discover import DEFINES, LOADS, MARKERS, SHARED, SKIPS_INIT, relevant

NEEDLES = [*MARKERS, *DEFINES, *SKIPS_INIT, b"vllm_config", *LOADS]


def plain(source: bytes) -> bool:
    named = any(m in source for m in MARKERS) and any(d in source for d in DEFINES)
    skips = any(s in source for s in SKIPS_INIT) and b"vllm_config" in source
    return named or skips or all(m in source for m in LOADS)


def test_every_combination_of_needles() -> None:
    assert sum(SHARED in m for m in MARKERS) == 2
    for count in range(len(NEEDLES) + 1):
        for chosen in itertools.combinations(NEEDLES, count):
            source = b"x = 1\n" + b"\n".join(chosen)
            assert relevant(source) == plain(source), chosen
