"""PF003 class-without-prefix: a module hands its `quant_config` to its layers but takes no `prefix`."""

from __future__ import annotations

from pathlib import Path

from ....facts import ClassFacts, ModuleFacts
from ....findings import Applicability, Finding, Fix
from ....rules.base import Context, Rule
from ..edits import AddPrefix, AddPrefixParameter, Edit
from ..facts.prefixes import Build
from .layers import holder, idiom, missing, prefix_value, takes_prefix, top_level

BEFORE = '''\
class SharedHead(nn.Module):
    def __init__(
        self,
        config: PretrainedConfig,
        quant_config: QuantizationConfig | None = None,
    ) -> None:
        super().__init__()
        self.norm = GemmaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.head = ParallelLMHead(
            config.vocab_size, config.hidden_size, quant_config=quant_config
        )


class Step3p5AMultiTokenPredictorLayer(nn.Module):
    def __init__(self, vllm_config, prefix: str) -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        quant_config = vllm_config.quant_config
        self.shared_head = SharedHead(config=config, quant_config=quant_config)
        self.mtp_block = Step3p5DecoderLayer(vllm_config, prefix=f"{prefix}.mtp_block")
'''

AFTER = '''\
class SharedHead(nn.Module):
    def __init__(
        self,
        config: PretrainedConfig,
        quant_config: QuantizationConfig | None = None,
        prefix: str = "",
    ) -> None:
        super().__init__()
        self.norm = GemmaRMSNorm(config.hidden_size, config.rms_norm_eps)
        self.head = ParallelLMHead(
            config.vocab_size,
            config.hidden_size,
            quant_config=quant_config,
            prefix=f"{prefix}.head",
        )


class Step3p5AMultiTokenPredictorLayer(nn.Module):
    def __init__(self, vllm_config, prefix: str) -> None:
        super().__init__()
        config = vllm_config.model_config.hf_config
        quant_config = vllm_config.quant_config
        self.shared_head = SharedHead(
            config=config, quant_config=quant_config, prefix=f"{prefix}.shared_head"
        )
        self.mtp_block = Step3p5DecoderLayer(vllm_config, prefix=f"{prefix}.mtp_block")
'''

RULE = Rule(
    code="PF003",
    name="class-without-prefix",
    summary="A module hands its quant_config to its layers but takes no prefix to name them by.",
    rationale=(
        "vLLM's contract for a module of a model: it takes a `prefix` and passes its layers "
        "`<prefix>.<attr>`, the names quantization methods match ignore lists and per-layer configs "
        "against. A class whose `__init__` takes a `quant_config` and builds quant-aware layers with it, "
        "but has no `prefix` parameter, names every such layer `\"\"` whatever its parent passes "
        "(the MTP shared heads of DeepSeek, GLM, Step-3.5: a checkpoint that keeps the head in bf16 "
        "gets it quantized and fails to load). The fix adds `prefix: str = \"\"` to `__init__`, passes "
        "each layer its name, and passes the class's own name at every call in the checked files that "
        "builds it as an attribute from a method with a prefix of its own (a parameter, or the "
        "`self.prefix` its class's `__init__` keeps), whether the call hands `quant_config` by name "
        "or by place (Molmo2's `LanguageModelMLP`). Unsafe: calls elsewhere "
        "(other files, plugins) still build it without a prefix until they pass one."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.UNSAFE,
)


def check(ctx: Context) -> list[Finding]:
    builders = _builders(ctx)
    tops = top_level(ctx)
    findings = []
    for module, cls in ctx.target_classes():
        facts = cls.prefixes
        if facts is None or facts.init != "none":
            continue
        layers = [b for b in facts.builds if b.method == "__init__" and missing(b) and takes_prefix(ctx, module, b)]
        if not layers:
            continue
        names = ", ".join(f"self.{b.attr}" if b.attr else f"{b.ctor}(...)" for b in layers)
        callers = builders.get((module.path, cls.name), [])
        fix = _fix(module, cls, layers, callers, tops) if all(b.attr for b in layers) else None
        findings.append(RULE.finding(
            path=module.path, line=cls.line, column=cls.column, cls=cls.name, keys=(cls.name,),
            message=f"{cls.name}.__init__ hands quant_config to {names} but takes no prefix; "
            "quantization sees them as \"\" whatever the parent passes"
            + ("" if fix else "; not auto-fixable: a layer is not assigned to an attribute of its own"),
            fix=fix,
        ))
    return findings


def _builders(ctx: Context) -> dict[tuple[str, str], list[tuple[ModuleFacts, ClassFacts, Build]]]:
    """Class key -> the builds of it in the checked files (handed `quant_config` by name or by place)."""
    found: dict[tuple[str, str], list[tuple[ModuleFacts, ClassFacts, Build]]] = {}
    for module, cls in ctx.target_classes():
        for build in cls.prefixes.builds + cls.prefixes.by_place if cls.prefixes else ():
            if build.ctor and build.ctor.rsplit(".", 1)[-1][:1].isupper():
                for ref in ctx.index.resolve(module, build.ctor):
                    found.setdefault(ref.key, []).append((module, cls, build))
    return found


def _fix(module: ModuleFacts, cls: ClassFacts, layers: list[Build], callers, tops) -> Fix:
    path = Path(module.path)
    style = idiom(module, cls, tops)
    edits: list[Edit] = [AddPrefixParameter(path=path, line=cls.line, column=cls.column, cls=cls.name)]
    edits += [
        AddPrefix(path=path, line=b.line, column=b.column, value=prefix_value(style, b.attr)) for b in layers
    ]
    passed = 0
    for caller_module, caller, build in callers:
        held = holder(caller.prefixes, build) if caller.prefixes else ""
        if build.attr and held and missing(build):
            value = prefix_value(idiom(caller_module, caller, tops), build.attr, held)
            edits.append(AddPrefix(path=Path(caller_module.path), line=build.line, column=build.column, value=value))
            passed += 1
    return Fix(
        applicability=Applicability.UNSAFE,
        description=f"add `prefix: str = \"\"` to {cls.name}.__init__, name its layers by it, "
        f"and pass it at {passed} call(s) that build {cls.name}",
        edits=tuple(edits),
    )
