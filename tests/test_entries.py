"""Entries without vLLM's registry, extra trees, and what `--verbose` says it used or could not verify."""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contractfix import engine
from contractfix.cli import app
from contractfix.config import Options
from contractfix.plugins import plugin_entry_points, read_registrations

runner = CliRunner()

BASE = '''
from torch import nn
from vllm.model_executor.models.interfaces import SupportsPP
from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory


class BaseVLModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(["hidden_states"], 8)

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return input_ids


class BaseVLForConditionalGeneration(nn.Module, SupportsPP):
    def __init__(self):
        super().__init__()
        self.model = BaseVLModel()
        self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return self.model(input_ids, positions, intermediate_tensors, inputs_embeds)


class BrokenInExtra(nn.Module, SupportsPP):
    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        return input_ids
'''

PLUGIN = '''
from vllm.model_executor.models.base_vl import BaseVLForConditionalGeneration


class ProjectedVL(BaseVLForConditionalGeneration):
    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
        hidden_states = super().forward(input_ids, positions, intermediate_tensors, inputs_embeds)
        return self.projector(hidden_states)
'''


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _vllm_tree(root: Path) -> Path:
    _write(root, {
        "vllm/__init__.py": "", "vllm/model_executor/__init__.py": "",
        "vllm/model_executor/models/__init__.py": "", "vllm/model_executor/models/base_vl.py": BASE,
    })
    return root


def test_missing_registry_is_an_error(in_dir: Path) -> None:
    Path("model.py").write_text("x = 1\n")
    result = invoke("check", "model.py", "--registry", "nowhere/registry.py")
    assert result.exit_code == 2
    assert "nowhere/registry.py: registry not found" in result.output


def test_registry_resolving_to_nothing_says_so(in_dir: Path) -> None:
    _write(in_dir, {
        "plug/__init__.py": "",
        "plug/model.py": PLUGIN,
        "elsewhere/registry.py": '_FORK_MODELS = {"X": ("fork.models", "gone", "Gone")}\n',
    })
    result = invoke("check", "plug", "--registry", "elsewhere/registry.py", "--verbose", "--format", "json")
    doc = json.loads(result.output)
    assert doc["entries"]["source"] == "fork-registry"
    assert any("none of 1 architectures resolves to a class" in line for line in doc["unverified"])


def test_plugin_registrations_and_dynamic_ones_in_json(in_dir: Path) -> None:
    _write(in_dir, {
        "plug/__init__.py": '''
            from vllm import ModelRegistry

            def register():
                ModelRegistry.register_model("ProjectedVL", "plug.model:ProjectedVL")
                ModelRegistry.register_model(compute_name(), "plug.model:ProjectedVL")
        ''',
        "plug/model.py": PLUGIN,
    })
    result = invoke("check", "plug", "--verbose", "--format", "json")
    doc = json.loads(result.output)
    assert doc["entries"] == {"source": "plugin", "detail": "1 register_model(...) call(s)"}
    assert any("plug/__init__.py:6: register_model(...) with arguments that are not literal" in u for u in doc["unverified"])
    assert any("base `BaseVLForConditionalGeneration` of ProjectedVL" in u for u in doc["unverified"])


def test_extra_path_resolves_bases_but_is_never_checked(in_dir: Path) -> None:
    extra = _vllm_tree(in_dir / "installed")
    _write(in_dir, {"plug/__init__.py": "", "plug/model.py": PLUGIN})
    without = engine.check([Path("plug")], Options(installed_vllm=False))
    assert without.findings == []
    report = engine.check([Path("plug")], Options(extra_path=(extra,), installed_vllm=False))
    assert [(f.rule, f.cls) for f in report.findings] == [("PP006", "ProjectedVL")]
    assert any(line.startswith(f"extra path {extra.resolve()}") for line in report.context)
    result = invoke("check", "plug", "--extra-path", "installed", "--verbose")
    assert "BrokenInExtra" not in result.output
    assert "used: extra path installed: resolves bases, producers and helpers only" in result.output


def test_extra_path_must_exist(in_dir: Path) -> None:
    Path("model.py").write_text("x = 1\n")
    result = invoke("check", "model.py", "--extra-path", "nowhere")
    assert result.exit_code == 2 and "nowhere: extra path is not a directory" in result.output


def test_installed_vllm_is_located_not_imported(in_dir: Path, monkeypatch) -> None:
    site = _vllm_tree(in_dir / "site")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "vllm", raising=False)
    _write(in_dir, {"plug/__init__.py": "", "plug/model.py": PLUGIN})
    report = engine.check([Path("plug")], Options())
    assert "vllm" not in sys.modules
    assert [(f.rule, f.cls) for f in report.findings] == [("PP006", "ProjectedVL")]
    assert any(line.startswith(f"installed vLLM at {site.resolve() / 'vllm'}") for line in report.context)


def test_placeholder_method_is_reported(in_dir: Path) -> None:
    _write(in_dir, {"model.py": '''
        from torch import nn
        from vllm.model_executor.models.interfaces import SupportsPP


        class Stub(nn.Module, SupportsPP):
            def make_empty_intermediate_tensors(self):
                return None

            def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
                return input_ids
    '''})
    report = engine.check([Path("model.py")], Options(installed_vllm=False))
    assert [(f.rule, f.line, f.cls) for f in report.findings] == [("PP004", 7, "Stub")]
    assert "placeholder" in report.findings[0].message


def test_entry_points_from_each_packaging_file(tmp_path: Path) -> None:
    (tmp_path / "setup.cfg").write_text("[options.entry_points]\nvllm.general_plugins =\n    a = pkg_a:register\n")
    (tmp_path / "setup.py").write_text(
        "setup(entry_points={'vllm.general_plugins': ['b = pkg_b.plugin:register'], 'console_scripts': ['x = y:z']})\n"
    )
    (tmp_path / "pyproject.toml").write_text('[project.entry-points."vllm.general_plugins"]\nc = "pkg_c:register"\n')
    found = {(p.name, p.target, p.path.name) for p in plugin_entry_points(tmp_path)}
    assert found == {
        ("a", "pkg_a:register", "setup.cfg"),
        ("b", "pkg_b.plugin:register", "setup.py"),
        ("c", "pkg_c:register", "pyproject.toml"),
    }


def test_registrations_through_constants_loops_and_lazy_imports() -> None:
    source = textwrap.dedent('''
        from vllm import ModelRegistry
        ARCH = "A"
        TABLE = {"B": "pkg.b:B", "C": "pkg.c:C"}

        def register():
            from .drafts import DraftHead
            ModelRegistry.register_model(ARCH, "pkg.a:A")
            ModelRegistry.register_model("D", DraftHead)
            for arch, path in TABLE.items():
                ModelRegistry.register_model(arch, path)
    ''').encode()
    found = read_registrations(source, "pkg", is_package=True)
    assert [(e.arch, e.module, e.cls) for e in found.entries] == [
        ("A", "pkg.a", "A"), ("D", "pkg.drafts", "DraftHead"), ("B", "pkg.b", "B"), ("C", "pkg.c", "C"),
    ]
    assert found.dynamic == ()


def test_each_registration_takes_the_import_that_reaches_it() -> None:
    """A plugin that picks its implementation by vLLM release imports the same name in each
    branch: each call registers its own branch's class, not the module's last import."""
    source = textwrap.dedent('''
        import vllm
        from vllm import ModelRegistry
        from .legacy import AcmeMTP

        def register():
            if vllm.__version__.startswith("0.10"):
                from .v0_10 import AcmeForCausalLM, AcmeMTP
                ModelRegistry.register_model("AcmeForCausalLM", AcmeForCausalLM)
                ModelRegistry.register_model("AcmeMTP", AcmeMTP)
            elif vllm.__version__.startswith("0.11"):
                from .v0_11 import AcmeForCausalLM
                ModelRegistry.register_model("AcmeForCausalLM", AcmeForCausalLM)
                ModelRegistry.register_model("AcmeMTP", AcmeMTP)
            else:
                ModelRegistry.register_model("AcmeForCausalLM", AcmeForCausalLM)
    ''').encode()
    found = read_registrations(source, "acme", is_package=True)
    assert [(e.arch, e.module, e.cls) for e in found.entries] == [
        ("AcmeForCausalLM", "acme.v0_10", "AcmeForCausalLM"), ("AcmeMTP", "acme.v0_10", "AcmeMTP"),
        ("AcmeForCausalLM", "acme.v0_11", "AcmeForCausalLM"), ("AcmeMTP", "acme.legacy", "AcmeMTP"),
        ("AcmeForCausalLM", "acme.v0_11", "AcmeForCausalLM"),
    ]


def test_a_helper_that_hands_on_its_parameters_registers_at_each_call() -> None:
    source = textwrap.dedent('''
        from .adapter import AcmeForConditionalGeneration

        def _register_vllm_model(architecture, model_cls):
            from vllm import ModelRegistry
            try:
                ModelRegistry.register_model(architecture, model_cls)
            except KeyError:
                pass

        def register():
            from .draft import AcmeDraft
            _register_vllm_model("AcmeForConditionalGeneration", AcmeForConditionalGeneration)
            _register_vllm_model(model_cls=AcmeDraft, architecture="AcmeDraft")
    ''').encode()
    found = read_registrations(source, "acme", is_package=True)
    assert [(e.arch, e.module, e.cls, e.line) for e in found.entries] == [
        ("AcmeForConditionalGeneration", "acme.adapter", "AcmeForConditionalGeneration", 13),
        ("AcmeDraft", "acme.draft", "AcmeDraft", 14),
    ]
    assert found.dynamic == ()


def test_plugin_registration_of_a_vllm_draft_architecture_is_a_draft_head(in_dir: Path) -> None:
    extra = in_dir / "installed"
    _write(extra, {
        "vllm/__init__.py": "", "vllm/model_executor/__init__.py": "", "vllm/model_executor/models/__init__.py": "",
        "vllm/model_executor/models/registry.py": '''
            _TEXT_GENERATION_MODELS = {"BaseVL": ("base_vl", "BaseVLForConditionalGeneration")}
            _SPECULATIVE_DECODING_MODELS = {"SparkDraftModel": ("spark_draft", "SparkDraftForCausalLM")}
        ''',
    })
    _write(in_dir, {
        "plug/__init__.py": '''
            from vllm import ModelRegistry

            def register():
                ModelRegistry.register_model("SparkDraftModel", "plug.spark:PlugSparkForCausalLM")
        ''',
        "plug/spark.py": '''
            from torch import nn
            from vllm.model_executor.models.interfaces import SupportsPP


            class PlugSparkForCausalLM(nn.Module, SupportsPP):
                def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None):
                    return input_ids
        ''',
    })
    alone = engine.check([Path("plug")], Options(installed_vllm=False))
    assert [(f.rule, f.cls) for f in alone.findings] == [("PP004", "PlugSparkForCausalLM")]
    beside = engine.check([Path("plug")], Options(extra_path=(extra,), installed_vllm=False))
    assert beside.findings == []


OLD_TREES = Path(__file__).parent / "fixtures" / "PP004"


@pytest.mark.parametrize(("tree", "checked", "registry", "listed", "cls"), [
    ("old_release", "vllm/model_executor/models/legacy_llama.py", "vllm/model_executor/models/__init__.py",
     "vllm/config.py", "LegacyLlamaForCausalLM"),
    ("old_fork", "oldfork/modeling/models/fork_llama.py", "oldfork/modeling/models/__init__.py",
     "oldfork/common/config.py", "ForkLlamaForCausalLM"),
])
def test_an_old_registry_and_its_list_are_read_from_outside_the_checked_file(
        in_dir: Path, tree: str, checked: str, registry: str, listed: str, cls: str) -> None:
    """A release before `registry.py` keeps its tables in the models package's `__init__.py` and
    the architectures it allows PP>1 in a config module: both are read when one model file is
    checked, and the class the list allows is an entry that must have a factory."""
    shutil.copytree(OLD_TREES / tree, in_dir / tree)
    os.chdir(in_dir / tree)
    doc = json.loads(invoke("check", checked, "--select", "PP004", "--format", "json").output)
    assert doc["entries"]["source"] == "registry"
    assert doc["entries"]["detail"].startswith(f"registry {registry} (vLLM's tables); `_PP_SUPPORTED_MODELS` of {listed}")
    assert [(f["rule"], f["class"]) for f in doc["findings"]] == [("PP004", cls)]


def test_a_listed_architecture_without_a_class_is_said(in_dir: Path) -> None:
    shutil.copytree(OLD_TREES / "old_fork", in_dir / "old_fork")
    config = in_dir / "old_fork/oldfork/common/config.py"
    config.write_text(config.read_text().replace('"ForkQwenForCausalLM",', '"ForkQwenForCausalLM",\n    "GoneForCausalLM",'))
    result = invoke("check", "old_fork", "--select", "PP004", "--verbose")
    assert "`_PP_SUPPORTED_MODELS`: 1 architecture(s) it allows resolve to no class here: GoneForCausalLM" in result.output
