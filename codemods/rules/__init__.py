"""Every rule, in code order. A rule module holds `RULE` (its metadata) and `check(ctx)`;
PP100 checks the suppressions the others left unused (see `codemods.suppress`)."""

from __future__ import annotations

from types import ModuleType

from . import (
    pp001_key_not_allocated,
    pp002_intermediate_tensors_default,
    pp003_key_allocated_not_sent,
    pp004_missing_empty_tensors_factory,
    pp005_key_read_not_sent,
    pp006_nonlast_output_altered,
    pp007_unsupported_access,
    pp008_missing_layer_lookup,
    pp010_draft_rank_predicate,
    pp011_aux_states_not_relayed,
    pp100_unused_suppression,
)
from .base import Context, Rule

MODULES: tuple[ModuleType, ...] = (
    pp001_key_not_allocated,
    pp002_intermediate_tensors_default,
    pp003_key_allocated_not_sent,
    pp004_missing_empty_tensors_factory,
    pp005_key_read_not_sent,
    pp006_nonlast_output_altered,
    pp007_unsupported_access,
    pp008_missing_layer_lookup,
    pp010_draft_rank_predicate,
    pp011_aux_states_not_relayed,
)
ALL: dict[str, Rule] = {m.RULE.code: m.RULE for m in (*MODULES, pp100_unused_suppression)}

__all__ = ["ALL", "MODULES", "Context", "Rule"]
