"""PF002 leading-dot-prefix: `f"{prefix}.<name>"` in a class that vLLM builds with `prefix=""`."""

from __future__ import annotations

from pathlib import Path

from ....findings import Applicability, Finding, Fix
from ....rules.base import Context, ExampleTree, Rule
from ..edits import MaybePrefix
from .layers import top_level, utils_module

BEFORE = '''\
from .utils import maybe_prefix


class MiniCPMForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = MiniCPMModel(vllm_config=vllm_config, prefix=f"{prefix}.model")
        self.lm_head = ParallelLMHead(
            vllm_config.model_config.hf_config.vocab_size,
            vllm_config.model_config.hf_config.hidden_size,
            quant_config=vllm_config.quant_config,
            prefix=maybe_prefix(prefix, "lm_head"),
        )
'''

AFTER = '''\
from .utils import maybe_prefix


class MiniCPMForCausalLM(nn.Module):
    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = MiniCPMModel(vllm_config=vllm_config, prefix=maybe_prefix(prefix, "model"))
        self.lm_head = ParallelLMHead(
            vllm_config.model_config.hf_config.vocab_size,
            vllm_config.model_config.hf_config.hidden_size,
            quant_config=vllm_config.quant_config,
            prefix=maybe_prefix(prefix, "lm_head"),
        )
'''

RULE = Rule(
    code="PF002",
    name="leading-dot-prefix",
    summary='A top-level model names a module f"{prefix}.<name>", which starts with a dot when prefix is "".',
    rationale=(
        "vLLM builds the model class it loads with `prefix=\"\"` (`initialize_model`), drafters "
        "included. There `f\"{prefix}.model\"` is `\".model\"`, and every layer below is named "
        "`.model.layers.0...`: an exact ignore list (`is_layer_skipped`), a per-layer config or a "
        "compressed-tensors target written with the checkpoint's names never matches, so a layer "
        "the checkpoint keeps unquantized is quantized, or the reverse. Reported in the classes that "
        "can be the top level: registered architectures and drafters, their bases whose `__init__` "
        "they run, and the modules they hand their own `prefix` to. The fix writes "
        "`maybe_prefix(prefix, \"<name>\")` (vLLM's helper: no dot when `prefix` is empty), which names "
        "the same module as before whenever `prefix` is not empty."
    ),
    before=BEFORE,
    after=AFTER,
    fix=Applicability.SAFE,
    tree=ExampleTree(
        example="vllm/model_executor/models/minicpm.py",
        files={
            "vllm/__init__.py": "",
            "vllm/model_executor/__init__.py": "",
            "vllm/model_executor/models/__init__.py": "",
            "vllm/model_executor/models/utils.py": "",
            "vllm/model_executor/models/registry.py": (
                "_TEXT_GENERATION_MODELS = {\n"
                "    \"MiniCPMForCausalLM\": (\"minicpm\", \"MiniCPMForCausalLM\"),\n"
                "}\n"
            ),
        },
    ),
)


def check(ctx: Context) -> list[Finding]:
    findings = []
    tops = top_level(ctx)
    for module, cls in ctx.target_classes():
        facts = cls.prefixes
        top = tops.get((module.path, cls.name))
        if facts is None or top is None:
            continue
        for dotted in facts.dotted:
            if dotted.method != "__init__":
                continue
            via = "" if top == cls.name else f" (it runs as part of {top})"
            findings.append(RULE.finding(
                path=module.path, line=dotted.line, column=dotted.column, cls=cls.name, keys=(dotted.text,),
                message=f"{dotted.text} starts with a dot: {cls.name} can be the top-level model{via}, "
                'built with prefix=""; quantization then cannot match the names below it',
                fix=Fix(
                    applicability=Applicability.SAFE, description="write `maybe_prefix(prefix, ...)`",
                    edits=(MaybePrefix(
                        path=Path(module.path), line=dotted.line, column=dotted.column, source=utils_module(module),
                    ),),
                ),
            ))
    return findings
