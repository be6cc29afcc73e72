"""PM004's judgement, which PM001 defers to: an entry whose number of shards LoRA cannot fit to
the fused layer of its name.

LoRA picks the layer class that wraps a fused layer by the number of names its entry lists
(`can_replace_layer`, every release read): a `QKVParallelLinear` is wrapped as one slice (one
name or none) or three (q, k, v), and nothing wraps it packed from another number; a
`MergedColumnParallelLinear` gets one LoRA slice per output (`n_slices = len(output_sizes)`) and
the adapter's weights are set per listed name, so a list of another length fails when they are
set (an `IndexError` in 0.15.0, also at warm-up; a `ValueError` from `expand_packed_lora` from
0.21.0). Not judged: one name or none (the layer is wrapped whole), an entry LoRA never reads
(a class that is not a top-level `SupportsLoRA` model, a dotted key, a key changed at run time,
a layer left out of an old runtime's `supported_lora_modules`), a layer of another class or of
an output count the source does not say, a layer name built more than one way, and the entry
the loader stacks by shard ids that span slices (Qwen3.5's `in_proj_qkvz`: two names, four
outputs), which `expand_packed_lora` splits by the adapter's rows from 0.21.0.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....rules.base import Context
from ..facts.fused import Built
from ..facts.packed import Entry
from .packing import Packing


@dataclass(frozen=True)
class Miscount:
    """The fused layers (path, assignment) of the entry's name, all of `outputs` outputs."""

    layers: tuple[tuple[str, Built], ...]
    outputs: int


def miscounted(ctx: Context, packing: Packing, entry: Entry) -> Miscount | None:
    shards = entry.shards
    if (shards is None or len(shards) < 2 or "." in entry.key or not packing.lora or packing.runtime_unknown
            or entry.key in packing.runtime):
        return None
    if packing.lora_modules is not None and entry.key not in packing.lora_modules:
        return None
    layers = packing.layers(ctx, entry.key)
    counts = {b.outputs for _, b in layers if b.kind}
    if not layers or any(not b.kind for _, b in layers) or len(counts) != 1:
        return None  # none found, one built otherwise, or built with several counts
    outputs = counts.pop()
    if outputs is None or outputs == len(shards):
        return None
    if packing.implied.get(entry.key) == shards and packing.slices.get(entry.key) == outputs:
        return None  # shards that span slices, as the loader stacks them: split by the adapter's rows
    return Miscount(tuple(layers), outputs)
