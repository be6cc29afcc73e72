"""Demo stand-ins for vLLM's interfaces (the demo never runs; only its shape matters)."""

from typing import Protocol


class SupportsPP(Protocol):
    def make_empty_intermediate_tensors(self, batch_size, dtype, device): ...

    def forward(self, *, intermediate_tensors): ...
