"""One small libcst transformer per PF kind of edit (`..edits`), registered by the edit's type."""

from __future__ import annotations

from .add_prefix import AddPrefix
from .add_prefix_parameter import AddPrefixParameter
from .maybe_prefix import MaybePrefix

TRANSFORMERS = (AddPrefix, AddPrefixParameter, MaybePrefix)
