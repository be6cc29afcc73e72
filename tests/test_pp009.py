"""PP009's rank reasoning: a condition is judged on every rank of a PP>1 group under every setting
of its unknown flags, one flag read through different paths is one flag, and an inner model
whose own `__init__` skips its base's does not inherit the base's placeholders."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from contractfix import engine
from contractfix.config import Options
from contractfix.families.pp.facts import ties
from contractfix.families.pp.facts.ties import TRUE, conj, tie_facts, witness

FIRST_ONLY = ("not", ("first",))
UPSTREAM_MISSING = ("not", ("or", (("first",), ("and", (("atom", "tie_word_embeddings"), ("last",))))))
TIED_ON_LAST = conj(("last",), ("atom", "tie_word_embeddings"))


@pytest.mark.parametrize("text", [
    "self.embed_tokens = None", "self.EMBED = x", "Wte", "self.wTE", "\u212a\u0130 no such word", "\u0130mb", "",
])
def test_the_tie_text_test_agrees_with_the_case_blind_pattern(text: str) -> None:
    """`wanted` searches lower-cased text for what the case-blind `EMBEDDING` finds."""
    assert ties.wanted(text) == bool(ties.EMBEDDING.search(text))


def test_first_rank_embedding_meets_a_tie_on_the_last_rank() -> None:
    assert witness(conj(TIED_ON_LAST, FIRST_ONLY)) == "last"


def test_upstream_shape_meets_no_tie_on_any_rank() -> None:
    assert witness(conj(TIED_ON_LAST, UPSTREAM_MISSING)) is None


def test_unconditional_tie_meets_the_head_placeholder_on_the_first_rank() -> None:
    assert witness(conj(TRUE, ("not", ("last",)))) == "first"


def _guards(source: str) -> dict[str, tuple]:
    facts = tie_facts(ast.parse(source).body[0], source.splitlines())
    assert facts is not None
    return {t.form: t.guard for t in facts.ties} | {p.attr: p.guard for p in facts.placeholders}


def test_one_flag_through_self_config_and_getattr() -> None:
    guards = _guards(
        "class M:\n"
        "    def __init__(self, config):\n"
        "        if getattr(config, 'tie_word_embeddings', True) and get_pp_group().is_last_rank:\n"
        "            self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)\n"
        "        if not (get_pp_group().is_first_rank or (self.config.tie_word_embeddings and\n"
        "                get_pp_group().is_last_rank)):\n"
        "            self.embed_tokens = PPMissingLayer()\n"
    )
    assert witness(conj(guards["tie_weights"], guards["embed_tokens"])) is None


def test_a_self_attribute_stands_for_what_init_assigned_to_it() -> None:
    guards = _guards(
        "class M:\n"
        "    def __init__(self, config):\n"
        "        self.tied = config.tie_word_embeddings\n"
        "        self.use_head = should_tie(config, quant_config)\n"
        "        if self.tied:\n"
        "            self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)\n"
        "        if not self.use_head:\n"
        "            self.embed_tokens = PPMissingLayer()\n"
    )
    assert guards["tie_weights"] == ("and", (("atom", "tie_word_embeddings"),))
    assert guards["embed_tokens"] == ("and", (("not", ("call", "should_tie(config, quant_config)")),))


def test_getattr_of_a_constant_name_is_the_flag_not_a_call() -> None:
    guards = _guards(
        "class M:\n"
        "    def __init__(self, config):\n"
        "        if getattr(config, 'tie_word_embeddings', False):\n"
        "            self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)\n"
        "        if getattr(config, name):\n"
        "            self.embed_tokens = PPMissingLayer()\n"
    )
    assert guards["tie_weights"] == ("and", (("atom", "tie_word_embeddings"),))
    assert guards["embed_tokens"] == ("and", (("call", "getattr(config, name)"),))


def test_rank_read_through_a_local() -> None:
    guards = _guards(
        "class M:\n"
        "    def __init__(self, config):\n"
        "        last = get_pp_group().is_last_rank\n"
        "        self.lm_head = Head() if last else PPMissingLayer()\n"
        "        if last:\n"
        "            self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)\n"
    )
    assert witness(conj(guards["tie_weights"], guards["lm_head"])) is None


INNER = '''from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import PPMissingLayer


class BaseModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        if get_pp_group().is_first_rank:
            self.embed_tokens = Embedding(config)
        else:
            self.embed_tokens = PPMissingLayer()


class OwnModel(BaseModel):
    def __init__(self, config):
        {init}
        {build}


class OwnForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config):
        super().__init__()
        self.model = OwnModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = Head(config)
            self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        else:
            self.lm_head = PPMissingLayer()

    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.model(input_ids, positions, intermediate_tensors)
'''


def _codes(tmp_path: Path, init: str, build: str) -> list[str]:
    path = tmp_path / "model.py"
    path.write_text(INNER.format(init=init, build=build))
    report = engine.check([path], Options(select=("PP009",), cache=False))
    assert report.errors == []
    return [f.cls for f in report.findings]


def test_inner_model_that_skips_its_base_init_has_no_base_placeholder(tmp_path: Path) -> None:
    assert _codes(tmp_path, "nn.Module.__init__(self)", "self.embed_tokens = Embedding(config) if config.a else None") == []


def test_inner_model_that_rebuilds_on_every_rank_replaces_the_base_placeholder(tmp_path: Path) -> None:
    assert _codes(tmp_path, "super().__init__(config)", "self.embed_tokens = Embedding(config)") == []


def test_inner_model_that_runs_its_base_init_keeps_the_base_placeholder(tmp_path: Path) -> None:
    assert _codes(tmp_path, "super().__init__(config)", "self.norm = Norm(config)") == ["OwnForCausalLM"]
    assert _codes(tmp_path, "BaseModel.__init__(self, config)", "pass") == ["OwnForCausalLM"]


HELPER_TIE = '''from torch import nn

from vllm.distributed import get_pp_group
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import PPMissingLayer, should_tie


class HelperModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        if get_pp_group().is_first_rank or (config.tie_word_embeddings and get_pp_group().is_last_rank):
            self.embed_tokens = Embedding(config)
        else:
            self.embed_tokens = PPMissingLayer()
{later}


class HelperForCausalLM(nn.Module, SupportsPP):
    def __init__(self, config):
        super().__init__()
        self.model = HelperModel(config)
        if get_pp_group().is_last_rank:
            self.lm_head = Head(config)
            if should_tie(config):
                self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
        else:
            self.lm_head = PPMissingLayer()

    def forward(self, input_ids, positions, intermediate_tensors=None):
        return self.model(input_ids, positions, intermediate_tensors)
'''


@pytest.mark.parametrize(("later", "finding", "note"), [
    ("", False, True),
    ("        if config.drop_embedding:\n            self.embed_tokens = PPMissingLayer()", True, False),
])
def test_a_helper_verdict_is_a_note_unless_another_placeholder_meets_the_tie(
    tmp_path: Path, later: str, finding: bool, note: bool
) -> None:
    """The placeholder the flag avoids is met only if `should_tie` can say yes without the flag:
    a note. A later placeholder the flag does not avoid is met whatever it says: a finding, even
    though the first placeholder met is the noted one."""
    path = tmp_path / "model.py"
    path.write_text(HELPER_TIE.format(later=later))
    report = engine.check([path], Options(select=("PP009",), cache=False))
    assert report.errors == []
    assert [f.cls for f in report.findings] == (["HelperForCausalLM"] if finding else [])
    assert [f.cls for f in report.notes] == (["HelperForCausalLM"] if note else [])
