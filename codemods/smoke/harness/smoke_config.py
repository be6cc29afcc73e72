"""Tiny configs: an architecture's config-class defaults, shrunk so that a model builds in a second.

`derive` is pure (plain dicts in and out, unit-tested without vLLM); `defaults_for` finds the
config class through transformers' auto mappings and vLLM's own config registry, and needs both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SIZES = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_attention_groups": 1,
    "head_dim": 16,
    "vocab_size": 128,
    "max_position_embeddings": 256,
    "max_position_embedding": 256,
    "max_seq_len": 256,
    "seq_length": 256,
    "sliding_window": 32,
    "query_pre_attn_scalar": 16,
    "share_q_dim": 32,
    "share_expert_dim": 128,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    "num_experts": 4,
    "num_local_experts": 4,
    "moe_num_experts": 4,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "num_experts_per_tok": 2,
    "moe_top_k": 2,
    "q_lora_rank": 32,
    "kv_lora_rank": 32,
    "qk_rope_head_dim": 16,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
}
"""Tiny values for the size fields a config class has (fields it does not have are not added)."""

WIDE = {"hidden_size": 128, "intermediate_size": 256, "head_dim": 32}
"""Overrides for the engine tier on CPU: vLLM's CPU attention kernels reject head_dim 16."""

LAYER_FIELDS = ("num_hidden_layers", "num_layers", "n_layer")

DENSE_SWITCHES = {
    "moe_layers_enum": lambda layers: str(layers),
    "first_k_dense_replace": lambda layers: layers,
    "mlp_only_layers": lambda layers: list(range(layers)),
}
"""Fields that turn MoE layers into dense ones, and the value that does it for `layers` layers."""

EXPERT_FIELD = re.compile(r"(^|_)(n_routed_experts|num_experts|num_local_experts|moe_num_experts)$")


@dataclass
class TinyConfig:
    """A config.json body and what was changed to get it, said in the report."""

    values: dict
    notes: list[str] = field(default_factory=list)


def derive(defaults: dict, arch: str, model_type: str, layers: int, dense: bool, wide: bool = False) -> TinyConfig:
    """Shrink `defaults` (a config class's `to_dict()`) to `layers` layers and tiny sizes.

    `dense` replaces MoE layers by dense ones through a known switch (the CPU path of vLLM
    0.33 has no torch-native MoE); `wide` uses the engine tier's CPU sizes.
    """
    values = dict(defaults)
    notes: list[str] = []
    sizes = {**SIZES, **WIDE} if wide else SIZES
    for name, tiny in sizes.items():
        if isinstance(values.get(name), int) and not isinstance(values.get(name), bool):
            values[name] = tiny
    old_layers = next((values[f] for f in LAYER_FIELDS if isinstance(values.get(f), int)), None)
    for name in LAYER_FIELDS:
        if isinstance(values.get(name), int):
            values[name] = layers
    if old_layers:
        for name, value in list(values.items()):
            if isinstance(value, (list, tuple)) and len(value) == old_layers and name not in DENSE_SWITCHES:
                values[name] = [value[i % len(value)] for i in range(layers)]
                notes.append(f"{name}: first {layers} per-layer entries kept (cycled)")
    if dense:
        notes.extend(_make_dense(values, layers))
    if "tie_word_embeddings" not in values:
        values["tie_word_embeddings"] = False
        notes.append("tie_word_embeddings=false added (the config class does not define it)")
    values.update({"architectures": [arch], "model_type": model_type, "torch_dtype": "float32"})
    return TinyConfig(values, notes)


def _make_dense(values: dict, layers: int) -> list[str]:
    switched = [name for name in DENSE_SWITCHES if name in values]
    for name in switched:
        values[name] = DENSE_SWITCHES[name](layers)
    if switched:
        return [f"dense variant: {', '.join(f'{n}={values[n]!r}' for n in switched)} (no MoE kernels on CPU)"]
    experts = [n for n, v in values.items() if EXPERT_FIELD.search(n) and isinstance(v, int) and v > 0]
    if experts:
        return [f"MoE layers kept ({', '.join(experts)}): no known dense switch for this config"]
    return []


class NoConfigClass(LookupError):
    """The architecture cannot be smoked: no config class is known for it (remote code?)."""


def defaults_for(arch: str) -> tuple[str, dict, str]:
    """(model_type, default values, how the class was found) of the config class for `arch`."""
    from transformers import CONFIG_MAPPING
    from transformers.models.auto import modeling_auto
    from vllm.transformers_utils.config import _CONFIG_REGISTRY

    how = "transformers' auto mapping"
    model_type = _model_type_from_transformers(arch, modeling_auto)
    if model_type is None:
        how, model_type = "vLLM's config registry", _model_type_from_vllm(arch, _CONFIG_REGISTRY)
    if model_type is None:
        known = [g for g in name_guesses(arch) if g in _CONFIG_REGISTRY or g in CONFIG_MAPPING]
        how, model_type = "guessed from the architecture name", (known[0] if known else None)
    if model_type is None:
        raise NoConfigClass(f"no config class for {arch} in transformers or vLLM (remote code?)")
    cls = _CONFIG_REGISTRY[model_type] if model_type in _CONFIG_REGISTRY else CONFIG_MAPPING[model_type]
    try:
        config = cls()
    except Exception as exc:
        raise NoConfigClass(f"{cls.__name__}() cannot be built with its defaults: {exc}") from exc
    return model_type, config.to_dict(), f"{cls.__name__} ({model_type}, {how})"


def name_guesses(arch: str) -> list[str]:
    """Model types an architecture name suggests, longest first: LlamaBidirectionalModel ->
    llama_bidirectional, llama."""
    stem = re.sub(r"(For[A-Z]\w*|LMHeadModel|Model)$", "", arch)
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z0-9]+", stem)
    return ["_".join(words[:n]).lower() for n in range(len(words), 0, -1)]


def _model_type_from_transformers(arch: str, modeling_auto) -> str | None:
    for name in dir(modeling_auto):
        table = getattr(modeling_auto, name)
        if not (name.endswith("_MAPPING_NAMES") and isinstance(table, dict)):
            continue
        for model_type, classes in table.items():
            if arch == classes or (isinstance(classes, (tuple, list)) and arch in classes):
                return model_type
    return None


def _model_type_from_vllm(arch: str, registry) -> str | None:
    return next((t for t in list(registry) if arch in _architectures(registry, t)), None)


def _architectures(registry, model_type: str) -> tuple[str, ...]:
    """What a vLLM config class (imported lazily) names as its architectures; () if it fails to import."""
    try:
        return tuple(getattr(registry[model_type], "architectures", None) or ())
    except Exception:  # noqa: BLE001 - one broken lazy entry must not hide the others
        return ()
