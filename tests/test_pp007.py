"""PP007 on `.keys()` through the command line: `check` reports `x.keys()` alone and under
`not in`, `fix --diff` shows the `.tensors` route and writes nothing, `fix` applies it and a
second `check` is clean."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from contractfix.cli import app

MODEL = '''\
from torch import nn


class KeysModel(nn.Module):
    def forward(self, input_ids, positions, intermediate_tensors=None):
        if intermediate_tensors is not None:
            names = sorted(intermediate_tensors.keys())
            if "residual" not in intermediate_tensors.keys():
                return names
        return input_ids
'''


def invoke(*args: str):
    return CliRunner().invoke(app, [*args, "--no-cache"], catch_exceptions=False)


def test_keys_is_reported_and_fixed_through_the_command_line(in_dir: Path) -> None:
    path = in_dir / "model.py"
    path.write_text(MODEL)
    check = invoke("check", "model.py")
    assert check.exit_code == 1
    found = [line for line in check.output.splitlines() if "PP007" in line]
    assert [line.split(" PP007")[0] for line in found] == ["model.py:7:28:", "model.py:8:34:"]
    assert all(line.endswith(" [*]") for line in found), "a safe fix is marked as ruff marks one"
    full = [line for line in invoke("check", "model.py", "--show-fixes").output.splitlines() if " PP007 " in line]
    assert all("has no `keys`" in line and "[safe fix: go through `.tensors`]" in line for line in full)

    diff = invoke("fix", "model.py", "--diff").output
    assert "+            names = sorted(intermediate_tensors.tensors.keys())\n" in diff
    assert '+            if "residual" not in intermediate_tensors.tensors.keys():\n' in diff
    assert path.read_text() == MODEL

    assert invoke("fix", "model.py").exit_code == 0
    assert path.read_text() == MODEL.replace("intermediate_tensors.keys()", "intermediate_tensors.tensors.keys()")
    assert invoke("check", "model.py").exit_code == 0
