"""PM001 packed-entry-mismatch: a `packed_modules_mapping` entry whose shards are not those the
loader stacks into the fused layer, in shard-id order."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Finding, Fix
from ....rules.base import Context, Rule, quote_keys
from ..edits import PackedEntry
from ..facts.packed import Entry
from .counts import miscounted
from .packing import Packing, packings

BEFORE = '''\
class BambaMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate_up_proj = MergedColumnParallelLinear(config.hidden_size, [config.intermediate_size] * 2)
        self.down_proj = RowParallelLinear(config.intermediate_size, config.hidden_size)


class BambaForCausalLM(nn.Module, SupportsLoRA):
    packed_modules_mapping = {
        "qkv_proj": ["q_proj", "k_proj", "v_proj"],
        "gate_up_proj": ["up_proj", "down_proj"],
    }

    def load_weights(self, weights):
        stacked_params_mapping = [
            ("qkv_proj", "q_proj", "q"),
            ("qkv_proj", "k_proj", "k"),
            ("qkv_proj", "v_proj", "v"),
            ("gate_up_proj", "gate_proj", 0),
            ("gate_up_proj", "up_proj", 1),
        ]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            for param_name, weight_name, shard_id in stacked_params_mapping:
                if weight_name in name:
                    param = params_dict[name.replace(weight_name, param_name)]
                    param.weight_loader(param, loaded_weight, shard_id)
                    break
'''

AFTER = BEFORE.replace('"gate_up_proj": ["up_proj", "down_proj"]', '"gate_up_proj": ["gate_proj", "up_proj"]')

RULE = Rule(
    code="PM001",
    name="packed-entry-mismatch",
    summary="A packed_modules_mapping entry lists other shards, or another order, than the loader stacks.",
    rationale=(
        "LoRA expands a fused layer into the names its `packed_modules_mapping` entry lists, one "
        "LoRA slice per name in that order (`_register_packed_modules`, `_create_merged_loras_inplace`), "
        "and the quantization ignore lists test each listed name (`is_layer_skipped`). The truth is "
        "what the loader stacks: `(param_name, shard_name, shard_id)` in `stacked_params_mapping`, the "
        "shard id being the slice of the fused output. An entry naming other shards (the typo "
        "`\"gate_up_proj\": [\"up_proj\", \"down_proj\"]` shipped in Bamba and Qwen3-Next MTP) "
        "loads an adapter's `down_proj` into the gate slice and drops its `gate_proj`, or treats a "
        "quantized layer as skipped. The fix writes the shards the loader stacks, ordered by shard id. "
        "An entry that maps a layer to itself (`\"qkv\": [\"qkv\"]`, a checkpoint that holds the fused "
        "layer as is) is left alone: the loader's stacking serves other checkpoints. An entry with "
        "another number of names than its fused layer has outputs, in a model LoRA reads, is PM004's. "
        "An entry the class inherits from a base is reported without a fix: the base's other "
        "subclasses read it too."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
)


def check(ctx: Context) -> list[Finding]:
    findings = []
    for packing in packings(ctx):
        for entry in packing.entries:
            implied = packing.implied.get(entry.key)
            if (implied is None or entry.shards is None or entry.shards == implied or entry.key in packing.runtime
                    or entry.shards == (entry.key,) or not packing.sure(entry.key)):
                continue  # agrees, set at run time, an identity entry, or another loader may stack it
            if not packing.built(ctx, entry.key) or packing.echoed(ctx, entry, entry.key):
                continue  # stacked, but no module of the model builds such a layer; or its base's, reported there
            if miscounted(ctx, packing, entry):
                continue  # a count the layer disagrees with: PM004's
            findings.append(_finding(ctx, packing, entry, implied))
    return findings


def _finding(ctx: Context, packing: Packing, entry: Entry, implied: tuple[str, ...]) -> Finding:
    key, shards = entry.key, entry.shards or ()
    path = packing.ref.module.path
    what = "in another order than" if sorted(shards) == sorted(implied) else "other shards than"
    mapping = packing.mapping
    fix = Fix(
        applicability=Applicability.SAFE,
        description=f'map "{key}" to [{quote_keys(implied)}]',
        edits=(PackedEntry(path=Path(path), line=mapping.line, column=mapping.column, existing=mapping.layout,
                           keys=(key,), shards=implied),),
    ) if mapping is not None and packing.editable(ctx, entry) else None
    line, column = packing.site(entry)
    return RULE.finding(
        path=path, line=line, column=column, cls=packing.ref.cls.name,
        message=f'packed_modules_mapping["{key}"]{packing.inherited(entry)} lists [{quote_keys(shards)}], {what} '
        f"the loader stacks ([{quote_keys(implied)}], by shard id)",
        keys=(key,), fix=fix, evidence=packing.evidence(ctx, key),
    )
