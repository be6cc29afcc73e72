"""PM on real vLLM: the packed-modules mapping LoRA builds for a real model, checked against what
the model's loader stacks, mismatched with the shipped typo and matched once `fix` has run.

The mapping is built as the LoRA manager builds it (`get_packed_modules_mapping` on the model, the
manager's own `_register_packed_modules` for each fused layer); the truth is the loader's
`WeightsMapper`, which maps each registered sub-module's checkpoint name to the fused param and a
shard id: the slot LoRA packs it into must be that shard's.

PM004's count is checked as the LoRA manager's `from_layer` checks it: every LoRA layer class is
asked whether it takes the model's `QKVParallelLinear` packed from the entry's names; with a name
dropped none does (the layer is left without LoRA), once fixed `MergedQKVParallelLinearWithLoRA`."""

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
QKV_ENTRY = '"qkv_proj": ["q_proj", "k_proj", "v_proj"],'
SHORT_QKV = '"qkv_proj": ["q_proj", "kv_proj"],'
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


WRAPPERS = '''
import importlib.util
import json
import sys
import types

from torch import nn
from vllm.lora.utils import _all_lora_classes
from vllm.model_executor.utils import get_packed_modules_mapping


def wrappers(number, path):
    spec = importlib.util.spec_from_file_location(f"vllm.model_executor.models._pm_smoke{number}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.LlamaForCausalLM.__new__(module.LlamaForCausalLM)
    nn.Module.__init__(model)
    packed = get_packed_modules_mapping(model)["qkv_proj"]
    layer = module.QKVParallelLinear.__new__(module.QKVParallelLinear)
    nn.Module.__init__(layer)
    config = types.SimpleNamespace(fully_sharded_loras=False)
    return [
        cls.__name__ for cls in _all_lora_classes
        if cls.can_replace_layer(source_layer=layer, lora_config=config, packed_modules_list=packed, model_config=None)
    ]


print(json.dumps([wrappers(number, path) for number, path in enumerate(sys.argv[1:])]))
'''


def _each(python: Path, script: str, *sources: Path) -> list[list]:
    """What `script` finds of each source, in one process (importing vLLM is most of its time)."""
    done = subprocess.run([str(python), "-c", script, *map(str, sources)], capture_output=True, text=True,
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

    before, after = _each(vllm_python, SCRIPT, typo, copy.path)
    assert before == [
        ["layers.0.mlp.gate_up_proj", 0, "layers.0.mlp.up_proj"],
        ["layers.0.mlp.gate_up_proj", 1, "layers.0.mlp.down_proj"],
    ]
    assert after == []


def test_lora_wraps_the_qkv_layer_once_pm004_is_fixed(vllm_python: Path, vllm_machine, tmp_path: Path) -> None:
    copy = make_copy(vllm_machine.vllm_dir, tmp_path, "llama", "unchanged")
    if QKV_ENTRY not in copy.original:
        pytest.skip("this vLLM's llama.py writes its qkv_proj entry otherwise")
    copy.path.write_text(copy.original.replace(QKV_ENTRY, SHORT_QKV, 1))
    short = tmp_path / "short.py"
    short.write_text(copy.path.read_text())

    found = engine.check([copy.path], Options(select=("PM",), cache=False)).findings
    assert [(f.rule, f.cls, f.keys) for f in found] == [("PM004", "LlamaForCausalLM", ("qkv_proj",))]
    engine.fix([copy.path], Options(select=("PM",), cache=False))
    assert copy.path.read_text() == copy.original

    before, after = _each(vllm_python, WRAPPERS, short, copy.path)
    assert before == []
    assert after == ["MergedQKVParallelLinearWithLoRA"]
