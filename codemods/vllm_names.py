"""vLLM's names the contract is made of, in one place: what the analysis matches, what the
fixes write and where the registry is. A rename in vLLM is a change here."""

from __future__ import annotations

from pathlib import Path

PRODUCER = "make_empty_intermediate_tensors"
"""The model attribute (or method) the runner calls for the receive buffers of a non-first rank."""
FACTORY = "make_empty_intermediate_tensors_factory"
"""`vllm.model_executor.models.utils`' helper that builds a producer from a key list."""
PARAM = "intermediate_tensors"
"""The forward parameter that carries the previous rank's tensors."""
TENSORS_CLASS = "IntermediateTensors"
TENSORS_FIELD = "tensors"
"""`IntermediateTensors`' underlying dict."""
PP_INTERFACE = "SupportsPP"
LAST_RANK = "is_last_rank"
FIRST_RANK = "is_first_rank"

MODELS_PACKAGE = "vllm.model_executor.models"
REGISTRY = Path("vllm/model_executor/models/registry.py")
OLD_REGISTRY = Path("vllm/model_executor/models/__init__.py")
"""Where the tables were before `registry.py` (vLLM <= 0.6.1; forks of that era keep them in their
`models/__init__.py`, aphrodite's in `aphrodite/modeling/models/__init__.py`)."""
REGISTRY_TABLE_SUFFIX = "_MODELS"
"""Module-level dicts of the registry whose name ends so map architectures to (module, class)."""
PP_LIST = "_PP_SUPPORTED_MODELS"
"""Before `SupportsPP` (vLLM <= 0.6.1), the list in `vllm/config.py` of the architectures allowed
to run with PP>1."""
DRAFT_TABLE = "SPECULATIVE"
"""Tables whose name holds this list draft heads (`_SPECULATIVE_DECODING_MODELS`)."""
SPECULATIVE_TABLE = "_SPECULATIVE_DECODING_MODELS"
TEXT_TABLE = "_TEXT_GENERATION_MODELS"
"""vLLM's table of text models: a registry that has it is vLLM's, kept by a fork that may have
renamed the package (aphrodite's `aphrodite/model_executor/models/registry.py`)."""
OLD_TEXT_TABLE = "_GENERATION_MODELS"
"""The same table in the registries before `registry.py` (`OLD_REGISTRY`)."""
TRANSFORMERS_TABLES = ("_TRANSFORMERS_SUPPORTED_MODELS", "_TRANSFORMERS_BACKEND_MODELS")
MULTIMODAL_TABLE = "_MULTIMODAL_MODELS"
