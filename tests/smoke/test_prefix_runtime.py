"""PF on real vLLM: a layer that a quantization config ignores by name is built quantized when its
module takes no `prefix` (PF003's finding in Molmo2's `LanguageModelMLP`, vLLM 0.33.0), and
unquantized once the fix threads the prefix through."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from contractfix import engine
from contractfix.config import Options

pytestmark = pytest.mark.vllm

SCRIPT = '''
import importlib.util
import json
import sys
from types import SimpleNamespace

import torch
from vllm.config import VllmConfig, set_current_vllm_config
from vllm.distributed.parallel_state import ensure_model_parallel_initialized, init_distributed_environment
from vllm.model_executor.layers.quantization.fp8 import Fp8Config
from vllm.utils.network_utils import get_open_port

PREFIX = "model.layers.0.mlp"
cfg = VllmConfig()
with set_current_vllm_config(cfg):
    init_distributed_environment(
        world_size=1, rank=0, distributed_init_method=f"tcp://127.0.0.1:{get_open_port()}", local_rank=0,
        backend="gloo",
    )
    ensure_model_parallel_initialized(1, 1)


def load(path, name):
    spec = importlib.util.spec_from_file_location(f"vllm.model_executor.models.{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


object.__setattr__(cfg, "model_config", SimpleNamespace(dtype=torch.bfloat16))  # all Fp8Config reads of it
quant = Fp8Config(is_checkpoint_fp8_serialized=True, ignored_layers=[f"{PREFIX}.down_proj"])
out = {}
torch.set_default_dtype(torch.bfloat16)
with set_current_vllm_config(cfg):
    for name, path in (("before", sys.argv[1]), ("after", sys.argv[2])):
        cls = load(path, f"_pf_{name}").LanguageModelMLP
        kwargs = {"prefix": PREFIX} if name == "after" else {}
        mlp = cls(64, 128, "silu", quant_config=quant, **kwargs)
        out[name] = {attr: type(getattr(mlp, attr).quant_method).__name__ for attr in ("up_gate_proj", "down_proj")}
print(json.dumps(out))
'''


def test_an_ignored_layer_is_quantized_before_the_fix_and_not_after(vllm_python: Path, vllm_machine,
                                                                    tmp_path: Path) -> None:
    source = vllm_machine.vllm_dir / "model_executor" / "models" / "molmo2.py"  # the script imports it
    assert source.is_file(), source
    before, after = tmp_path / "before.py", tmp_path / "fixed" / "molmo2.py"
    after.parent.mkdir()
    shutil.copy(source, before)
    shutil.copy(source, after)
    fixed = engine.fix([after], Options(cache=False, unsafe_fixes=True, select=("PF003",)))
    assert [f.cls for f in fixed.fixed] == ["LanguageModelMLP"], fixed
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    done = subprocess.run(
        [str(vllm_python), str(script), str(before), str(after)], capture_output=True, text=True, timeout=600,
        check=False, env={**os.environ, "VLLM_TARGET_DEVICE": "cpu"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    methods = json.loads(done.stdout.strip().splitlines()[-1])
    assert methods == {
        "before": {"up_gate_proj": "Fp8LinearMethod", "down_proj": "Fp8LinearMethod"},
        "after": {"up_gate_proj": "Fp8LinearMethod", "down_proj": "UnquantizedLinearMethod"},
    }
