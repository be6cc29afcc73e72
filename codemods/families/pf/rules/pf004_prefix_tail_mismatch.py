"""PF004 prefix-tail-mismatch: a module assigned to `self.<attr>` is named by a prefix whose last
part is provably not `<attr>` (report only)."""

from __future__ import annotations

from ....findings import Finding
from ....rules.base import Context, ExampleTree, Rule
from ..facts.names import Named
from .tails import Verdict, judge, reaches

BEFORE = '''\
from vllm.model_executor.layers.mamba.short_conv import ShortConv

from .utils import WeightsMapper


class Lfm2ShortConvDecoderLayer(nn.Module):
    def __init__(self, config, layer_idx, model_config, cache_config, quant_config, prefix=""):
        super().__init__()
        self.short_conv = ShortConv(
            config=config,
            dim=config.conv_dim,
            layer_idx=layer_idx,
            model_config=model_config,
            cache_config=cache_config,
            quant_config=quant_config,
            prefix=f"{prefix}.conv",
        )


class Lfm2Model(nn.Module):
    hf_to_vllm_mapper = WeightsMapper(orig_to_new_substr={".conv.": ".short_conv."})
'''

AFTER = BEFORE.replace('prefix=f"{prefix}.conv"', 'prefix=f"{prefix}.short_conv"')

SHORT_CONV = '''\
class ShortConv(nn.Module):
    def __init__(self, config, dim, layer_idx, model_config=None, cache_config=None, quant_config=None, prefix=""):
        super().__init__()
        self.in_proj = MergedColumnParallelLinear(dim, [dim] * 3, quant_config=quant_config, prefix=f"{prefix}.in_proj")
'''

RULE = Rule(
    code="PF004",
    name="prefix-tail-mismatch",
    summary="A module assigned to self.<attr> is built with a prefix whose last part is another name.",
    rationale=(
        "Quantization methods match a layer's ignore list, per-layer config or compressed-tensors "
        "target by the prefix the layer was built with, after mapping the checkpoint's names "
        "through the model's `hf_to_vllm_mapper` onto vLLM's module tree. A module stored as "
        "`self.short_conv` but built with `prefix=f\"{prefix}.conv\"` names every layer below it "
        "`...conv...`, while the weights, the module tree and the mapped lists say `...short_conv...`: "
        "a layer the checkpoint keeps unquantized is built quantized and fails to load, or the "
        "reverse. Reported only where the name is provably wrong: the model's weights mapper maps "
        "the prefix's name onto the attribute's (the lists are rewritten to the attribute's name), "
        "or nothing in the file spells the prefix's name at all (the checkpoint names the module "
        "by its attribute). Not reported: a name the loader renames by hand (the lists keep the "
        "checkpoint's name, which the prefix then matches), a tail that ends in an index, a "
        "callee that does not name its layers by the prefix it is given, and drafters, which name "
        "their inner model apart from the target's. A module built without a `quant_config` or "
        "`vllm_config` is reported as latent: no quantization method reads its name yet. No fix: "
        "renaming the prefix is right only once the checkpoint's names are known."
    ),
    before=BEFORE,
    after=AFTER,
    fix=None,
    tree=ExampleTree(
        example="vllm/model_executor/models/lfm2.py",
        files={
            "vllm/__init__.py": "",
            "vllm/model_executor/__init__.py": "",
            "vllm/model_executor/models/__init__.py": "",
            "vllm/model_executor/models/utils.py": "",
            "vllm/model_executor/layers/__init__.py": "",
            "vllm/model_executor/layers/mamba/__init__.py": "",
            "vllm/model_executor/layers/mamba/short_conv.py": SHORT_CONV,
        },
    ),
)


def check(ctx: Context) -> list[Finding]:
    findings = []
    drafts = {ref.key for ref in ctx.drafts}
    for module, cls in ctx.target_classes():
        facts = cls.tails
        if facts is None or not facts.named or (module.path, cls.name) in drafts:
            continue
        for named in facts.named:
            verdict = judge(ctx, module, named)
            if verdict is not None:
                findings.append(_finding(module.path, cls.name, named, verdict, reaches(module, named)))
    return findings


def _finding(path: str, cls: str, named: Named, verdict: Verdict, quant: bool) -> Finding:
    built = f"an element of self.{named.attr}" if named.element else f"self.{named.attr} = {named.ctor}(...)"
    latent = "" if quant else "latent: "
    why = (
        f"the weights mapper of {verdict.mapper} rewrites the checkpoint's `{verdict.name}` to `{named.attr}` "
        "in the quantization config's lists"
        if verdict.mapper else f"nothing else in the file spells `{verdict.name}` (no mapper, loader or packed "
        f"entry), so the lists name it `{named.attr}` as its weights do"
    )
    reach = "" if quant else f"; no quant_config reaches {named.ctor} yet, so no quantization method reads it"
    return RULE.finding(
        path=path, line=named.line, column=named.column, cls=cls, keys=(named.attr, verdict.name),
        message=f"{latent}{built} is named by prefix={named.text}, whose `{verdict.name}` is not "
        f"`{named.attr}`: quantization matches its layers under another name than their weights; {why}{reach}",
        latent=not quant,
    )
