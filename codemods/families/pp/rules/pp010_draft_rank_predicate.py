"""PP010 draft-rank-predicate: a draft head that tests `is_first_rank` or drops a layer by rank."""

from __future__ import annotations

from pathlib import Path

from ....findings import Evidence, Finding
from ....index import ClassRef
from ....rules.base import Context, ExampleTree, Rule
from ....vllm_names import PP_INTERFACE
from .holders import reach
from .release import release_text

RULE = Rule(
    code="PP010",
    name="draft-rank-predicate",
    summary="A draft head (MTP / EAGLE) branches on `is_first_rank` or splits its layers with `make_layers`.",
    rationale=(
        "Drafters are built on the last PP rank only and see the target's PP group, so there "
        "`get_pp_group().is_first_rank` is False whenever PP>1: an MTP predictor that picks "
        "`embed_tokens = PPMissingLayer()` by rank embeds token ids through an identity, and a forward "
        "that takes the `assert intermediate_tensors is not None` branch fails or drafts garbage "
        "(#46994); `make_layers` keeps only the last rank's share of the head's layers. A "
        "`PPMissingLayer` chosen by `is_last_rank` is harmless there (always True). Reachable wherever the drafter can be built with PP>1: every drafter from vLLM "
        "0.31.0 (drafts run with pipeline_parallel_size=1, `config/speculative.py`), before that "
        "only drafters that pass `supports_pp`. Report only: the right shape depends on how the "
        "head shares the target's embedding."
    ),
    before=(
        "class ToyMultiTokenPredictor(nn.Module):\n"
        "    def __init__(self, *, vllm_config, prefix=\"\"):\n"
        "        super().__init__()\n"
        "        if get_pp_group().is_first_rank:\n"
        "            self.embed_tokens = VocabParallelEmbedding(vocab_size, hidden_size)\n"
        "        else:\n"
        "            self.embed_tokens = PPMissingLayer()\n"
        "\n"
        "    def forward(self, input_ids, positions, hidden_states, intermediate_tensors=None):\n"
        "        ...\n"
    ),
    after=(
        "class ToyMultiTokenPredictor(nn.Module):\n"
        "    def __init__(self, *, vllm_config, prefix=\"\"):\n"
        "        super().__init__()\n"
        "        self.embed_tokens = VocabParallelEmbedding(vocab_size, hidden_size)\n"
        "\n"
        "    def forward(self, input_ids, positions, hidden_states, intermediate_tensors=None):\n"
        "        ...\n"
    ),
    fix=None,
    tree=ExampleTree(
        example="vllm/model_executor/models/toy_mtp.py",
        files={
            "vllm/__init__.py": "",
            "vllm/model_executor/__init__.py": "",
            "vllm/model_executor/models/__init__.py": "",
            "vllm/model_executor/models/registry.py": (
                "_SPECULATIVE_DECODING_MODELS = {\n"
                "    \"ToyMTPModel\": (\"toy_mtp\", \"ToyMultiTokenPredictor\"),\n"
                "}\n"
            ),
        },
    ),
)

DEPTH = 3
DRAFT_PP_ONE = "pipeline_parallel_size=1,"
SPECULATIVE = (("config", "speculative.py"), ("config", "__init__.py"), ("config.py",))
"""Where releases define `SpeculativeConfig`: its own module from 0.11.0, the `config` package
in 0.10.1 and 0.10.2, one `config.py` before."""


def check(ctx: Context) -> list[Finding]:
    every_draft = _drafts_run_at_pp_one(ctx)
    reached: dict[tuple[str, str], tuple[ClassRef, ClassRef]] = {}
    for draft in ctx.drafts:
        if not every_draft and not _supports_pp(ctx, draft):
            continue
        found: set[tuple[str, str]] = set()
        reach(ctx, draft, found, DEPTH)
        for key in sorted(found):
            module = ctx.index.by_path.get(key[0])
            if module is not None and key[1] in module.classes and key not in reached:
                reached[key] = (ClassRef(module, module.classes[key[1]]), draft)
    findings = []
    for ref, draft in reached.values():
        path = ref.module.path
        if not ctx.editable(path):
            continue
        why = "drafts run at PP=1 and see the target's group" if every_draft else "the drafter passes supports_pp"
        for line, column in ref.cls.first_rank_tests:
            findings.append(_finding(ctx, ref, draft, line, column, (
                f"`is_first_rank` in draft head {ref.cls.name} (drafter {draft.cls.name}): the drafter "
                f"lives on the last PP rank, where it is False whenever PP>1, so what it guards (an "
                f"embedding, the first-rank input path) is never taken ({why})"
            ), "rank test"))
        splits = ref.cls.loading.splits if ref.cls.loading else []
        for split in (s for s in splits if s.kind == "make_layers"):
            what = f"`self.{split.attr}`" if split.attr else "a module"
            findings.append(_finding(ctx, ref, draft, split.line, 0, (
                f"{what} = make_layers(...) in draft head {ref.cls.name} (drafter {draft.cls.name}): it "
                f"keeps only the last rank's share of the head's layers ({why})"
            ), "split"))
    return findings


def _finding(ctx: Context, ref: ClassRef, draft: ClassRef, line: int, column: int, message: str,
             role: str) -> Finding:
    path = ref.module.path
    return RULE.finding(path=path, line=line, column=column, cls=ref.cls.name, message=message,
                        evidence=(Evidence(Path(path), line, ctx.line(path, line), role),))


def _drafts_run_at_pp_one(ctx: Context) -> bool:
    """Whether the release's speculative config gives drafts PP=1 (vLLM >= 0.31.0); True when the
    tree has no such config (the newest behaviour)."""
    for parts in SPECULATIVE:
        text = release_text(ctx, *parts)
        if text is not None and "class SpeculativeConfig" in text:
            return DRAFT_PP_ONE in text
    return True


def _supports_pp(ctx: Context, draft: ClassRef) -> bool:
    """vLLM's `supports_pp`: SupportsPP in the MRO and a forward that takes `intermediate_tensors`."""
    if PP_INTERFACE not in ctx.index.base_names(draft):
        return False
    found = ctx.index.find_method(draft, "forward")
    return found is not None and found[1].param("intermediate_tensors") is not None
