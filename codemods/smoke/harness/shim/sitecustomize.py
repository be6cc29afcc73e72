"""Installs the smoke's module overrides in every process of an engine run (vLLM spawns workers).

Put on PYTHONPATH by the engine tier together with CONTRACTFIX_SMOKE_OVERRIDES. Any
sitecustomize this one shadows is run afterwards.
"""

import importlib.machinery
import importlib.util
import json
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_files = json.loads(os.environ.get("CONTRACTFIX_SMOKE_OVERRIDES") or "{}")
if _files:
    _override = _load("_contractfix_smoke_override", os.path.join(os.path.dirname(_here), "smoke_override.py"))
    _override.install(_files)

_others = [p for p in sys.path if os.path.abspath(p or ".") != _here]
_shadowed = importlib.machinery.PathFinder.find_spec("sitecustomize", _others)
if _shadowed is not None and _shadowed.origin:
    _load("_contractfix_shadowed_sitecustomize", _shadowed.origin)
