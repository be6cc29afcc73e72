"""PF004's proofs, one by one: what a weights mapper entry renames, what counts as a spelling of a
name in a file's strings, and the facts read from a class."""

from __future__ import annotations

import ast

import pytest

from contractfix.families.pf.facts.names import Rename, name_facts
from contractfix.families.pf.rules.tails import maps, spelled


@pytest.mark.parametrize(("rename", "old", "new"), [
    (Rename("substr", ".conv.", ".short_conv."), "conv", "short_conv"),
    (Rename("prefix", "language.", "language_model."), "language", "language_model"),
    (Rename("prefix", "model.vision_embedding.0", "vision_embedding.transformer"), "0", "transformer"),
    (Rename("substr", "attention.qkv_proj", "attn.qkv_proj"), "attention", "attn"),
    (Rename("prefix", "language_model.model", "language_model"), "language_model.model", "language_model"),
    (Rename("regex", r"\.blocks\.", ".layers."), "blocks", "layers"),
])
def test_a_rename_of_the_name_onto_the_attribute_proves_it(rename: Rename, old: str, new: str) -> None:
    assert maps(rename, old, new)


@pytest.mark.parametrize(("rename", "old", "new"), [
    (Rename("substr", "mamba", "mamba.mamba"), "mixer", "mamba"),
    (Rename("prefix", "model.", ""), "model", "transformer"),
    (Rename("substr", ".fc1.", ".mlp.fc1."), "fc1", "dense_in"),
    (Rename("substr", ".conv.", ".short_conv."), "short_conv", "conv"),
    (Rename("substr", "attention.o_proj", "attn.out_proj"), "attention", "attn"),
    (Rename("regex", "(", "x"), "blocks", "layers"),
])
def test_other_renames_prove_nothing(rename: Rename, old: str, new: str) -> None:
    assert not maps(rename, old, new)


@pytest.mark.parametrize(("text", "found"), [
    (b'prefix=f"{prefix}.mixer"\n', False),
    (b'prefix=maybe_prefix(prefix, "mixer")\n', False),
    (b"x = self.mixer.in_proj(y)\n", False),
    (b'name = name.replace(".mixer.", ".mamba.")\n', True),
    (b"stacked = [('.mamba', 'mixer', 0)]\n", True),
    (b'prefix=f"{prefix}.mixer"  # the checkpoint\'s "mixer"\n', True),
    (b'x = "a \\" .mixer." \n', True),
    (b'text = "mixers.x"\n', False),
])
def test_a_name_is_spelled_only_in_a_string_other_than_a_prefix(text: bytes, found: bool) -> None:
    assert spelled(text, "mixer") is found


def _facts(source: str):
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    return name_facts(node, source.splitlines())


def test_the_facts_hold_direct_builds_container_elements_and_the_mapper() -> None:
    facts = _facts(
        "class A(nn.Module):\n"
        "    hf_to_vllm_mapper = WeightsMapper(orig_to_new_substr={'.conv.': '.short_conv.', 'x': None})\n"
        "    def __init__(self, vllm_config, prefix=''):\n"
        "        self.short_conv = ShortConv(vllm_config.quant_config, prefix=f'{prefix}.conv')\n"
        "        self.layers = nn.ModuleList([B(cache_config=c, prefix=f'{prefix}.blocks.{i}') for i in r])\n"
        "        self.lm = init_vllm_registered_model(vllm_config=vllm_config, prefix=maybe_prefix(prefix, 'lm'))\n"
        "        self.rest = C(prefix=prefix)\n"
    )
    assert facts is not None and facts.takes_prefix
    assert [(n.attr, n.ctor, n.tail, n.head, n.element, n.configs) for n in facts.named] == [
        ("short_conv", "ShortConv", "conv", "conv", False, ("quant_config",)),
        ("layers", "B", "", "blocks", True, ("cache_config",)),
        ("lm", "init_vllm_registered_model", "lm", "lm", False, ("vllm_config",)),
    ]
    assert facts.renames == (Rename("substr", ".conv.", ".short_conv."),)
