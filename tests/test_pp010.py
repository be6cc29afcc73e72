"""PP010 follows the release: before vLLM 0.31.0 a drafter is built with PP>1 only when it passes
`supports_pp` (the draft config copies the target's PP size and refuses the rest)."""

from __future__ import annotations

import shutil
from pathlib import Path

from contractfix import engine
from contractfix.config import Options
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "PP010" / "drafts"
OPTIONS = Options(select=("PP010",), cache=False)


def _tree(tmp_path: Path, copies_pp: bool, supports_pp: bool, in_package: bool = False) -> Path:
    tree = tmp_path / "drafts"
    shutil.copytree(FIXTURE, tree)
    models = tree / "vllm" / "model_executor" / "models"
    config = tree / "vllm" / "config" / "speculative.py"
    if copies_pp:
        config.write_text(config.read_text().replace(
            "pipeline_parallel_size=1,", "pipeline_parallel_size=target.pipeline_parallel_size,"))
    if in_package:  # vLLM 0.10.1 and 0.10.2: no module of its own
        config.replace(config.with_name("__init__.py"))
    if supports_pp:
        mtp = models / "toy_mtp.py"
        mtp.write_text(mtp.read_text()
                       .replace("class ToyMTP(nn.Module):", "class ToyMTP(nn.Module, SupportsPP):")
                       .replace("from torch import nn\n",
                                "from torch import nn\n\nfrom vllm.model_executor.models.interfaces import SupportsPP\n"))
    return tree


def _lines(tree: Path) -> list[int]:
    return [f.line for f in engine.check([tree], OPTIONS).findings]


def test_drafts_at_pp_one_make_every_drafter_reachable(tmp_path: Path) -> None:
    assert _lines(_tree(tmp_path, copies_pp=False, supports_pp=False)) == [13, 17, 20]


def test_before_0_31_a_drafter_without_supports_pp_is_never_built_with_pp(tmp_path: Path) -> None:
    assert _lines(_tree(tmp_path, copies_pp=True, supports_pp=False)) == []


def test_before_0_31_a_drafter_passing_supports_pp_is_reported(tmp_path: Path) -> None:
    assert _lines(_tree(tmp_path, copies_pp=True, supports_pp=True)) == [15, 19, 22]


def test_a_speculative_config_in_the_config_package_is_read(tmp_path: Path) -> None:
    assert _lines(_tree(tmp_path, copies_pp=True, supports_pp=False, in_package=True)) == []
