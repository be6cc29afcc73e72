"""PM004 packed-shard-count: a `packed_modules_mapping` entry whose number of shards is not the
number of outputs of the fused layer of its name, in a model LoRA reads the mapping of."""

from __future__ import annotations

from pathlib import Path

from ....facts import KeyUse, Located
from ....findings import Applicability, Finding, Fix
from ....rules.base import Context, Rule, quote_keys
from ..edits import PackedEntry
from ..facts.fused import QKV
from ..facts.packed import Entry
from .counts import Miscount, miscounted
from .packing import Packing, packings

BEFORE = '''\
class PanguAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.qkv_proj = MergedColumnParallelLinear(
            config.hidden_size, [config.q_size, config.kv_size, config.kv_size]
        )


class PanguForCausalLM(nn.Module, SupportsLoRA):
    packed_modules_mapping = {
        "qkv_proj": ["q_proj", "kv_proj"],
    }

    def load_weights(self, weights):
        stacked_params_mapping = [
            ("qkv_proj", "q_proj", 0),
            ("qkv_proj", "k_proj", 1),
            ("qkv_proj", "v_proj", 2),
        ]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            for param_name, weight_name, shard_id in stacked_params_mapping:
                if weight_name in name:
                    param = params_dict[name.replace(weight_name, param_name)]
                    param.weight_loader(param, loaded_weight, shard_id)
                    break
'''

AFTER = BEFORE.replace('"qkv_proj": ["q_proj", "kv_proj"]', '"qkv_proj": ["q_proj", "k_proj", "v_proj"]')

RULE = Rule(
    code="PM004",
    name="packed-shard-count",
    summary="A packed_modules_mapping entry lists another number of shards than its fused layer has outputs.",
    rationale=(
        "LoRA chooses the layer that wraps a fused layer by the number of names its entry lists "
        "(`can_replace_layer`): a `QKVParallelLinear` is wrapped packed from three (q, k, v) or as "
        "one slice, and nothing wraps it packed from two, so LoRA is silently left off it (an error "
        "with `target_modules`, an assertion in 0.15.0); a `MergedColumnParallelLinear` gets one "
        "LoRA slice per element of `output_sizes` and the adapter's weights one per listed name, "
        "so setting them fails (`IndexError`; from 0.21.0 `expand_packed_lora`'s `ValueError`). "
        "Reported only on a top-level model that declares `SupportsLoRA`, for an entry of two names "
        "or more whose layer every module of the model builds with one known count. Not reported: "
        "the shards the loader stacks by ids that span slices (Qwen3.5's `in_proj_qkvz`: two names "
        "for four outputs, split by the adapter's rows). The fix writes the shards the loader "
        "stacks, ordered by shard id, when there are as many as the layer has outputs; otherwise "
        "the layer or the loader is what differs, and it is reported without one."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
)


def check(ctx: Context) -> list[Finding]:
    findings = []
    for packing in packings(ctx):
        for entry in packing.entries:
            miscount = miscounted(ctx, packing, entry)
            if miscount is not None and not packing.echoed(ctx, entry, entry.key):
                findings.append(_finding(ctx, packing, entry, miscount))
    return findings


def _finding(ctx: Context, packing: Packing, entry: Entry, miscount: Miscount) -> Finding:
    key, shards = entry.key, entry.shards or ()
    path = packing.ref.module.path
    kind = miscount.layers[0][1].kind
    implied = packing.implied.get(key)
    counted = implied is not None and len(implied) == miscount.outputs == packing.slices.get(key)
    mapping = packing.mapping
    fix = Fix(
        applicability=Applicability.SAFE,
        description=f'map "{key}" to [{quote_keys(implied)}]',
        edits=(PackedEntry(path=Path(path), line=mapping.line, column=mapping.column, existing=mapping.layout,
                           keys=(key,), shards=implied),),
    ) if implied and counted and packing.sure(key) and mapping is not None and packing.editable(ctx, entry) else None
    effect = (
        "nothing wraps a QKVParallelLinear packed from that many, so LoRA is left off it" if kind == QKV else
        f"LoRA gives it {miscount.outputs} slices and an adapter {len(shards)} weights, which cannot be set"
    )
    why = ""
    if fix is None:
        why = (
            "; no fix: the entry is the base's, which its other subclasses read too" if packing.inherited(entry) else
            "; no fix: the loader implies no entry for it" if not implied else
            f"; no fix: the loader stacks [{quote_keys(implied)}] into it" if not counted else
            "; no fix: a submodule not resolved may stack it otherwise" if not packing.sure(key) else ""
        )
    line, column = packing.site(entry)
    built = [Located(at, KeyUse(key, b.line)) for at, b in miscount.layers]
    return RULE.finding(
        path=path, line=line, column=column, cls=packing.ref.cls.name,
        message=f'packed_modules_mapping["{key}"]{packing.inherited(entry)} lists {len(shards)} shards '
        f"([{quote_keys(shards)}]), but the {kind} it packs has {miscount.outputs} outputs: {effect}{why}",
        keys=(key,), fix=fix, evidence=ctx.evidence(built, "built") + packing.evidence(ctx, key),
    )
