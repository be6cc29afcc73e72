"""PP011's second shape: a layer index counted from 0 where the aux layer ids are absolute,
reported by release (the rule's own example runs in tests/test_rules.py)."""

from __future__ import annotations

from pathlib import Path

from contractfix import engine
from contractfix.config import Options

RELATIVE = '''from itertools import islice

from torch import nn

from vllm.model_executor.models.interfaces import SupportsEagle3, SupportsPP


class RelativeModel(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors=None):
        hidden_states, aux_hidden_states = input_ids, []
        for idx, layer in enumerate(islice(self.layers, self.start_layer, self.end_layer)):
            hidden_states = layer(positions, hidden_states)
            self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, None)
        return hidden_states


class RelativeForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.model = RelativeModel()
'''


def _tree(tmp_path: Path, interfaces: str | None) -> Path:
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    for package in (models, models.parent, models.parent.parent):
        (package / "__init__.py").write_text("")
    (models / "relative.py").write_text(RELATIVE)
    if interfaces is not None:
        (models / "interfaces.py").write_text(interfaces)
    return models / "relative.py"


def test_relative_index_is_latent_where_the_release_has_the_opt_in(tmp_path: Path) -> None:
    path = _tree(tmp_path, "class SupportsEagle3:\n    supports_aux_hidden_states_over_pp = False\n")
    findings = engine.check([path], Options(select=("PP011",), cache=False)).findings
    assert [(f.cls, f.line, f.fix) for f in findings] == [("RelativeModel", 11, None)]
    assert findings[0].message.startswith("latent: `idx` counts")


def test_relative_index_is_silent_where_the_release_refuses_eagle3_with_pp(tmp_path: Path) -> None:
    """Before vLLM 0.31.0 there is no opt-in: EAGLE-3 with PP>1 is refused at config time."""
    path = _tree(tmp_path, "class SupportsEagle3:\n    pass\n")
    assert engine.check([path], Options(select=("PP011",), cache=False)).findings == []


def test_rebased_or_absolute_index_is_clean(tmp_path: Path) -> None:
    rebased = RELATIVE.replace(
        "            hidden_states = layer(positions, hidden_states)\n",
        "            idx = idx + self.start_layer\n            hidden_states = layer(positions, hidden_states)\n",
    )
    absolute = RELATIVE.replace("self.end_layer)):", "self.end_layer), start=self.start_layer):")
    for source in (rebased, absolute):
        path = tmp_path / "example.py"
        path.write_text(source)
        assert engine.check([path], Options(select=("PP011",), cache=False)).findings == []
