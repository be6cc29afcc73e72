"""Copies of the installed vLLM's model files, made at test time (no vLLM code is stored here),
in temp trees shaped like a vLLM checkout, with seeded PP bugs, committed to a throwaway git repo."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import git

BOT = git.Actor("smoke test", "smoke@example.invalid")
MODELS = {"llama": "LlamaForCausalLM", "step3_text": "Step3TextForCausalLM", "granite": "GraniteForCausalLM",
          "gemma3": "Gemma3ForCausalLM", "mixtral": "MixtralForCausalLM"}
DRAFTERS = {"ernie_mtp": "ErnieMTPModel"}
"""Draft heads: smoked as the last PP rank builds them, not as pipelines (their own cases)."""
FACTORY_KEYS = '["hidden_states", "residual"], config.hidden_size'
ENTRY_PARAM = "intermediate_tensors: IntermediateTensors | None = None,"
EMBED = (
    "        self.embed_tokens = VocabParallelEmbedding(\n"
    "            config.vocab_size,\n"
    "            config.hidden_size,\n"
    "        )\n"
)
WEIGHT_GUARD = (
    "                        if is_pp_missing_parameter(name, self):\n"
    "                            continue\n"
    "                        param = params_dict[name]\n"
    "                        weight_loader = getattr(\n"
)
TIED_BRANCH = (
    "        if get_pp_group().is_first_rank or (\n"
    "            config.tie_word_embeddings and get_pp_group().is_last_rank\n"
    "        ):\n"
)


def no_residual(text: str, cls: str) -> str:
    return _once(text, FACTORY_KEYS, '["hidden_states"], config.hidden_size')


def extra_key(text: str, cls: str) -> str:
    return _once(text, FACTORY_KEYS, '["hidden_states", "residual", "aux"], config.hidden_size')


def no_default(text: str, cls: str) -> str:
    """Drop `= None` from the entry class's forward only (inner forwards keep theirs)."""
    start = text.index(f"\nclass {cls}(")
    return text[:start] + _once(text[start:], ENTRY_PARAM, ENTRY_PARAM.replace(" = None", ""), first=True)


def no_weight_guard(text: str, cls: str) -> str:
    """Drop the rank skip before the loader's last `params_dict[name]` (step3_text's fallback branch)."""
    return _once(text, WEIGHT_GUARD, WEIGHT_GUARD.split("\n", 2)[2])


def embed_by_rank(text: str, cls: str) -> str:
    """PP010's shape: the drafter builds its embedding on the first rank only (an identity elsewhere),
    though vLLM builds drafters on the last rank."""
    text = _once(text, "from vllm.config import VllmConfig\n",
                 "from vllm.config import VllmConfig\nfrom vllm.distributed import get_pp_group\n")
    text = _once(text, "from .utils import AutoWeightsLoader, WeightsMapper, maybe_prefix",
                 "from .utils import AutoWeightsLoader, PPMissingLayer, WeightsMapper, maybe_prefix")
    return _once(text, EMBED, "        if get_pp_group().is_first_rank:\n"
                 + "".join(f"    {line}\n" for line in EMBED.splitlines())
                 + "        else:\n            self.embed_tokens = PPMissingLayer()\n")


def first_rank_embed(text: str, cls: str) -> str:
    """PP010's other shape (#46994's): the predictor embeds the token ids on the first rank only, so
    on the last rank, where vLLM builds it, its layer gets no embeddings."""
    text = _once(text, "from vllm.config import VllmConfig\n",
                 "from vllm.config import VllmConfig\nfrom vllm.distributed import get_pp_group\n")
    return _once(text, "        if inputs_embeds is None:\n            inputs_embeds = self.embed_tokens(input_ids)\n",
                 "        if inputs_embeds is None and get_pp_group().is_first_rank:\n"
                 "            inputs_embeds = self.embed_tokens(input_ids)\n")


def first_rank_embedding(text: str, cls: str) -> str:
    """Build the embedding on the first rank only, though the wrapper ties lm_head to it on the
    last (Step1 before review, #32511)."""
    return _once(text, TIED_BRANCH, "        if get_pp_group().is_first_rank:\n")


def unchanged(text: str, cls: str) -> str:
    return text


def _once(text: str, old: str, new: str, first: bool = False) -> str:
    count = text.count(old)
    assert count == 1 or (first and count >= 1), f"expected {old!r} once in the vLLM file, found {count}"
    return text.replace(old, new, 1)


MUTATIONS = {"no-residual": no_residual, "no-default": no_default, "extra-key": extra_key,
             "no-weight-guard": no_weight_guard, "first-rank-embedding": first_rank_embedding}
GENERIC = ("llama", "step3_text")
ONLY = {"no-weight-guard": ("step3_text",), "first-rank-embedding": ("granite",)}
"""Mutations that apply to some models only (the text they change is theirs); the others apply to
`GENERIC` (granite is there for its tied embedding)."""
UNTIED = {"Step3TextForCausalLM"}
"""Architectures whose wrapper never ties `lm_head`: the tied-embeddings check skips them."""
UNSAFE = {"first-rank-embedding"}
"""Mutations whose fix is unsafe: `fix --unsafe-fixes` restores them."""
DRAFT_MUTATIONS = {"embed-by-rank": embed_by_rank, "first-rank-embed": first_rank_embed}
"""Mutations of a draft head (DRAFTERS): report-only bugs (PP010), so no fixed copies."""


@dataclass
class Copy:
    model: str
    mutation: str
    path: Path
    original: str

    @property
    def arch(self) -> str:
        return {**MODELS, **DRAFTERS}[self.model]


def make_copy(installed: Path, root: Path, model: str, mutation: str) -> Copy:
    """`root`/vllm/model_executor/models/ from the installed vLLM at `installed`, with `model`'s
    file mutated, committed."""
    models = root / "vllm" / "model_executor" / "models"
    shutil.copytree(installed / "model_executor" / "models", models, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    for package in ("vllm", "vllm/model_executor"):
        shutil.copyfile(installed.parent / package / "__init__.py", root / package / "__init__.py")
    path = models / f"{model}.py"
    original = path.read_text()
    mutations = {**MUTATIONS, **DRAFT_MUTATIONS, "unchanged": unchanged}
    path.write_text(mutations[mutation](original, {**MODELS, **DRAFTERS}[model]))
    commit(path, f"{model}: {mutation}")
    return Copy(model, mutation, path, original)


def commit(path: Path, message: str) -> None:
    repo = git.Repo.init(path.parents[3]) if not (path.parents[3] / ".git").exists() else git.Repo(path.parents[3])
    repo.index.add([str(path)])
    repo.index.commit(message, author=BOT, committer=BOT)
