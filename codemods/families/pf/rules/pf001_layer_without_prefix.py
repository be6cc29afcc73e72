"""PF001 layer-without-prefix: a layer built with a real `quant_config` but no usable `prefix`."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Finding, Fix
from ....rules.base import Context, Rule
from ..edits import AddPrefix
from .layers import EMPTY, holder, idiom, missing, prefix_value, takes_prefix, top_level

BEFORE = '''\
class MiMoMTPSharedHead(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.norm = RMSNorm(config.hidden_size)
        self.head = ParallelLMHead(config.vocab_size, config.hidden_size, quant_config=quant_config)
'''

AFTER = '''\
class MiMoMTPSharedHead(nn.Module):
    def __init__(self, config, quant_config=None, prefix=""):
        super().__init__()
        self.norm = RMSNorm(config.hidden_size)
        self.head = ParallelLMHead(
            config.vocab_size,
            config.hidden_size,
            quant_config=quant_config,
            prefix=f"{prefix}.head",
        )
'''

RULE = Rule(
    code="PF001",
    name="layer-without-prefix",
    summary="A layer built with a quant_config gets no prefix, so quantization cannot find it by name.",
    rationale=(
        "Quantization methods decide per layer by the dotted name the layer was built with "
        "(`quant_config.get_quant_method(layer, prefix)`): ignore and exclude lists "
        "(`is_layer_skipped`, `modules_to_not_convert`), per-layer configs, compressed-tensors "
        "targets. A linear, embedding, MoE or attention layer (or a module that names its own layers "
        "by `prefix`) built with `quant_config=` but no `prefix=` (or `prefix=\"\"`) is named `\"\"`: "
        "a checkpoint that keeps it unquantized gets it quantized anyway and fails at load, or a "
        "per-layer scheme never applies (the MTP heads of several models). The fix passes "
        "`prefix=` with the attribute's name, in the file's idiom (`f\"{prefix}.<attr>\"`, or "
        "`maybe_prefix(prefix, \"<attr>\")` where the file writes that or the class can be the top "
        "level); in a helper method without a `prefix` parameter, from the attribute `__init__` keeps "
        "its prefix in before it calls one (`f\"{self.prefix}.mlp\"`, MiniCPM's own line). A layer "
        "built with `quant_config=None` can never be quantized and is not reported."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
)


def check(ctx: Context) -> list[Finding]:
    findings = []
    tops = top_level(ctx)
    for module, cls in ctx.target_classes():
        facts = cls.prefixes
        if facts is None:
            continue
        for build in facts.builds:
            if not missing(build) or not takes_prefix(ctx, module, build):
                continue
            held = holder(facts, build)
            if not held and build.method == "__init__":
                continue  # the class takes no prefix to pass on: PF003
            given = "an empty prefix" if build.prefix in EMPTY else "no prefix"
            name = f"self.{build.attr} = {build.ctor}(...)" if build.attr else f"{build.ctor}(...)"
            fix, why = None, ""
            if not held:
                why = f"{build.method}() takes no prefix to pass on"
            elif not build.attr:
                why = "the layer is not assigned to an attribute of its own"
            else:
                style = "maybe" if (module.path, cls.name) in tops else idiom(module, cls, tops)
                value = prefix_value(style, build.attr, held)
                fix = Fix(
                    applicability=Applicability.SAFE, description=f"pass `prefix={value}`",
                    edits=(AddPrefix(path=Path(module.path), line=build.line, column=build.column, value=value),),
                )
            findings.append(RULE.finding(
                path=module.path, line=build.line, column=build.column, cls=cls.name, keys=(build.attr or build.ctor,),
                message=f"{name} is built with quant_config={build.quant} but {given}; "
                "quantization sees it as \"\" and cannot match its ignore list or per-layer config"
                + (f"; not auto-fixable: {why}" if why else ""),
                fix=fix,
            ))
    return findings
