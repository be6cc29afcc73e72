"""One small libcst transformer per PF kind of edit (`..edits`), registered by the edit's type."""

from __future__ import annotations

from .add_prefix import AddPrefix
from .maybe_prefix import MaybePrefix

TRANSFORMERS = (AddPrefix, MaybePrefix)
