"""PM003 packed-entry-misnamed: a `packed_modules_mapping` entry under another name than the fused
layer's, listing exactly the shards the loader stacks into that layer; or under a dotted key
(`"self_attn.qkv_proj"`), which names no layer in the form the runtime looks names up in."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Finding, Fix
from ....rules.base import Context, Rule, quote_keys
from ..edits import PackedEntry
from ..facts.packed import Entry
from .packing import Packing, packings

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
        "also be a layer of a checkpoint the loader does not stack. A dotted key "
        "(`\"self_attn.qkv_proj\": [\"self_attn.q_proj\", ...]`, Whisper before #29856, CohereASR) is "
        "never found either, since no last name holds a dot; when its last name is a layer the loader "
        "stacks and no other key ends in it, the fix writes that name and the shards the loader stacks "
        "(`\"qkv_proj\": [\"q_proj\", \"k_proj\", \"v_proj\"]`, as upstream did). Unsafe too: "
        "compressed-tensors' target matching reads keys by suffix, so the plain name reaches every "
        "layer of that name, not the dotted path alone."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.UNSAFE,
)


def check(ctx: Context) -> list[Finding]:
    findings = []
    for packing in packings(ctx):
        if packing.runtime_unknown:
            continue
        for entry in packing.entries:
            if entry.key in packing.implied or entry.key in packing.runtime or entry.shards is None:
                continue
            if "." in entry.key:
                finding = _dotted(ctx, packing, entry)
            elif len(entry.shards) >= 2:
                finding = _misnamed(ctx, packing, entry)
            else:
                finding = None
            if finding is not None:
                findings.append(finding)
    return findings


def _misnamed(ctx: Context, packing: Packing, entry: Entry) -> Finding | None:
    layers = [
        p for p, s in packing.implied.items()
        if s == entry.shards and packing.get(p) is None and packing.built(ctx, p)
    ]
    if len(layers) != 1 or layers[0] in packing.runtime or not packing.sure(layers[0]):
        return None
    layer = layers[0]
    if packing.echoed(ctx, entry, layer):
        return None
    return _finding(
        ctx, packing, entry, layer, entry.shards or (),
        f'lists [{quote_keys(entry.shards or ())}], which the loader stacks into "{layer}": no layer of that name '
        "is expanded",
        f'rename "{entry.key}" to "{layer}" (unsafe: "{entry.key}" may be a layer of another checkpoint)',
    )


def _dotted(ctx: Context, packing: Packing, entry: Entry) -> Finding | None:
    """A dotted key whose last name is a layer the loader stacks and no plain key names."""
    layer = entry.key.rsplit(".", 1)[-1]
    implied = packing.implied.get(layer)
    twins = [e for e in packing.entries if e.key.rsplit(".", 1)[-1] == layer]
    if (implied is None or len(twins) > 1 or layer in packing.runtime or not packing.sure(layer)
            or not packing.built(ctx, layer) or packing.echoed(ctx, entry, layer)):
        return None
    return _finding(
        ctx, packing, entry, layer, implied,
        f'has a dotted key: LoRA and the quantization ignore lists look a layer up by its last name ("{layer}"), '
        f"so the layer the loader stacks from [{quote_keys(implied)}] is not expanded",
        f'rename "{entry.key}" to "{layer}" and list [{quote_keys(implied)}] (unsafe: compressed-tensors '
        f'matches the dotted key by suffix, the plain name every layer named "{layer}")',
        flat=True,
    )


def _finding(ctx: Context, packing: Packing, entry: Entry, layer: str, shards: tuple[str, ...], what: str,
             description: str, flat: bool = False) -> Finding:
    path = packing.ref.module.path
    mapping = packing.mapping
    fix = Fix(
        applicability=Applicability.UNSAFE,
        description=description,
        edits=(PackedEntry(path=Path(path), line=mapping.line, column=mapping.column, existing=mapping.layout,
                           keys=(layer,), shards=shards, rename=entry.key, flat=flat),),
    ) if mapping is not None and packing.editable(ctx, entry) else None
    line, column = packing.site(entry)
    return RULE.finding(
        path=path, line=line, column=column, cls=packing.ref.cls.name,
        message=f'packed_modules_mapping["{entry.key}"]{packing.inherited(entry)} {what}',
        keys=(entry.key,), fix=fix, evidence=packing.evidence(ctx, layer),
    )
