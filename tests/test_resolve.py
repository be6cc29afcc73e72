"""What `self.<attr>` is, for an instance of a class, when a name or a parameter builds it
(`Resolver.object_classes`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contractfix import engine
from contractfix.config import Options
from contractfix.findings import Report
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "PP004" / "model_built_by_name.py"

MORE = '''

class DeltaForCausalLM(AlphaForCausalLM):
    """A method that returns what the class attribute names: this class's, not the base's."""

    model_cls = GammaModel

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = self._build(vllm_config=vllm_config)

    def _build(self, vllm_config):
        return self.model_cls(vllm_config=vllm_config)


class EpsilonForCausalLM(BetaForCausalLM):
    """Overrides the builder with one whose result is not a construction: unknown."""

    def _init_model(self, vllm_config, prefix=""):
        return make_model(vllm_config)


class ZetaForCausalLM(nn.Module, SupportsPP):
    """The inner model's class is a parameter of `__init__`, with a default."""

    def __init__(self, *, vllm_config, prefix="", model_type=AlphaModel):
        super().__init__()
        self.model = model_type(vllm_config=vllm_config, prefix=prefix)


class EtaForCausalLM(ZetaForCausalLM):
    """Hands its own parameter's default on, from inside a `with` block."""

    def __init__(self, *, vllm_config, prefix="", model_type=GammaModel):
        with no_init_weights(self):
            super().__init__(vllm_config=vllm_config, prefix=prefix, model_type=model_type)


class ThetaForCausalLM(ZetaForCausalLM):
    """Hands a class on."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix, model_type=GammaModel)


class IotaForCausalLM(ThetaForCausalLM):
    """Hands nothing on: what its base hands on."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix)


class KappaForCausalLM(nn.Module, SupportsPP):
    """The parameter can be given by place."""

    def __init__(self, vllm_config, prefix="", model_type=AlphaModel):
        super().__init__()
        self.model = model_type(vllm_config=vllm_config, prefix=prefix)


class LambdaForCausalLM(KappaForCausalLM):
    """Hands a class on by place."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config, prefix, GammaModel)


class MuForCausalLM(KappaForCausalLM):
    """By place, through the base's `__init__` called by name (after `self`)."""

    def __init__(self, *, vllm_config, prefix=""):
        KappaForCausalLM.__init__(self, vllm_config, prefix, GammaModel)


class NuForCausalLM(ZetaForCausalLM):
    """Hands one class or another on, by configuration: not known."""

    def __init__(self, *, vllm_config, prefix=""):
        if vllm_config.model_config.is_reward:
            super().__init__(vllm_config=vllm_config, prefix=prefix, model_type=GammaModel)
        else:
            super().__init__(vllm_config=vllm_config, prefix=prefix)


class XiForCausalLM(ZetaForCausalLM):
    """Hands the same class on from both branches."""

    def __init__(self, *, vllm_config, prefix=""):
        if vllm_config.parallel_config.pipeline_parallel_size > 1:
            super().__init__(vllm_config=vllm_config, prefix=prefix, model_type=GammaModel)
        else:
            super().__init__(vllm_config=vllm_config, prefix="", model_type=GammaModel)


class OmicronForCausalLM(ZetaForCausalLM):
    """Hands on what a call returns: not known."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__(vllm_config=vllm_config, prefix=prefix, model_type=pick_model(vllm_config))
'''


@pytest.mark.parametrize(("cls", "built"), [
    ("AlphaForCausalLM", "AlphaModel"),
    ("BetaForCausalLM", "AlphaModel"),
    ("GammaForCausalLM", "GammaModel"),
    ("DeltaForCausalLM", "GammaModel"),
    ("EpsilonForCausalLM", "self.model is built dynamically (self._init_model)"),
    ("ZetaForCausalLM", "AlphaModel"),
    ("EtaForCausalLM", "GammaModel"),
    ("ThetaForCausalLM", "GammaModel"),
    ("IotaForCausalLM", "GammaModel"),
    ("KappaForCausalLM", "AlphaModel"),
    ("LambdaForCausalLM", "GammaModel"),
    ("MuForCausalLM", "GammaModel"),
    ("NuForCausalLM", "self.model (model_type) not resolved"),
    ("XiForCausalLM", "GammaModel"),
    ("OmicronForCausalLM", "self.model (model_type) not resolved"),
])
def test_self_attribute_built_through_a_name(tmp_path: Path, cls: str, built: str) -> None:
    source = tmp_path / "models.py"
    source.write_text(FIXTURE.read_text() + MORE)
    session = engine.analyze([source], Options(installed_vllm=False), Report())
    engine.evaluate(session)
    assert session.resolver is not None
    ref = session.index.lookup("models", cls)[0]
    found = session.resolver.object_classes(ref, ("self", "model"))
    assert (found if isinstance(found, str) else found[0].cls.name) == built


ALIASES = '''

class PiForCausalLM(nn.Module, SupportsPP):
    """A local bound to a class in one branch, to `partial(...)` of another in the other."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        if vllm_config.model_config.is_reward:
            model_cls = GammaModel
        else:
            model_cls = partial(AlphaModel, upcast=True)
        self.model = model_cls(vllm_config=vllm_config, prefix=prefix)


class RhoForCausalLM(nn.Module, SupportsPP):
    """A conditional expression of classes, built into a local first."""

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        model_cls = AlphaModel if vllm_config.model_config.is_reward else GammaModel
        model = model_cls(vllm_config=vllm_config)
        self.model = model


class SigmaForCausalLM(nn.Module, SupportsPP):
    """A class attribute bound to `partial(...)`."""

    model_cls = partial(GammaModel, upcast=True)

    def __init__(self, *, vllm_config, prefix=""):
        super().__init__()
        self.model = self.model_cls(vllm_config=vllm_config)
'''


@pytest.mark.parametrize(("cls", "built"), [
    ("PiForCausalLM", ["GammaModel", "AlphaModel"]),
    ("RhoForCausalLM", ["AlphaModel", "GammaModel"]),
    ("SigmaForCausalLM", ["GammaModel"]),
])
def test_self_attribute_built_through_a_class_alias(tmp_path: Path, cls: str, built: list[str]) -> None:
    source = tmp_path / "models.py"
    source.write_text(FIXTURE.read_text() + ALIASES)
    session = engine.analyze([source], Options(installed_vllm=False), Report())
    engine.evaluate(session)
    assert session.resolver is not None
    ref = session.index.lookup("models", cls)[0]
    found = session.resolver.object_classes(ref, ("self", "model"))
    assert isinstance(found, list) and [c.cls.name for c in found] == built
