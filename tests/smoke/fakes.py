"""Small stand-ins for the smoke tests: a vLLM-style tree with its own registry, a fake vLLM Python."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from contractfix.smoke.records import CheckRecord, Status

REGISTRY = textwrap.dedent(
    """
    _TEXT_GENERATION_MODELS = {
        "TinyLlamaForCausalLM": ("tiny_llama", "TinyLlamaForCausalLM"),
        "TinyAliasForCausalLM": ("tiny_llama", "TinyLlamaForCausalLM"),
        "StepLiteForCausalLM": ("step_lite", "StepLiteForCausalLM"),
    }
    _EMBEDDING_MODELS = {
        "TinyLlamaModel": ("tiny_llama", "TinyLlamaForCausalLM"),
        "TinyLlamaEmbed": ("tiny_llama", "TinyLlamaEmbed"),
    }
    _MULTIMODAL_MODELS = {
        "TinyVisionForConditionalGeneration": ("tiny_vision", "TinyVisionForConditionalGeneration"),
    }
    _SPECULATIVE_DECODING_MODELS = {
        "TinyEagle": ("tiny_eagle", "TinyEagle"),
        "ErnieMTPModel": ("tiny_mtp", "TinyMTP"),
    }
    """
)
MODELS = ("tiny_llama", "step_lite", "tiny_vision", "tiny_eagle", "tiny_mtp", "utils")


def vllm_tree(root: Path) -> Path:
    """A tree shaped like a vLLM checkout (our own tiny files); returns its models folder."""
    models = root / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    for folder in (root / "vllm", root / "vllm" / "model_executor", models):
        (folder / "__init__.py").write_text("")
    (models / "registry.py").write_text(REGISTRY)
    for name in MODELS:
        (models / f"{name}.py").write_text(f"# {name}\n")
    return models


FAKE_PYTHON = '''#!PYTHON
"""Plays a Python with vLLM for the launch tests: probe, or a plan run scripted by BEHAVIOUR."""
import json, os, sys, time
BEHAVIOUR = json.loads(BEHAVIOUR_JSON)
mode = sys.argv[2]
if mode == "probe":
    print(json.dumps(BEHAVIOUR["probe"]))
    sys.exit(0)
plan = json.load(open(sys.argv[3]))
with open(os.environ.get("FAKE_PLAN_COPY", os.devnull), "w") as copy:
    json.dump(plan, copy)
with open(plan["results"], "a") as out:
    for record in BEHAVIOUR.get("records", []):
        out.write(json.dumps(record) + "\\n")
    if mode == "engine" and str(plan["pp"]) in BEHAVIOUR.get("tokens_by_pp", {}):
        target = plan["target"]
        out.write(json.dumps({"arch": target["arch"], "tier": "engine", "path": target["path"], "device": plan["device"],
                              "check": "generate", "status": "pass", "pp": plan["pp"]}) + "\\n")
        json.dump({"tokens": BEHAVIOUR["tokens_by_pp"][str(plan["pp"])]}, open(plan["outputs"], "w"))
print(BEHAVIOUR.get("stderr", ""), file=sys.stderr)
if BEHAVIOUR.get("hang"):
    time.sleep(600)
sys.exit(BEHAVIOUR.get("exit", 0))
'''


def fake_python(folder: Path, behaviour: dict) -> Path:
    """An executable that answers the harness protocol as `behaviour` says (see FAKE_PYTHON)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "fake-python"
    text = FAKE_PYTHON.replace("PYTHON", sys.executable, 1).replace("BEHAVIOUR_JSON", repr(json.dumps(behaviour)))
    script.write_text(text)
    script.chmod(0o755)
    return script


def record(arch: str, check: str, status: str, pp: int | None, path: str | None, **extra) -> dict:
    """A record as the harness writes it."""
    return CheckRecord(arch, "contract", check, Status(status), pp=pp, path=path, device="cpu", duration_s=0.1,
                       **extra).to_json()
