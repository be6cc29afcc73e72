"""PM on real vLLM: the packed-modules mapping LoRA builds for a real model, checked against what
the model's loader stacks, mismatched with the shipped typo and matched once `fix` has run.

The mapping is built as the LoRA manager builds it (`get_packed_modules_mapping` on the model, the
manager's own `_register_packed_modules` for each fused layer); the truth is the loader's
`WeightsMapper`, which maps each registered sub-module's checkpoint name to the fused param and a
shard id: the slot LoRA packs it into must be that shard's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from contractfix import engine
from contractfix.config import Options

from .vllm_copies import make_copy

pytestmark = pytest.mark.vllm

CORRECT = '"gate_up_proj": ["gate_proj", "up_proj"],'
TYPO = '"gate_up_proj": ["up_proj", "down_proj"],'
SCRIPT = '''
import importlib.util
import json
import sys
import types

from torch import nn
from vllm.lora.model_manager import LoRAModelManager
from vllm.model_executor.utils import get_packed_modules_mapping

QKV = {"q": 0, "k": 1, "v": 2}


def mismatches(number, path):
    spec = importlib.util.spec_from_file_location(f"vllm.model_executor.models._pm_smoke{number}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.LlamaForCausalLM.__new__(module.LlamaForCausalLM)
    nn.Module.__init__(model)
    manager = types.SimpleNamespace(packed_modules_mapping=get_packed_modules_mapping(model), packed_modules={})
    for name in ("layers.0.self_attn.qkv_proj", "layers.0.mlp.gate_up_proj"):
        LoRAModelManager._register_packed_modules(manager, name)
    mapper = module.LlamaModel.hf_to_vllm_mapper
    found = []
    for fused, subs in manager.packed_modules.items():
        for slot, sub in enumerate(subs):
            mapped = mapper._map_name_with_shard(sub + ".weight")
            shard = None if mapped is None else QKV.get(mapped[1], mapped[1])
            if mapped is None or mapped[0] != fused + ".weight" or shard != slot:
                found.append([fused, slot, sub])
    return found


print(json.dumps([mismatches(number, path) for number, path in enumerate(sys.argv[1:])]))
'''


def _mismatches(python: Path, *sources: Path) -> list[list]:
    """The mismatches of each source, in one process (importing vLLM is most of its time)."""
    done = subprocess.run([str(python), "-c", SCRIPT, *map(str, sources)], capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_lora_packs_what_the_loader_stacks_once_pm001_is_fixed(vllm_python: Path, vllm_machine, tmp_path: Path) -> None:
    copy = make_copy(vllm_machine.vllm_dir, tmp_path, "llama", "unchanged")
    if CORRECT not in copy.original:
        pytest.skip("this vLLM's llama.py writes its gate_up_proj entry otherwise")
    copy.path.write_text(copy.original.replace(CORRECT, TYPO, 1))

    typo = tmp_path / "typo.py"
    typo.write_text(copy.path.read_text())

    found = engine.check([copy.path], Options(select=("PM",), cache=False)).findings
    assert [(f.rule, f.cls, f.keys) for f in found] == [("PM001", "LlamaForCausalLM", ("gate_up_proj",))]
    engine.fix([copy.path], Options(select=("PM",), cache=False))
    assert copy.path.read_text() == copy.original

    before, after = _mismatches(vllm_python, typo, copy.path)
    assert before == [
        ["layers.0.mlp.gate_up_proj", 0, "layers.0.mlp.up_proj"],
        ["layers.0.mlp.gate_up_proj", 1, "layers.0.mlp.down_proj"],
    ]
    assert after == []
