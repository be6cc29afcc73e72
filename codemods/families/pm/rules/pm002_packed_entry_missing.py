"""PM002 packed-entry-missing: a fused layer the loader stacks from several checkpoint names has
no entry in the model's `packed_modules_mapping`."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Finding, Fix
from ....rules.base import Context, Rule, quote_keys
from ..edits import PackedEntry
from .packing import Packing, packings

BEFORE = '''\
class K2MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_up_proj = MergedColumnParallelLinear(config.hidden_size, [config.intermediate_size] * 2)
        self.down_proj = RowParallelLinear(config.intermediate_size, config.hidden_size)


class K2ForCausalLM(nn.Module, SupportsLoRA):
    packed_modules_mapping = {
        "qkv_proj": ["q_proj", "k_proj", "v_proj"],
    }

    def load_weights(self, weights):
        stacked_params_mapping = [
            (".qkv_proj", ".q_proj", "q"),
            (".qkv_proj", ".k_proj", "k"),
            (".qkv_proj", ".v_proj", "v"),
            (".gate_up_proj", ".gate_proj", 0),
            (".gate_up_proj", ".up_proj", 1),
        ]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            for param_name, weight_name, shard_id in stacked_params_mapping:
                if weight_name in name:
                    param = params_dict[name.replace(weight_name, param_name)]
                    param.weight_loader(param, loaded_weight, shard_id)
                    break
'''

AFTER = BEFORE.replace(
    '        "qkv_proj": ["q_proj", "k_proj", "v_proj"],\n    }',
    '        "qkv_proj": ["q_proj", "k_proj", "v_proj"],\n        "gate_up_proj": ["gate_proj", "up_proj"],\n    }',
)

RULE = Rule(
    code="PM002",
    name="packed-entry-missing",
    summary="A fused layer the loader stacks from several checkpoint names has no packed_modules_mapping entry.",
    rationale=(
        "The loader's `stacked_params_mapping` stacks several checkpoint names into one fused layer "
        "(`MergedColumnParallelLinear`, `QKVParallelLinear`, a fused `*_qkv_a_proj`). Without an entry "
        "for it, LoRA never registers the layer as packed and an adapter's `gate_proj` / `up_proj` "
        "weights match no module, and `is_layer_skipped` looks the fused name up in a quantization "
        "ignore list that names only the shards, so a layer the checkpoint left unquantized is "
        "quantized anyway. The fix adds the entry the loader implies, its shards ordered by shard id. "
        "A class that adds entries to its mapping at run time (`self.packed_modules_mapping[...] = ...` "
        "in `__init__`) is not reported for them, nor is a layer left out of a class's "
        "`supported_lora_modules` (the older LoRA API, as in aphrodite 0.6.1: LoRA reaches only those modules, "
        "and `is_layer_skipped` expands fused layers through a fixed `FUSED_LAYER_NAME_MAPPING`). "
        "A class that reads its base's mapping whole is reported without a fix (it has no dict to "
        "add to); one that merges its own dict over the base's (`Base.packed_modules_mapping | {...}`, "
        "`{**Base.packed_modules_mapping, ...}`) gets the entry in its own dict."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
)


def check(ctx: Context) -> list[Finding]:
    findings = []
    for packing in packings(ctx):
        if not packing.complete or packing.runtime_unknown or not packing.held:
            continue
        listed = {e.shards for e in packing.entries}
        dotted = {e.key.rsplit(".", 1)[-1] for e in packing.entries if "." in e.key}
        for param, implied in packing.implied.items():
            if packing.get(param) or param in packing.runtime or implied in listed or param in dotted:
                continue  # listed, set at run time, or listed under another name or a dotted key (PM003)
            if packing.lora_modules is not None and param not in packing.lora_modules:
                continue  # an old runtime: LoRA reaches only those, quantization has a fixed table
            if param in packing.dropped and param not in packing.local or not packing.built(ctx, param):
                continue  # left out of a base's mapping on purpose, or no such layer
            if packing.echoed(ctx, None, param):
                continue  # the mapping is a base's, checked here with the same loaders' view
            findings.append(_finding(ctx, packing, param, implied))
    return findings


def _finding(ctx: Context, packing: Packing, param: str, implied: tuple[str, ...]) -> Finding:
    path = packing.ref.module.path
    mapping = packing.mapping
    fix = Fix(
        applicability=Applicability.SAFE,
        description=f'add "{param}": [{quote_keys(implied)}]',
        edits=(PackedEntry(path=Path(path), line=mapping.line, column=mapping.column, existing=mapping.layout,
                           keys=(param,), shards=implied),),
    ) if mapping is not None and packing.editable(ctx) and packing.sure(param) else None
    source = "" if packing.held_by is None else f", inherited from {packing.held_by.header.name},"
    why = "" if fix else (
        "; no fix: a submodule not resolved may stack it otherwise" if not packing.sure(param) else
        "; no fix: the class has no mapping of its own to add it to" if mapping is None else
        "; no fix: its mapping is not a dict literal" if not mapping.literal else ""
    )
    line, column = packing.site()
    return RULE.finding(
        path=path, line=line, column=column, cls=packing.ref.cls.name,
        message=f'the loader stacks "{param}" from [{quote_keys(implied)}] but packed_modules_mapping{source} '
        f"has no entry for it (LoRA and quantization ignore lists cannot expand it){why}",
        keys=(param,), fix=fix, evidence=packing.evidence(ctx, param),
    )
