"""A model that reuses TinyLlama from another file: the contract is inherited, and holds."""

from vllm.model_executor.models.tiny_llama import TinyLlamaForCausalLM, TinyLlamaModel


class TinyMimoModel(TinyLlamaModel):
    pass


class TinyMimoForCausalLM(TinyLlamaForCausalLM):
    def __init__(self, *, vllm_config, prefix: str = ""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)
        self.model = TinyMimoModel(vllm_config=vllm_config, prefix=f"{prefix}model")
        self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors
