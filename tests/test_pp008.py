"""PP008's own example runs: the `before` snippet in a PP model is reported and fixed into `after`;
a file that imports nothing from `models.utils` gets the absolute import."""

from __future__ import annotations

import textwrap
from pathlib import Path

from contractfix import engine
from contractfix.config import Options

HEAD = '''from torch import nn

from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_layers


class ExampleModel(nn.Module, SupportsPP):
    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer, self.layers = make_layers(2, nn.Linear, prefix="layers")

    def load_weights(self, weights):
'''


def _model(body: str) -> str:
    return HEAD + textwrap.indent(body, " " * 8) + "        return set()\n"


def test_file_without_a_utils_import_gets_the_absolute_import(tmp_path: Path) -> None:
    path = tmp_path / "example.py"
    source = _model("params_dict = dict(self.named_parameters())\nfor name, w in weights:\n"
                    "    params_dict[name].weight_loader(params_dict[name], w)\n")
    path.write_text(source.replace("from vllm.model_executor.models.utils import make_layers\n",
                                   "from vllm.model_executor.models import utils\n")
                    .replace("= make_layers(", "= utils.make_layers("))
    engine.fix([path], Options(select=("PP008",), cache=False))
    fixed = path.read_text()
    assert "from vllm.model_executor.models.utils import is_pp_missing_parameter\n" in fixed
    assert "            if is_pp_missing_parameter(name, self):\n                continue\n" in fixed
