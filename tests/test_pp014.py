"""PP014: which reads of a whole layer list's entries a skip protects, and when the release makes
the finding a warning."""

from __future__ import annotations

import ast
import textwrap

import pytest

from contractfix.families.pp.facts.layerloops import loop_facts
from contractfix.families.pp.rules.pp014_whole_layer_loop import CALLERS


def _reads(body: str) -> list[str]:
    source = "class Toy:\n    def scan(self):\n" + textwrap.indent(textwrap.dedent(body), " " * 8)
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef)
    facts = loop_facts(node, source.splitlines())
    return [loop.read for loop in facts.loops] if facts else []


@pytest.mark.parametrize("body", [
    "for layer in self.layers:\n    x = None if isinstance(layer, PPMissingLayer) else layer.mlp\n",
    "for layer in self.layers:\n    if not isinstance(layer, ToyLayer):\n        continue\n    layer.mlp.reset()\n",
    "for layer in self.layers:\n    if hasattr(layer, 'mlp') and layer.mlp.enabled:\n        layer.mlp.reset()\n",
    "for layer in self.layers:\n    layer.train(False)\n    layer.to('cpu')\n    kinds.add(layer.__class__.__name__)\n",
    "for layer in self.layers:\n    hooks.append(lambda: layer.mlp)\n",
    "for layer in self.layers[self.start_layer:self.end_layer]:\n    layer.mlp.reset()\n",
    "for layer in islice(self.layers, self.start_layer, self.end_layer):\n    layer.mlp.reset()\n",
    "for i, layer in enumerate(self.layers):\n    total += i\n",
    "names = {layer.name: layer for layer in self.layers if isinstance(layer, ToyLayer)}\n",
    "for layer in self.layers.values():\n    layer.mlp.reset()\n",
    "layers = self.layers\nlayers = layers[self.start_layer:self.end_layer]\nfor layer in layers:\n    layer.mlp.reset()\n",
])
def test_protected_or_not_whole(body: str) -> None:
    assert _reads(body) == []


@pytest.mark.parametrize(("body", "read"), [
    ("for layer in self.layers:\n    if isinstance(layer.mlp, ToyMoe):\n        pass\n", "layer.mlp"),
    ("for layer in self.model.layers:\n    assert isinstance(layer, ToyLayer)\n    layer.mlp.reset()\n", "layer.mlp"),
    ("for layer in self.layers:\n    if isinstance(layer, ToyLayer):\n        pass\n    layer.mlp.reset()\n", "layer.mlp"),
    ("for layer in self.layers:\n    if layer.mlp.enabled and hasattr(layer, 'x'):\n        pass\n", "layer.mlp"),
    ("for start, layer in enumerate(self.layers, start=1):\n    layer.self_attn.reset()\n", "layer.self_attn"),
    ("layers = self.model.layers\nfor layer in layers:\n    layer.mlp.reset()\n", "layer.mlp"),
    ("experts = {layer.mlp.experts for layer in self.language_model.model.layers}\n", "layer.mlp"),
])
def test_unprotected_read(body: str, read: str) -> None:
    assert _reads(body) == [read]


ELASTIC = '''class ParallelConfig:
    def __post_init__(self):
        if self.enable_elastic_ep:
            if not self.enable_eplb:
                raise ValueError("needs EPLB")

            if self.pipeline_parallel_size > 1:
                raise ValueError("no elastic EP with PP")
        if self.pipeline_parallel_size > 1:
            pass
'''


def test_refusal_read_inside_the_elastic_block_only() -> None:
    refusal = CALLERS["update_physical_experts_metadata"][2]
    assert refusal.search(ELASTIC)
    outside = ELASTIC.replace("            if self.pipeline_parallel_size > 1:\n                raise ValueError(\"no elastic EP with PP\")\n", "")
    assert not refusal.search(outside)
