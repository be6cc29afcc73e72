"""Facts from source with the stdlib `ast`: static, nothing is imported.

One module per kind of fact, each feeding the one above it:

- `module`: `ModuleFacts` of one source (imports, suppressions, its classes); the entry point,
  and `reanalyze` for a rewrite of a source already read.
- `needs`: which classes must be parsed (the others when a `ClassRef` reads their facts).
- `outline`: where the top-level statements are, found without parsing.
- `classes`: `ClassFacts` of one class (bases, methods, `__init__` structure).
- `members`: what methods assign to `self` (producers, submodules).
- `arms`: the arms of a conditional expression assigned to the producer, each a producer of its own.
- `traffic`: `FunctionFacts` of one method (keys read, sent, allocated; calls passing tensors on).
- `altered`: where a forward alters the inner model's output (PP006).
- `syntax`: the vLLM names looked for, and shared `ast` helpers.

Every file of this package is part of the facts cache's key (`cache.py`), so a new module here
is covered without being listed.

Importing the package loads none of them: a check whose facts are all cached never parses, and
`module` and what it imports are about a fifth of the start-up of a one-file check. Its functions
load `module` on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["analyze_source", "complete", "fill", "reanalyze"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import module

    value = getattr(module, name)
    globals()[name] = value  # found directly from now on, without this hook
    return value
