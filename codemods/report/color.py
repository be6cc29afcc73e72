"""Print text output, styled through rich's Console when colour is on.

`--color auto` (the default) leaves the decision to rich: a terminal gets colour, a pipe does
not, `NO_COLOR` turns it off and `FORCE_COLOR` on. `always` and `never` force it. rich is
imported only when colour is possible, so a piped run (pre-commit, CI) does not pay for it.
"""

from __future__ import annotations

import os
import re
from typing import TextIO

MODES = ("auto", "always", "never")
STYLES = (
    (re.compile(r"^\S+:\d+:\d+:", re.M), "bold"),             # location
    (re.compile(r"\bPP\d{3}\b"), "bold red"),                 # rule code
    (re.compile(r"\[safe fix: [^\]]*\]"), "green"),
    (re.compile(r"\[unsafe fix: [^\]]*\]"), "yellow"),
    (re.compile(r"^\S+: error: .*$", re.M), "red"),           # errors
    (re.compile(r"^    \S+:\d+: ", re.M), "dim"),             # evidence location
)


def emit(text: str, stream: TextIO, mode: str = "auto", styled: bool = True, end: str = "\n") -> None:
    """Write `text` and `end` to `stream`; styled when `styled` and colour is on."""
    console = _console(stream, mode) if styled else None
    if console is None:
        stream.write(text + end)
        stream.flush()
        return
    from rich.text import Text

    shown = Text(text)
    for pattern, style in STYLES:
        shown.highlight_regex(pattern, style)
    console.print(shown, end=end)


def _console(stream: TextIO, mode: str):
    """rich's Console for `stream` when it would colour, else None."""
    if mode == "never":
        return None
    if mode == "auto" and not os.environ.get("FORCE_COLOR") and not (hasattr(stream, "isatty") and stream.isatty()):
        return None
    from rich.console import Console

    console = Console(
        file=stream, force_terminal=True if mode == "always" else None, no_color=False if mode == "always" else None,
        color_system="standard", highlight=False, markup=False, emoji=False, soft_wrap=True,
    )
    return console if console.is_terminal and not console.no_color else None
