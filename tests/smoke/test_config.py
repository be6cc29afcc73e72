"""Tiny-config derivation from a config class's defaults (the pure part of the harness)."""

from __future__ import annotations

from contractfix.smoke.harness.smoke_config import derive, name_guesses

LLAMA_LIKE = {
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 32000,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "use_cache": True,
}


def test_sizes_shrink_only_fields_the_class_has() -> None:
    tiny = derive(LLAMA_LIKE, "LlamaForCausalLM", "llama", layers=3, dense=True)
    values = tiny.values
    assert (values["hidden_size"], values["num_attention_heads"], values["head_dim"]) == (64, 4, 16)
    assert values["num_attention_heads"] * values["head_dim"] == values["hidden_size"]
    assert values["num_hidden_layers"] == 3
    assert values["vocab_size"] == 128 and values["num_key_value_heads"] == 2
    assert values["rms_norm_eps"] == 1e-6 and values["use_cache"] is True
    assert values["tie_word_embeddings"] is True, "a value the class defines is kept"
    assert "moe_intermediate_size" not in values and "sliding_window" not in values
    assert values["architectures"] == ["LlamaForCausalLM"] and values["model_type"] == "llama"
    assert tiny.notes == []
    assert LLAMA_LIKE["hidden_size"] == 4096, "the defaults are not modified"


def test_missing_tie_word_embeddings_is_added_and_said() -> None:
    defaults = {k: v for k, v in LLAMA_LIKE.items() if k != "tie_word_embeddings"}
    tiny = derive(defaults, "Step3TextForCausalLM", "step3_text", layers=2, dense=True)
    assert tiny.values["tie_word_embeddings"] is False
    assert any("tie_word_embeddings" in n for n in tiny.notes)


def test_per_layer_lists_follow_the_layer_count() -> None:
    defaults = {**LLAMA_LIKE, "num_hidden_layers": 4,
                "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]}
    tiny = derive(defaults, "Gemma3ForCausalLM", "gemma3_text", layers=3, dense=True)
    assert tiny.values["layer_types"] == ["sliding_attention", "full_attention", "sliding_attention"]
    assert any("layer_types" in n for n in tiny.notes)


def test_moe_becomes_dense_on_cpu_through_a_known_switch() -> None:
    defaults = {**LLAMA_LIKE, "moe_layers_enum": (4, 5, 6), "moe_num_experts": 48, "moe_top_k": 3,
                "moe_intermediate_size": 5120}
    cpu = derive(defaults, "Step3TextForCausalLM", "step3_text", layers=3, dense=True)
    assert cpu.values["moe_layers_enum"] == "3", "an index no layer has: every layer is dense"
    assert cpu.values["moe_num_experts"] == 4 and cpu.values["moe_top_k"] == 2
    assert any(n.startswith("dense variant: moe_layers_enum") for n in cpu.notes)
    gpu = derive(defaults, "Step3TextForCausalLM", "step3_text", layers=3, dense=False)
    assert gpu.values["moe_layers_enum"] == (4, 5, 6)
    assert not any("dense" in n for n in gpu.notes)


def test_moe_without_a_known_switch_is_kept_and_said() -> None:
    defaults = {**LLAMA_LIKE, "num_local_experts": 8, "num_experts_per_tok": 2}
    tiny = derive(defaults, "MixtralForCausalLM", "mixtral", layers=2, dense=True)
    assert tiny.values["num_local_experts"] == 4
    assert any("MoE layers kept (num_local_experts)" in n for n in tiny.notes)


def test_wide_sizes_for_the_cpu_engine() -> None:
    tiny = derive(LLAMA_LIKE, "LlamaForCausalLM", "llama", layers=2, dense=True, wide=True)
    assert (tiny.values["hidden_size"], tiny.values["head_dim"]) == (128, 32)


def test_name_guesses_go_from_long_to_short() -> None:
    assert name_guesses("LlamaBidirectionalModel") == ["llama_bidirectional", "llama"]
    assert name_guesses("Step3TextForCausalLM") == ["step3_text", "step3"]
    assert name_guesses("GPT2LMHeadModel") == ["gpt2"]
    assert name_guesses("Qwen2MoeForCausalLM") == ["qwen2_moe", "qwen2"]
