"""Draft heads the contract tier can build, each from a target whose speculative config turns into it.

vLLM builds a drafter from the target's config (`SpeculativeConfig.hf_config_override` rewrites
its model type and architectures), so the smoke writes the target's tiny config and lets vLLM
derive the drafter's. A drafter not listed here is skipped with the reason: its target, and the
fields the override reads, are known only per model.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Drafter:
    """How to reach a draft head: `target` is the architecture whose config vLLM derives it from,
    `method` the speculative method, `config` the extra config fields the override reads."""

    target: str
    method: str = "mtp"
    config: tuple[tuple[str, object], ...] = ()

    def to_json(self) -> dict:
        return {"target": self.target, "method": self.method, "config": dict(self.config)}


DRAFTERS = {
    # ernie4_5_moe -> ernie_mtp, n_predict from num_nextn_predict_layers (0.33.0
    # config/speculative.py:880-885); the MTP block is a dense LlamaDecoderLayer.
    "ErnieMTPModel": Drafter("Ernie4_5_MoeForCausalLM", config=(("num_nextn_predict_layers", 1),)),
}
