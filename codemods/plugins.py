"""Registrations outside vLLM's registry: `ModelRegistry.register_model(...)` calls in a plugin's
code and the `vllm.general_plugins` entry points its packaging declares.

A plugin (hardware backend, model plugin, fork) adds architectures at run time, from the function
its entry point names, so these calls are its registry. Read statically, never imported.
"""

from __future__ import annotations

import ast
import configparser
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .registry import RegistryEntry
from .tomlcompat import tomllib

PLUGIN_GROUP = "vllm.general_plugins"
PACKAGING = ("pyproject.toml", "setup.cfg", "setup.py")


@dataclass(frozen=True)
class Registrations:
    """What one module registers: entries it names, and calls whose arguments are not literal."""

    entries: tuple[RegistryEntry, ...] = ()
    dynamic: tuple[int, ...] = ()
    """Lines of `register_model(...)` calls whose architecture or class could not be read."""


def read_registrations(source: bytes, module: str, is_package: bool = False) -> Registrations:
    """`ModelRegistry.register_model("Arch", "pkg.mod:Class")`, `register_model("Arch", Class)`,
    arguments given as module-level string constants, and loops over a module-level dict literal
    (`for arch, path in MODELS.items(): register_model(arch, path)`)."""
    if b"register_model" not in source:
        return Registrations()
    tree = ast.parse(source)
    constants = _constants(tree)
    imported = _imported_names(tree, module, is_package)
    entries: list[RegistryEntry] = []
    dynamic: list[int] = []
    for node, bindings in _calls(tree, constants):
        args = list(node.args[:2])
        if len(args) < 2:
            args += [k.value for k in node.keywords if k.arg in ("model_arch", "model_cls")][: 2 - len(args)]
        if len(args) != 2:
            dynamic.append(node.lineno)
            continue
        arch = _text(args[0], constants, bindings)
        target = _target(args[1], constants, bindings, module, imported)
        if arch is None or target is None:
            dynamic.append(node.lineno)
            continue
        entries.append(RegistryEntry(arch, target[0], target[1], "register_model", node.lineno))
    return Registrations(tuple(entries), tuple(dynamic))


def _calls(tree: ast.Module, constants: dict) -> Iterator[tuple[ast.Call, dict]]:
    """Each `*.register_model(...)` call, with the loop variables bound by an enclosing
    `for a, b in CONST.items()` over a module-level dict literal (one binding per item)."""
    def visit(node: ast.AST, bindings: dict) -> Iterator[tuple[ast.Call, dict]]:
        if isinstance(node, ast.For):
            items = _dict_items(node, constants)
            if items is not None:
                for item in items:
                    for statement in node.body:
                        yield from visit(statement, {**bindings, **item})
                return
        if isinstance(node, ast.Call) and _is_register(node.func):
            yield node, bindings
        for child in ast.iter_child_nodes(node):
            yield from visit(child, bindings)

    yield from visit(tree, {})


def _is_register(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if name != "register_model":
        return False
    owner = func.value if isinstance(func, ast.Attribute) else None
    return owner is None or "ModelRegistry" in ast.unparse(owner)


def _dict_items(loop: ast.For, constants: dict) -> list[dict] | None:
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "items"):
        return None
    table = constants.get(getattr(it.func.value, "id", ""))
    target = loop.target
    if not (isinstance(table, ast.Dict) and isinstance(target, ast.Tuple) and len(target.elts) == 2):
        return None
    names = [getattr(e, "id", None) for e in target.elts]
    if None in names:
        return None
    return [{names[0]: k, names[1]: v} for k, v in zip(table.keys, table.values, strict=False) if k is not None]


def _constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level `NAME = <expr>` (the last assignment wins)."""
    out: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = node.value
    return out


def _value(node: ast.expr, constants: dict, bindings: dict) -> ast.expr:
    for _ in range(4):
        if isinstance(node, ast.Name) and node.id in bindings:
            node = bindings[node.id]
        elif isinstance(node, ast.Name) and isinstance(constants.get(node.id), (ast.Constant, ast.JoinedStr)):
            node = constants[node.id]
        else:
            break
    return node


def _text(node: ast.expr, constants: dict, bindings: dict) -> str | None:
    node = _value(node, constants, bindings)
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _imported_names(tree: ast.Module, module: str, is_package: bool) -> dict[str, tuple[str, str]]:
    """`from .models.mtp import AcmeMTP` anywhere in the module (registration functions import
    lazily): name -> (absolute module, class)."""
    package = (module.split(".") if module else [])[: None if is_package else -1]
    names: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package[: len(package) - node.level + 1] if node.level else []
        if node.level and node.level - 1 > len(package):
            continue
        origin = ".".join([*base, *(node.module.split(".") if node.module else [])])
        for alias in node.names:
            names[alias.asname or alias.name] = (origin, alias.name)
    return names


def _target(node: ast.expr, constants: dict, bindings: dict, module: str,
            imported: dict[str, tuple[str, str]]) -> tuple[str, str] | None:
    """(module, class) of `"pkg.mod:Class"`, or of a class object named in this module."""
    text = _text(node, constants, bindings)
    if text is not None:
        mod, sep, cls = text.partition(":")
        return (mod, cls) if sep and mod and cls.isidentifier() else None
    node = _value(node, constants, bindings)
    if isinstance(node, ast.Name):
        return imported.get(node.id, (module, node.id))
    if isinstance(node, ast.Attribute):
        return module, ast.unparse(node)
    return None


@dataclass(frozen=True)
class EntryPoint:
    """`name = module:function` in the `vllm.general_plugins` group of a packaging file."""

    name: str
    target: str
    path: Path


def plugin_entry_points(root: Path) -> list[EntryPoint]:
    """The `vllm.general_plugins` entry points declared by the packaging files in `root`
    (pyproject.toml, setup.cfg, setup.py) or by an unpacked wheel's `*.dist-info/entry_points.txt`."""
    found: list[EntryPoint] = []
    for name in PACKAGING:
        path = root / name
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found += [EntryPoint(n, t, path) for n, t in _declared(name, text)]
    for path in sorted(root.glob("*.dist-info/entry_points.txt")):
        try:
            found += [EntryPoint(n, t, path) for n, t in _ini(path.read_text("utf-8"))]
        except (OSError, UnicodeDecodeError, configparser.Error):
            continue
    return found


def _declared(name: str, text: str) -> list[tuple[str, str]]:
    try:
        if name == "pyproject.toml":
            table = tomllib.loads(text).get("project", {}).get("entry-points", {}).get(PLUGIN_GROUP, {})
            return [(k, str(v)) for k, v in table.items()]
        if name == "setup.cfg":
            parser = configparser.ConfigParser()
            parser.read_string(text)
            if parser.has_option("options.entry_points", PLUGIN_GROUP):
                return _lines(parser.get("options.entry_points", PLUGIN_GROUP))
            return []
    except (tomllib.TOMLDecodeError, configparser.Error):
        return []
    return _setup_py(text)


def _ini(text: str) -> list[tuple[str, str]]:
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    return list(parser.items(PLUGIN_GROUP)) if parser.has_section(PLUGIN_GROUP) else []


def _lines(block: str) -> list[tuple[str, str]]:
    pairs = [line.split("=", 1) for line in block.splitlines() if "=" in line]
    return [(k.strip(), v.strip()) for k, v in pairs]


SETUP_ENTRY = re.compile(r"""["']([\w.-]+)\s*=\s*([\w.]+:[\w.]+)["']""")


def _setup_py(text: str) -> list[tuple[str, str]]:
    """`entry_points={"vllm.general_plugins": ["name = mod:func"]}` in a setup.py."""
    at = text.find(f'"{PLUGIN_GROUP}"')
    at = at if at >= 0 else text.find(f"'{PLUGIN_GROUP}'")
    if at < 0:
        return []
    end = text.find("]", at)
    return SETUP_ENTRY.findall(text[at : end if end > 0 else len(text)])
