"""`tomllib` on Python 3.11 and later, its backport `tomli` on 3.10 (requires-python >= 3.10)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

__all__ = ["tomllib"]
