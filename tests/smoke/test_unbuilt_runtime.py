"""PP013's premise on real vLLM: `AutoWeightsLoader` skips a `PPMissingLayer` child and a name it
is told to ignore, and stops at a weight whose module this rank left as None."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.vllm

SCRIPT = '''
import json
import torch
from torch import nn
from vllm.model_executor.models.utils import AutoWeightsLoader, PPMissingLayer


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(2))


class Model(nn.Module):
    def __init__(self, other):
        super().__init__()
        self.norm = Mixer()
        self.mixer = {"built": Mixer, "none": lambda: None, "placeholder": PPMissingLayer}[other]()


def load(other, **skips):
    weights = [("norm.weight", torch.ones(2)), ("mixer.weight", torch.ones(2))]
    try:
        return sorted(AutoWeightsLoader(Model(other), **skips).load_weights(weights))
    except ValueError as error:
        return "ValueError: " + str(error).split(".")[0]


print(json.dumps({
    "built": load("built"),
    "none": load("none"),
    "placeholder": load("placeholder"),
    "none, ignored": load("none", ignore_unexpected_prefixes=["mixer."]),
}))
'''


def test_a_module_left_as_none_stops_the_load_unless_its_name_is_ignored(vllm_python: Path) -> None:
    done = subprocess.run([str(vllm_python), "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {
        "built": ["mixer.weight", "norm.weight"],
        "none": "ValueError: There is no module or parameter named 'mixer' in Model",
        "placeholder": ["norm.weight"],
        "none, ignored": ["norm.weight"],
    }
