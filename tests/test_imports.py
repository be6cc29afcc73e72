"""The package's modules import each other in one direction: no cycle (data flows
discover -> analyze -> rules -> fixes -> report)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "codemods"
OWN_INTERPRETER = ("smoke/harness", "demo/")
"""Code that runs elsewhere (under vLLM's Python) or is example input, not part of the graph."""


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(OWN_INTERPRETER):
            continue
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Modules of the package that `name` imports when it is imported (TYPE_CHECKING blocks too)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.parse(path.read_bytes()).body:
        for item in node.body if isinstance(node, ast.If) else [node]:
            if not (isinstance(item, ast.ImportFrom) and item.level):
                continue
            base = package[: len(package) - item.level + 1]
            target = ".".join(base + (item.module.split(".") if item.module else []))
            for alias in item.names:
                sub = f"{target}.{alias.name}" if target else alias.name
                out.add(sub if sub in modules else target)
    return out & set(modules) - {name}


def test_no_import_cycles() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    cycles: list[list[str]] = []
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        for dep in sorted(graph[name]):
            if dep in trail:
                cycles.append([*trail[trail.index(dep):], dep])
            elif dep not in done:
                visit(dep, [*trail, dep])
        done.add(name)

    for name in sorted(graph):
        if name not in done:
            visit(name, [name])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)
    assert "resolve" in graph["rules.base"] and "facts" in graph["conditions"], "the graph is not being read"


def test_only_tomlcompat_imports_tomllib() -> None:
    """`tomllib` is 3.11's; on 3.10 (the lowest supported) it is `tomli`, chosen in one place."""
    offenders = [
        p.name for p in (ROOT / "codemods").rglob("*.py")
        if p.name != "tomlcompat.py" and re.search(r"^\s*(import tomllib|from tomllib )", p.read_text(), re.M)
    ]
    assert offenders == []
