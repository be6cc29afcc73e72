"""`bench/floor.py`, the stripped-down runs that show where a cold check's time goes: the classes
its `parse` stage parses are those a need asks for, and both stages run a tree to the end (and
fail where the code they run fails)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

from .conftest import ROOT

FLOOR = ROOT / "bench" / "floor.py"

MODEL = '''\
import torch
from vllm.sequence import IntermediateTensors


class Helper:
    def scale(self, x):
        return x * 2


class TinyModel(torch.nn.Module):
    def forward(self, x, intermediate_tensors: IntermediateTensors | None = None):
        return x
'''


def _floor():
    spec = importlib.util.spec_from_file_location("floor", FLOOR)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(tmp_path: Path, source: str) -> Path:
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    (models / "tiny.py").write_text(source)
    (models / "unrelated.py").write_text("X = 1\n")
    return tmp_path / "vllm"


def _child(stage: str, spans: dict, tree: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    spans_file = tmp_path / "spans.json"
    spans_file.write_text(json.dumps(spans))
    return subprocess.run([sys.executable, str(FLOOR), "--child", stage, str(spans_file), str(tree)],
                          capture_output=True, text=True, timeout=120)


def test_the_parse_stage_takes_the_classes_a_need_asks_for(tmp_path):
    tree = _tree(tmp_path, MODEL)
    spans = _floor()._needed_spans(tree)
    assert spans == {str(tree / "model_executor" / "models" / "tiny.py"): [(10, 13)]}  # to the end of the file


def test_both_stages_run_a_tree_and_fail_where_the_code_fails(tmp_path):
    tree = _tree(tmp_path, MODEL)
    spans = _floor()._needed_spans(tree)
    for stage in ("parse", "analyze"):
        done = _child(stage, spans, tree, tmp_path)
        assert done.returncode == 0, done.stderr
    (tree / "model_executor" / "models" / "tiny.py").write_text(MODEL.replace("return x\n", "return (x\n"))
    for stage in ("parse", "analyze"):
        done = _child(stage, spans, tree, tmp_path)
        assert done.returncode != 0 and "SyntaxError" in done.stderr
