"""One small libcst transformer per kind of edit."""

from __future__ import annotations

from .add_factory_keys import AddFactoryKeys
from .base import EditTransformer
from .default_none import DefaultNone

TRANSFORMERS: dict[str, type[EditTransformer]] = {
    t.kind: t for t in (AddFactoryKeys, DefaultNone)
}
