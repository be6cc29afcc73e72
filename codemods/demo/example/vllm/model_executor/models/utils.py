"""Demo stand-ins for vLLM's model utilities."""

import torch

from vllm.sequence import IntermediateTensors


def make_empty_intermediate_tensors_factory(keys, hidden_size):
    def make_empty_intermediate_tensors(batch_size, dtype, device):
        return IntermediateTensors(
            {key: torch.zeros((batch_size, hidden_size), dtype=dtype, device=device) for key in keys}
        )

    return make_empty_intermediate_tensors
