"""Repo-wide class index: modules by dotted name, loaded lazily, classes resolved through imports."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from . import analysis, inputs
from .cache import FactsCache
from .facts import ClassFacts, FunctionFacts, ModuleFacts, Producer
from .vllm_names import PP_INTERFACE, PRODUCER

INTERFACE = re.compile(r"^(Supports|Has|Is)[A-Z]|Mixin$|Protocol$")
"""A marker interface's name (`SupportsPP`, `HasInnerState`, a mixin): it holds no contract."""


def contract_packages(modules: list[ModuleFacts]) -> frozenset[str]:
    """The top-level packages whose classes can take part in the contract: vLLM's and those of
    the checked modules (a plugin's or a fork's own)."""
    return frozenset({"vllm", *(m.module.split(".")[0] for m in modules)})


@dataclass(frozen=True, eq=False)
class ClassRef:
    """A class and the module it is defined in; equal when path and name are.

    `header` holds what the class statement says (name, place, bases), enough for resolution
    and the MRO; `cls` holds every fact, parsing a body left unparsed on first read (so a class
    reached only through an MRO is never parsed)."""

    module: ModuleFacts
    header: ClassFacts
    key: tuple[str, str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", (self.module.path, self.header.name))

    @property
    def cls(self) -> ClassFacts:
        name = self.header.name
        if name in self.module.pending and self.module.classes.get(name) is self.header:
            analysis.complete(self.module, name)
        return self.header

    def may_hold(self, pattern: str) -> bool:
        """False when the class's body is unparsed and its text has nothing matching `pattern`
        (so no fact that needs such text); True otherwise. Answered without parsing the body."""
        name = self.header.name
        if name not in self.module.pending:
            return True
        _, _, first, stop = self.module.pending[name]
        return re.compile(pattern.encode()).search(self.module.source, first, stop) is not None

    @property
    def producers(self) -> list[Producer]:
        """The class's own producers: none, unparsed, when its text never names the factory
        (every kind of producer does)."""
        return self.cls.producers if self.may_hold(PRODUCER) else []

    def defines(self, method: str) -> bool:
        """Whether the class's own body defines `method` (parsed only when its text can)."""
        # no `\b` before `def`: it would keep the regex engine from searching for `def` first
        return self.may_hold(rf"def\s+{re.escape(method)}\b") and method in self.cls.method_names

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClassRef) and self.key == other.key


class Method(NamedTuple):
    """A method as found through the MRO: the class that defines it, and its facts."""

    owner: ClassRef
    fn: FunctionFacts


def import_root(path: Path) -> Path:
    """The folder a module is imported from: the parent of its outermost package."""
    return _package_root(path.resolve().parent)


def _package_root(folder: Path) -> Path:
    """The parent of the outermost regular package above `folder`. Folders without
    `__init__.py` below a regular package are namespace portions of it (PEP 420: with no
    `pkg/models/__init__.py`, `pkg/models/x.py` imports as `pkg.models.x`); with no regular
    package above, `folder` is the root itself."""
    above = folder
    while not inputs.is_file(above / "__init__.py"):
        if above.parent == above:
            return folder
        above = above.parent
    while inputs.is_file(above / "__init__.py") and above.parent != above:
        above = above.parent
    return above


def module_of(path: Path, roots: dict[Path, Path]) -> tuple[Path, str]:
    """The import root and dotted name of `path`, resolved once. `roots` holds each folder's
    root, found once per folder in a run (a tree's 300 model files sit in a few dozen folders)."""
    real = path.resolve()
    root = roots.get(real.parent)
    if root is None:
        root = roots[real.parent] = _package_root(real.parent)
    return root, _dotted(real, root)


def module_name(path: Path, root: Path) -> str:
    return _dotted(path.resolve(), root)


def _dotted(real: Path, root: Path) -> str:
    """The dotted name of the resolved path `real` under `root`."""
    parts = list(real.relative_to(root).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class Index:
    """Facts of every module the run needs: the targets, eagerly, and their bases, on demand."""

    def __init__(self, roots: list[Path] | None = None, cache: FactsCache | None = None) -> None:
        self.roots: list[Path] = list(roots or [])
        self.cache = cache or FactsCache(None)
        self.by_path: dict[str, ModuleFacts] = {}
        self.by_name: dict[str, ModuleFacts | None] = {}
        self._mro: dict[tuple[str, str], list[ClassRef]] = {}
        self._initialized: dict[tuple[str, str], set] = {}
        self._stored: dict[str, tuple[str, ModuleFacts, int]] = {}
        self.pp_listed: set[tuple[str, str]] = set()
        """Keys of the classes a release before `SupportsPP` allows to run with PP>1 (`pplist`)."""

    def stored(self, key: str, facts: ModuleFacts) -> None:
        """Note that `facts` are in the cache under `key`, with the classes still pending then."""
        self._stored[facts.path] = (key, facts, len(facts.pending))

    def flush(self) -> None:
        """Store again the facts whose pending classes a `ClassRef` completed during the run, so
        that a warm run does not parse those bodies again."""
        for key, facts, pending in self._stored.values():
            if len(facts.pending) < pending:
                self.cache.put(key, facts)
                self.stored(key, facts)

    def pending(self) -> dict[str, set[str]]:
        """Path -> the names of its classes still pending, of each module: taken before work
        whose completions another process will take (`completed_since`)."""
        return {path: set(facts.pending) for path, facts in self.by_path.items()}

    def completed_since(self, before: dict[str, set[str]]) -> dict[str, tuple[str, dict[str, ClassFacts]]]:
        """Path -> (module name, its classes completed since `pending()` gave `before`; of a
        module loaded since, every class parsed): what this process hands to another (`adopt`)."""
        found = {}
        for path, facts in self.by_path.items():
            done = before.get(path, facts.classes.keys()) - facts.pending.keys()
            if done:
                found[path] = (facts.module, {name: facts.classes[name] for name in sorted(done)})
        return found

    def adopt(self, completed: dict[str, tuple[str, dict[str, ClassFacts]]]) -> None:
        """Take the classes another process completed (`completed`), loading a module this one
        never needed, so that `flush` stores them too."""
        for path, (name, classes) in completed.items():
            facts = self.by_path.get(path) or self.module(name)
            if facts is None or facts.path != path:
                continue
            for cls_name, found in classes.items():
                if cls_name in facts.pending:
                    analysis.fill(facts, cls_name, found)

    def add(self, facts: ModuleFacts) -> None:
        self.by_path[facts.path] = facts
        self.by_name[facts.module] = facts

    def replace(self, facts: ModuleFacts) -> ModuleFacts | None:
        """Swap in new facts for a path (used to re-check a fixed file); returns the old ones."""
        old = self.by_path.get(facts.path)
        self.add(facts)
        self._mro.clear()
        self._initialized.clear()
        return old

    def add_root(self, root: Path) -> None:
        """Search `root` too, after the others; a module not found before is looked for again."""
        if root not in self.roots:
            self.roots.append(root)
            self.by_name = {name: facts for name, facts in self.by_name.items() if facts is not None}

    def module(self, name: str) -> ModuleFacts | None:
        if name in self.by_name:
            return self.by_name[name]
        self.by_name[name] = None
        for root in self.roots:
            base = root.joinpath(*name.split("."))
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if inputs.is_file(candidate) and not candidate.is_symlink():
                    try:
                        facts = self.parse(candidate.read_bytes(), str(candidate), name, headers_only=True)
                    except (SyntaxError, ValueError, OSError):
                        return None
                    self.add(facts)
                    return facts
        return None

    def parse(self, data: bytes, path: str, name: str, headers_only: bool = False) -> ModuleFacts:
        """Facts of one module's source, from the cache when its content was seen before
        (`headers_only` facts under a key of their own: they never stand in for a target's)."""
        key = self.cache.key(data, name, "headers" if headers_only else "")
        facts = self.cache.get(key, path)
        if facts is None:
            facts = analysis.analyze_source(data, path, name, headers_only)
            self.cache.put(key, facts)
        facts.source = data
        self.stored(key, facts)
        return facts

    def resolve(self, module: ModuleFacts, name: str, depth: int = 0) -> list[ClassRef]:
        """Classes a (dotted) name used in `module` may refer to, following imports."""
        if depth > 8:
            return []
        head, _, rest = name.partition(".")
        if not rest and head in module.classes:
            return [ClassRef(module, module.classes[head])]
        found: list[ClassRef] = []
        for target, attr in module.imports.get(head, []):
            if attr is None:
                dotted = f"{target}.{rest}" if rest else target
                mod_name, _, cls_name = dotted.rpartition(".")
            elif rest:
                mod_name, _, cls_name = f"{target}.{attr}.{rest}".rpartition(".")
            else:
                mod_name, cls_name = target, attr
            other = self.module(mod_name)
            if other is None:
                continue
            if cls_name in other.classes:
                found.append(ClassRef(other, other.classes[cls_name]))
            else:
                found.extend(self.resolve(other, cls_name, depth + 1))
        if not rest and module.lazy:
            found.extend(ref for ref in self._lazy(module, head, depth) if ref not in found)
        return found

    def _lazy(self, module: ModuleFacts, name: str, depth: int) -> list[ClassRef]:
        """The classes the module's `__getattr__` can return for `name`: on every platform, each
        is what the name stands for (the import under `TYPE_CHECKING` names one of them, or none)."""
        found: list[ClassRef] = []
        for export in module.lazy:
            attr = export.offers(name)
            other = self.module(export.module) if attr else None
            if attr is None or other is None:
                continue
            refs = [ClassRef(other, other.classes[attr])] if attr in other.classes else self.resolve(other, attr, depth + 1)
            found.extend(ref for ref in refs if ref not in found)
        return found

    def opaque(self, module: ModuleFacts, base: str, packages: frozenset[str]) -> str | None:
        """The module that a base named in `module` is imported from, when that module is in one
        of `packages` (no marker interface) and the base resolves to no class here: a class whose
        facts are unknown (vLLM not installed beside a plugin, a name its module lacks), not one
        known to define nothing."""
        sources = [source for source, _ in module.imports.get(base.split(".")[0], ())]
        if not sources or sources[0].split(".")[0] not in packages or INTERFACE.search(base.split(".")[-1]):
            return None
        if sources[0].endswith(".interfaces") or self.resolve(module, base):
            return None
        return sources[0]

    def lookup(self, module_name_: str, cls_name: str) -> list[ClassRef]:
        module = self.module(module_name_)
        if module is None:
            return []
        if cls_name in module.classes:
            return [ClassRef(module, module.classes[cls_name])]
        return self.resolve(module, cls_name)

    def mro(self, ref: ClassRef) -> list[ClassRef]:
        """Linearization by depth-first, left-to-right, keeping the last occurrence (C3 on trees)."""
        if ref.key not in self._mro:
            self._mro[ref.key] = self._linearize(ref)
        return self._mro[ref.key]

    def _linearize(self, ref: ClassRef) -> list[ClassRef]:
        # Depth-first pre-order with an explicit stack (a chain of a thousand generated classes
        # would overflow Python's), skipping a base already on the path from `ref` (a cycle).
        order: list[ClassRef] = []
        path: set = set()
        stack: list[tuple[ClassRef, bool]] = [(ref, True)]
        while stack:
            node, entering = stack.pop()
            if not entering:
                path.discard(node.key)
                continue
            if node.key in path:
                continue
            order.append(node)
            path.add(node.key)
            stack.append((node, False))
            parents = [parent for base in node.header.bases for parent in self.resolve(node.module, base)[:1]]
            stack.extend((parent, True) for parent in reversed(parents))
        seen: set = set()
        result = []
        for node in reversed(order):
            if node.key not in seen:
                seen.add(node.key)
                result.append(node)
        return list(reversed(result))

    def base_names(self, ref: ClassRef) -> set[str]:
        """Simple names of every base in the MRO, resolved or not (for `SupportsPP`, `Protocol`);
        a class its release's list allows to run with PP>1 counts as declaring `SupportsPP`."""
        names = {PP_INTERFACE} if ref.key in self.pp_listed else set()
        for node in self.mro(ref):
            names.add(node.header.name)
            names.update(b.split(".")[-1] for b in node.header.bases)
        return names

    def initialized(self, ref: ClassRef) -> set:
        """Keys of the classes whose `__init__` runs when `ref` is built: the chain of
        `super().__init__()` / `Base.__init__(self)` calls from the first `__init__` in the MRO
        (`nn.Module.__init__(self)` ends it, skipping every base's `__init__`)."""
        if ref.key not in self._initialized:
            self._initialized[ref.key] = self._init_chain(self.mro(ref))
        return self._initialized[ref.key]

    def _init_chain(self, chain: list[ClassRef]) -> set:
        runs: set = set()
        i = 0
        while i < len(chain):
            node = chain[i]
            runs.add(node.key)
            calls = node.cls.init_calls if node.defines("__init__") else ()
            if not calls or "super" in calls:  # no `__init__`, or no call seen: assume the chain goes on
                i += 1
                continue
            starts = []
            for name in calls:
                after = name.startswith("super:")  # super(X, self): the classes after X (X may be this one)
                for c in self.resolve(node.module, name.removeprefix("super:"))[:1]:
                    if c in chain[i if after else i + 1 :]:
                        starts.append(chain.index(c) + (1 if after else 0))
            if not starts:
                break
            i = min(starts)
        return runs

    def find_method(self, ref: ClassRef, name: str, after: ClassRef | None = None) -> Method | None:
        chain = self.mro(ref)
        if after is not None and after in chain:
            chain = chain[chain.index(after) + 1 :]
        for node in chain:
            if node.defines(name):
                facts = node.cls.methods.get(name)
                return Method(node, facts) if facts else None
        return None
