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
    arguments given as module-level string constants, loops over a module-level dict literal
    (`for arch, path in MODELS.items(): register_model(arch, path)`), and a module-level helper
    that hands its parameters on (`def _register(arch, cls): ModelRegistry.register_model(arch,
    cls)`), read at each of its calls."""
    if b"register_model" not in source:
        return Registrations()
    tree = ast.parse(source)
    constants = _constants(tree)
    nodes = list(_walk(tree))
    imports = _imports(nodes, module, is_package)
    entries: list[RegistryEntry] = []
    dynamic: list[int] = []
    for node, bindings, blocks, line in _calls(nodes, constants):
        args = _registered(node)
        arch = _text(args[0], constants, bindings) if len(args) == 2 else None
        target = _target(args[1], constants, bindings, module, _reaching(imports, blocks, line)) if arch is not None else None
        if arch is None or target is None:
            dynamic.append(node.lineno)  # the call itself, also where a helper's call hands it what is not read
            continue
        entries.append(RegistryEntry(arch, target[0], target[1], "register_model", line))
    return Registrations(tuple(entries), tuple(dict.fromkeys(dynamic)))


def _registered(node: ast.Call) -> list[ast.expr]:
    """The architecture and class arguments of a `register_model(...)` call."""
    args = list(node.args[:2])
    if len(args) < 2:
        args += [k.value for k in node.keywords if k.arg in ("model_arch", "model_cls")][: 2 - len(args)]
    return args


Blocks = tuple[int, ...]
"""The statement lists (by `id`) that enclose a node, outermost first: a binding made in a block
reaches what comes after it in that block and in the blocks it holds."""


def _walk(tree: ast.Module) -> Iterator[tuple[ast.AST, Blocks]]:
    """Every node with the blocks that enclose it."""
    stack: list[tuple[ast.AST, Blocks]] = [(tree, ())]
    while stack:
        node, blocks = stack.pop()
        yield node, blocks
        children: list[tuple[ast.AST, Blocks]] = []
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                inner = (*blocks, id(value)) if value and isinstance(value[0], ast.stmt) else blocks
                children += [(child, inner) for child in value if isinstance(child, ast.AST)]
            elif isinstance(value, ast.AST):
                children.append((value, blocks))
        stack.extend(reversed(children))  # in source order


Site = tuple[ast.Call, dict, Blocks, int]
"""A `register_model(...)` call as one registration reads it: the call, the names bound for it
(loop variables, a helper's parameters), and where its other names are looked up (the blocks and
line of the call, or of the helper's call)."""


def _calls(nodes: list[tuple[ast.AST, Blocks]], constants: dict) -> Iterator[Site]:
    """Each `*.register_model(...)` call, once per item of each enclosing `for a, b in
    CONST.items()` over a module-level dict literal, and once per call of the module-level helper
    it sits in when it registers that helper's parameters."""
    loops: dict[int, list[dict]] = {}
    helpers: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    """Module-level functions by `id` of their body."""
    calls: dict[str, list[tuple[ast.Call, Blocks]]] = {}
    """Calls of a bare name, by that name."""
    registers: list[tuple[ast.Call, Blocks]] = []
    for node, blocks in nodes:
        if isinstance(node, ast.For):
            items = _dict_items(node, constants)
            if items is not None:
                loops[id(node.body)] = items
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(blocks) == 1:
            helpers[id(node.body)] = node
        elif isinstance(node, ast.Call) and _is_register(node.func):
            registers.append((node, blocks))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            calls.setdefault(node.func.id, []).append((node, blocks))
    for node, blocks in registers:
        helper = next((helpers[block] for block in blocks if block in helpers), None)
        params = _parameters(helper) if helper else set()
        sites = calls.get(helper.name, []) if helper else []
        handed = any(isinstance(a, ast.Name) and a.id in params for a in _registered(node))
        for bindings in _bound(blocks, loops):
            if helper is None or not (handed and sites):
                yield node, bindings, blocks, node.lineno
                continue
            for site, where in sites:
                for outer in _bound(where, loops):
                    yield node, {**outer, **bindings, **_arguments(helper, site)}, where, site.lineno


def _bound(blocks: Blocks, loops: dict[int, list[dict]]) -> list[dict]:
    """The names bound in `blocks` by the loops over dict literals that hold them, per item."""
    bound: list[dict] = [{}]
    for block in blocks:
        bound = [{**b, **item} for b in bound for item in loops.get(block, [{}])]
    return bound


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}


def _arguments(fn: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> dict[str, ast.expr]:
    """Parameter -> the argument `call` gives it (by place or keyword)."""
    places = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    given = {name: arg for name, arg in zip(places, call.args, strict=False) if not isinstance(arg, ast.Starred)}
    given.update((k.arg, k.value) for k in call.keywords if k.arg)
    return given


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


Import = tuple[Blocks, int, str, tuple[str, str]]
"""Where a `from ... import` binds a name (its blocks and line), the name, and (module, class)."""


def _imports(nodes: list[tuple[ast.AST, Blocks]], module: str, is_package: bool) -> list[Import]:
    """`from .models.mtp import AcmeMTP` anywhere in the module (registration functions import
    lazily, and by the vLLM release they run under), in order."""
    package = (module.split(".") if module else [])[: None if is_package else -1]
    found: list[Import] = []
    for node, blocks in nodes:
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package[: len(package) - node.level + 1] if node.level else []
        if node.level and node.level - 1 > len(package):
            continue
        origin = ".".join([*base, *(node.module.split(".") if node.module else [])])
        found += [(blocks, node.lineno, alias.asname or alias.name, (origin, alias.name)) for alias in node.names]
    return sorted(found, key=lambda i: i[1])


def _reaching(imports: list[Import], blocks: Blocks, line: int) -> dict[str, tuple[str, str]]:
    """Name -> (module, class) as the imports bind them at `line` in `blocks`: the last import
    before it in an enclosing block (one branch's `from .v0_10 import X` never reaches another
    branch's call), else the module's last import of the name."""
    names = {name: origin for _, _, name, origin in imports}
    names.update(
        (name, origin) for where, at, name, origin in imports if at < line and blocks[: len(where)] == where
    )
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
