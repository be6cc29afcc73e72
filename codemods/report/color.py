"""Colours for text output on a terminal; none when piped or when NO_COLOR is set."""

from __future__ import annotations

import os
import re
from typing import TextIO

ESC = "\x1b[{}m{}\x1b[0m"
STYLES = (
    (re.compile(r"^(\S+:\d+:\d+:)", re.M), "1"),          # location: bold
    (re.compile(r"\b(PP\d{3})\b"), "1;31"),                # rule code: bold red
    (re.compile(r"(\[safe fix: [^\]]*\])"), "32"),         # safe fix: green
    (re.compile(r"(\[unsafe fix: [^\]]*\])"), "33"),       # unsafe fix: yellow
    (re.compile(r"^(\S+: error: .*)$", re.M), "31"),       # errors: red
    (re.compile(r"^(    \S+:\d+: )", re.M), "2"),          # evidence location: dim
)


def wanted(stream: TextIO, environ=os.environ) -> bool:
    """Colour only a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return not environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


def colorize(text: str) -> str:
    for pattern, code in STYLES:
        text = pattern.sub(lambda m, code=code: ESC.format(code, m.group(1)), text)
    return text
