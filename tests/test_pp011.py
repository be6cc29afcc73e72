"""PP011's own example runs: the `before` class, under an opted-in base and an EAGLE-3 + PP model,
is reported and fixed into `after` (upstream's MiMoModel shape)."""

from __future__ import annotations

from pathlib import Path

from contractfix import engine
from contractfix.config import Options
from contractfix.rules import ALL

HEAD = '''from torch import nn

from vllm.model_executor.models.interfaces import SupportsEagle3, SupportsPP


class Qwen2Model(nn.Module):
    supports_aux_hidden_states_over_pp = True


class MiMoForCausalLM(nn.Module, SupportsPP, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.model = MiMoModel()


'''


def test_rule_example_is_reported_and_fixed_into_after(tmp_path: Path) -> None:
    rule = ALL["PP011"]
    path = tmp_path / "example.py"
    path.write_text(HEAD + rule.before)
    options = Options(select=("PP011",), cache=False)
    assert [f.cls for f in engine.check([path], options).findings] == ["MiMoModel"]
    engine.fix([path], options)
    assert path.read_text() == HEAD + rule.after
    assert engine.check([path], options).findings == []
