"""Demo registry: the architectures of this example tree (same shape as vLLM's)."""

_TEXT_GENERATION_MODELS = {
    "TinyLlamaForCausalLM": ("tiny_llama", "TinyLlamaForCausalLM"),
    "TinyMimoForCausalLM": ("tiny_mimo", "TinyMimoForCausalLM"),
    "StepLiteForCausalLM": ("step_lite", "StepLiteForCausalLM"),
}

_EMBEDDING_MODELS = {
    "GemmaLiteModel": ("gemma_lite", "GemmaLiteModel"),
}

_VLLM_MODELS = {
    **_TEXT_GENERATION_MODELS,
    **_EMBEDDING_MODELS,
}
