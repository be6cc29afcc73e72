"""`discover.relevant`, the byte search that decides which files are parsed, gives what its plain
definition gives, whatever the order it searches in."""

from __future__ import annotations

import itertools

from contractfix.discover import DEFINES, LOADS, MARKERS, SHARED, SKIPS_INIT, relevant

NEEDLES = [*MARKERS, *DEFINES, *SKIPS_INIT, b"vllm_config", *LOADS]
RENAMED = [b"from aphrodite.config import AphroditeConfig", b"aphrodite_config", b"from other.config import X"]
"""A fork that renamed the package: its engine config is named after it, and imported from it."""


def plain(source: bytes) -> bool:
    named = any(m in source for m in MARKERS) and any(d in source for d in DEFINES)
    config = b"vllm_config" in source or b"from aphrodite.config" in source and b"aphrodite_config" in source
    skips = any(s in source for s in SKIPS_INIT) and config
    return named or skips or all(m in source for m in LOADS)


def test_every_combination_of_needles() -> None:
    assert sum(SHARED in m for m in MARKERS) == 2
    for count in range(len(NEEDLES) + 1):
        for chosen in itertools.combinations(NEEDLES, count):
            source = b"x = 1\n" + b"\n".join(chosen)
            assert relevant(source) == plain(source), chosen


def test_a_renamed_engine_config_counts_only_with_its_import() -> None:
    """`aphrodite_config` is the engine's config where `aphrodite.config` is imported; a name
    that merely ends so, with another package's config imported, is not."""
    for count in range(len(RENAMED) + 1):
        for chosen in itertools.combinations(RENAMED, count):
            for skip in SKIPS_INIT:
                source = b"x = 1\n" + b"\n".join([*chosen, skip])
                assert relevant(source) == plain(source), chosen
