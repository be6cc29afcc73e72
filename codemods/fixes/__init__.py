"""One small libcst transformer per kind of edit, registered by the edit's type: each family's
`fixes.TRANSFORMERS`, and the shared helpers they are built on (`base`, `imports`, `layout`)."""

from __future__ import annotations

import importlib

from ..edits import Edit
from ..families import FAMILIES
from .base import EditTransformer

TRANSFORMERS: dict[type[Edit], type[EditTransformer]] = {
    t.edit: t for family in FAMILIES for t in importlib.import_module(f"{family.package}.fixes").TRANSFORMERS
}
