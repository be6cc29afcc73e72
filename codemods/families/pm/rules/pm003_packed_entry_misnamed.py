"""PM003 packed-entry-misnamed: a `packed_modules_mapping` entry under another name than the fused
layer's, listing exactly the shards the loader stacks into that layer."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Finding, Fix
from ....rules.base import Context, Rule, quote_keys
from ..edits import PackedEntry
from .packing import packings

BEFORE = '''\
class Phi3SmallSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.qkv_proj = QKVParallelLinear(config.hidden_size, config.head_dim, config.num_attention_heads)


class Phi3SmallForCausalLM(nn.Module, SupportsLoRA):
    packed_modules_mapping = {
        "qkv": ["q_proj", "k_proj", "v_proj"],
    }

    def load_weights(self, weights):
        stacked_params_mapping = [
            ("qkv_proj", "q_proj", "q"),
            ("qkv_proj", "k_proj", "k"),
            ("qkv_proj", "v_proj", "v"),
        ]
        params_dict = dict(self.named_parameters())
        for name, loaded_weight in weights:
            for param_name, weight_name, shard_id in stacked_params_mapping:
                if weight_name in name:
                    param = params_dict[name.replace(weight_name, param_name)]
                    param.weight_loader(param, loaded_weight, shard_id)
                    break
'''

AFTER = BEFORE.replace('"qkv": ["q_proj"', '"qkv_proj": ["q_proj"')

RULE = Rule(
    code="PM003",
    name="packed-entry-misnamed",
    summary="A packed_modules_mapping entry is keyed by another name than the fused layer the loader stacks.",
    rationale=(
        "LoRA and `is_layer_skipped` look a fused layer up by its last name (`qkv_proj` of "
        "`model.layers.0.self_attn.qkv_proj`). An entry under another name (`qkv` for a layer the "
        "loader stacks as `qkv_proj`) is never found: the layer is not expanded, as if it had no entry. "
        "When the entry lists exactly the shards the loader stacks into one layer that has no entry "
        "of its own, the fix renames the key to that layer's name. It is unsafe: the old name may "
        "also be a layer of a checkpoint the loader does not stack."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.UNSAFE,
)


def check(ctx: Context) -> list[Finding]:
    findings = []
    for packing in packings(ctx):
        mapping = packing.mapping
        if packing.runtime_unknown:
            continue
        for entry in mapping.entries:
            if (entry.key in packing.implied or entry.key in packing.runtime or entry.shards is None
                    or len(entry.shards) < 2):
                continue
            layers = [
                p for p, s in packing.implied.items()
                if s == entry.shards and mapping.get(p) is None and packing.built(ctx, p)
            ]
            if len(layers) != 1 or layers[0] in packing.runtime or not packing.sure(layers[0]):
                continue
            layer = layers[0]
            path = packing.ref.module.path
            fix = Fix(
                applicability=Applicability.UNSAFE,
                description=f'rename "{entry.key}" to "{layer}" '
                f'(unsafe: "{entry.key}" may be a layer of another checkpoint)',
                edits=(PackedEntry(path=Path(path), line=mapping.line, column=mapping.column,
                                   existing=tuple(e.key for e in mapping.entries), keys=(layer,),
                                   shards=entry.shards, rename=entry.key),),
            ) if ctx.editable(path) and mapping.complete else None
            findings.append(RULE.finding(
                path=path, line=entry.line, column=entry.column, cls=packing.ref.cls.name,
                message=f'packed_modules_mapping["{entry.key}"] lists [{quote_keys(entry.shards)}], which the '
                f'loader stacks into "{layer}": no layer of that name is expanded',
                keys=(entry.key,), fix=fix, evidence=packing.evidence(ctx, layer),
            ))
    return findings
