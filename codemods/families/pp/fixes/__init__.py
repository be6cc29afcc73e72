"""One small libcst transformer per PP kind of edit (`..edits`), registered by the edit's type."""

from __future__ import annotations

from .add_factory_keys import AddFactoryKeys
from .aux_opt_out import AuxOptOut
from .clone_dict_entry import CloneDictEntry
from .default_none import DefaultNone
from .early_return import EarlyReturn
from .insert_delegation import InsertDelegation
from .key_guard import KeyGuard
from .missing_guard import MissingGuard
from .remove_factory_keys import RemoveFactoryKeys
from .skip_placeholder import SkipPlaceholder
from .tensors_access import TensorsAccess
from .tied_embedding import TiedEmbedding, TieOnLastRank

TRANSFORMERS = (
    AddFactoryKeys, AuxOptOut, CloneDictEntry, DefaultNone, EarlyReturn, InsertDelegation, KeyGuard, MissingGuard,
    RemoveFactoryKeys, SkipPlaceholder, TensorsAccess, TiedEmbedding, TieOnLastRank,
)
