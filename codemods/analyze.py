"""Extract `ModuleFacts` from one module with the stdlib `ast`: static, nothing is imported."""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize

from . import loading
from .facts import (
    Access,
    AlteredOutput,
    Call,
    ClassFacts,
    FunctionFacts,
    Guard,
    KeyUse,
    ModuleFacts,
    Param,
    Producer,
    Submodule,
)

ATTR = "make_empty_intermediate_tensors"
FACTORY = "make_empty_intermediate_tensors_factory"
IT = "intermediate_tensors"
DYNAMIC_BUILDERS = {"init_vllm_registered_model", "initialize_model", "build_model", "_init_model", "init_model"}
RANK_WORDS = ("is_first_rank", "is_last_rank", "get_pp_group", "pp_group", IT, "pp_rank", "pp_size",
              "start_layer", "end_layer")  # a rank's layer range (make_layers) is per rank, not configuration
AUX_PACKERS = {"pack_local_aux_hidden_states"}
AUX_COLLECTORS = {"collect_remote_aux_hidden_states"}
AUX_PATTERN = "aux_hidden_states_*"
SUPPRESSION = re.compile(r"#\s*contractfix:\s*ignore\[([A-Z0-9,\s]+)\]")


def analyze_source(source: bytes, path: str, module: str) -> ModuleFacts:
    """Parse `source` and return its facts. Raises SyntaxError / ValueError on bad input."""
    tree = ast.parse(source, filename=path)
    _char_columns(tree, source)
    text = source.decode("utf-8", errors="replace")
    facts = ModuleFacts(
        path=path,
        module=module,
        uses_pipe_optional="| None" in text,
        uses_typing_optional="Optional[" in text,
        future_annotations="from __future__ import annotations" in text,
        suppressions=_suppressions(text),
    )
    lines = text.splitlines()
    for node in _module_statements(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _record_import(facts, node)
        elif isinstance(node, ast.ClassDef):
            facts.classes[node.name] = _ClassAnalyzer(node, lines).run()
    return facts


def _char_columns(tree: ast.AST, source: bytes) -> None:
    """ast counts columns in UTF-8 bytes; libcst, editors and SARIF count characters. Convert,
    on the lines where the two differ."""
    if source.isascii():
        return
    encoding = tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    lines = re.split(r"\r\n|\r|\n", source.decode(encoding, errors="replace"))
    wide = [number for number, line in enumerate(lines, start=1) if not line.isascii()]
    ends = set(wide)

    def chars(number: int, offset: int) -> int:
        return len(lines[number - 1].encode()[:offset].decode("utf-8", errors="replace"))

    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        first = getattr(node, "lineno", None)
        if first is not None:
            at = bisect.bisect_left(wide, first)
            if at == len(wide) or wide[at] > (node.end_lineno or first):
                continue  # no wide line in this subtree
            if wide[at] == first:
                node.col_offset = chars(first, node.col_offset)
            if node.end_col_offset is not None and node.end_lineno in ends:
                node.end_col_offset = chars(node.end_lineno, node.end_col_offset)
        stack.extend(ast.iter_child_nodes(node))


def _suppressions(text: str) -> dict[int, tuple[str, ...]]:
    if "contractfix:" not in text:
        return {}
    found = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = SUPPRESSION.search(line)
        if match:
            found[number] = tuple(c.strip() for c in match.group(1).split(",") if c.strip())
    return found


def _module_statements(body: list[ast.stmt]):
    """Module-level statements, looking into `if` / `try` blocks (TYPE_CHECKING, platform)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _module_statements(node.body)
            yield from _module_statements(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *[h.body for h in node.handlers]):
                yield from _module_statements(block)
        else:
            yield node


def _record_import(facts: ModuleFacts, node: ast.Import | ast.ImportFrom) -> None:
    if isinstance(node, ast.Import):
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            target = alias.name if alias.asname else alias.name.split(".")[0]
            facts.imports.setdefault(local, []).append((target, None))
        return
    base = node.module or ""
    if node.level:
        package = facts.module.split(".")
        if not facts.path.endswith("__init__.py"):
            package = package[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    for alias in node.names:
        if alias.name != "*":
            facts.imports.setdefault(alias.asname or alias.name, []).append((base, alias.name))


def dotted(node: ast.AST) -> tuple[str, ...] | None:
    """`self.model.forward` -> ("self", "model", "forward"); `super().forward` -> ("super", "forward")."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super":
        parts.append("super")
    else:
        return None
    return tuple(reversed(parts))


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        node = node.value
    chain = dotted(node)
    return ".".join(chain) if chain else ast.unparse(node)


def _condition(test: ast.expr) -> tuple[str, bool] | None:
    """A configuration condition as (normalized source, polarity); None for rank/runtime tests."""
    polarity = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, polarity = test.operand, not polarity
    source = ast.unparse(test)
    if any(word in source for word in RANK_WORDS):
        return None
    if "self." in source or "config" in source:
        return (source, polarity)
    return None


def _always_exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[Param]:
    args = fn.args
    out: list[Param] = []
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for index, (arg, default) in enumerate(zip(positional, defaults, strict=False)):
        kind = "posonly" if index < len(args.posonlyargs) else "positional"
        out.append(_param(arg, kind, default))
    if args.vararg:
        out.append(_param(args.vararg, "vararg", None))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=False):
        out.append(_param(arg, "kwonly", default))
    if args.kwarg:
        out.append(_param(args.kwarg, "kwarg", None))
    return out


def _param(arg: ast.arg, kind: str, default: ast.expr | None) -> Param:
    return Param(
        name=arg.arg,
        kind=kind,
        line=arg.lineno,
        column=arg.col_offset,
        has_default=default is not None,
        default_is_none=isinstance(default, ast.Constant) and default.value is None,
        annotation=ast.unparse(arg.annotation) if arg.annotation is not None else None,
    )


class _ClassAnalyzer:
    def __init__(self, node: ast.ClassDef, lines: list[str]) -> None:
        self.node = node
        self.lines = lines
        self.facts = ClassFacts(
            name=node.name,
            line=node.lineno,
            column=node.col_offset,
            bases=[_base_name(b) for b in node.bases],
        )
        self.facts.is_protocol = any(b.split(".")[-1] == "Protocol" for b in self.facts.bases)

    def run(self) -> ClassFacts:
        defs = {}
        for item in self.node.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs[item.name] = item
                self._method(item)
            elif isinstance(item, ast.Assign):
                self._class_attribute(item)
        for producer in self.facts.producers:
            if producer.kind == "method" and producer.method in defs and producer.method != ATTR:
                self.facts.methods[producer.method] = _FunctionAnalyzer(defs[producer.method], producer=True).run()
        if loading.wanted(self.lines[self.node.lineno - 1 : self.node.end_lineno]):
            self.facts.loading = loading.loading_facts(self.node, self.lines)
        return self.facts

    def mentions(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether a method's source names intermediate tensors at all (a text test, no walk)."""
        body = self.lines[fn.lineno - 1 : fn.end_lineno]
        return any("ntermediate" in line and (IT in line or "IntermediateTensors" in line) for line in body)

    def _class_attribute(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id == ATTR:
                self.facts.producers.append(
                    Producer("unknown", node.lineno, node.col_offset, attr=ATTR)
                )

    def _method(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.facts.method_names.add(fn.name)
        if fn.name == ATTR:
            facts = _FunctionAnalyzer(fn, producer=True).run()
            self.facts.methods[fn.name] = facts
            self.facts.producers.append(
                Producer("method", fn.lineno, fn.col_offset, method=fn.name)
            )
            return
        if fn.name == "__init__":
            for stmt in fn.body:
                for attr in _assigned_in(stmt):
                    self.facts.init_last_assign[attr] = stmt.end_lineno or stmt.lineno
            built = next((stmt for stmt in reversed(fn.body) if _builds(stmt)), None)
            self.facts.init_last_build = built.end_lineno or built.lineno if built else 0
            self.facts.init_calls = tuple(_init_calls(fn))
        _InitWalker(self.facts, fn).walk(fn.body, ())
        if self.mentions(fn):
            self.facts.methods[fn.name] = _FunctionAnalyzer(fn, producer=False).run()


def _builds(stmt: ast.stmt) -> bool:
    """Whether a statement constructs something: calls a class (a capitalized name) or a builder."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call):
            chain = dotted(node.func) or ("",)
            if chain[-1][:1].isupper() or chain[-1] in DYNAMIC_BUILDERS:
                return True
    return False


def _init_calls(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The `__init__` calls among the method's top-level statements: `super().__init__(...)` ->
    "super"; `super(Base, self).__init__()` -> "super:Base" (the classes after Base);
    `Base.__init__(self, ...)` -> "Base"."""
    found = []
    for stmt in fn.body:
        node = stmt.value if isinstance(stmt, ast.Expr) else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            owner = node.func.value
            chain = dotted(owner)
            if isinstance(owner, ast.Call) and owner.args and chain == ("super",):
                start = dotted(owner.args[0])
                chain = ("super:" + ".".join(start),) if start else None
            if chain and ".".join(chain) not in found:
                found.append(".".join(chain))
    return found


def _assigned_in(stmt: ast.stmt) -> list[str]:
    """`self.<attr>` assigned by a statement, or unconditionally inside its `with` blocks."""
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [attr for inner in stmt.body for attr in _assigned_in(inner)]
    return _self_targets(stmt)


def _self_targets(stmt: ast.stmt) -> list[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else (
        [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    )
    return [
        t.attr
        for t in targets
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    ]


class _InitWalker:
    """Finds producers (`self.make_empty_intermediate_tensors = ...`) and submodules in a method."""

    def __init__(self, facts: ClassFacts, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.facts = facts
        self.fn = fn
        self.nested = {
            n.name: n for n in fn.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        }

    def walk(self, body: list[ast.stmt], guard: Guard) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                cond = _condition(stmt.test)
                self.walk(stmt.body, guard + ((cond,) if cond else ()))
                negated = ((cond[0], not cond[1]),) if cond else ()
                self.walk(stmt.orelse, guard + negated)
            elif isinstance(stmt, (ast.With, ast.For, ast.While, ast.Try)):
                for block in _blocks(stmt):
                    self.walk(block, guard)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                self._assign(stmt, guard)

    def _assign(self, stmt: ast.Assign | ast.AnnAssign, guard: Guard) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            if isinstance(target, ast.Name):
                sub = _submodule(target.id, stmt.value, stmt.lineno)
                if sub:
                    self.facts.locals_.setdefault(target.id, []).append(sub)
                continue
            if not (isinstance(target, ast.Attribute) and dotted(target.value) == ("self",)):
                continue
            if target.attr == ATTR:
                self.facts.producers.append(self._producer(stmt, guard))
            elif target.attr.startswith("make_empty") and target.attr != ATTR:
                self.facts.misspelled_producer.append(
                    Producer("unknown", stmt.lineno, stmt.col_offset, attr=target.attr)
                )
            else:
                sub = _submodule(target.attr, stmt.value, stmt.lineno)
                if sub is None and isinstance(stmt, ast.AnnAssign):
                    sub = _annotated(target.attr, stmt.annotation, stmt.lineno)
                if sub is None and isinstance(stmt.value, ast.Name):
                    for local in self.facts.locals_.get(stmt.value.id, []):
                        sub = Submodule(target.attr, local.ctor, stmt.lineno, local.dynamic)
                if sub:
                    self.facts.submodules.setdefault(target.attr, []).append(sub)

    def _producer(self, stmt: ast.Assign | ast.AnnAssign, guard: Guard) -> Producer:
        value = stmt.value
        where = dict(line=stmt.lineno, column=stmt.col_offset, guard=guard, scope=self.fn.name)
        if isinstance(value, ast.Call) and (dotted(value.func) or ("",))[-1] == FACTORY:
            keys_node = value.args[0] if value.args else next(
                (k.value for k in value.keywords if k.arg in ("keys", "tensor_names")), None
            )
            keys = None
            if isinstance(keys_node, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in keys_node.elts
            ):
                keys = tuple(e.value for e in keys_node.elts)
            return Producer(
                "factory",
                keys=keys,
                list_line=getattr(keys_node, "lineno", 0),
                list_column=getattr(keys_node, "col_offset", 0),
                **where,
            )
        chain = dotted(value) if isinstance(value, ast.Attribute) else None
        if chain and chain[-1] == ATTR and len(chain) > 1:
            return Producer("delegate", target=chain[:-1], **where)
        if chain and chain[0] == "self" and len(chain) == 2:
            return Producer("method", method=chain[1], **where)
        if isinstance(value, ast.Name) and value.id in self.nested:
            name = f"{self.fn.name}.<locals>.{value.id}"
            self.facts.methods[name] = _FunctionAnalyzer(self.nested[value.id], producer=True).run()
            return Producer("method", method=name, **where)
        return Producer("unknown", **where)


def _submodule(attr: str, value: ast.expr, line: int) -> Submodule | None:
    """`self.<attr> = Cls(...)`; built by a method or a class held by the instance
    (`self._init_model(...)`, `self.model_cls(...)`), it is dynamic."""
    if not isinstance(value, ast.Call):
        return None
    chain = dotted(value.func)
    if chain is not None and chain[0] == "self" and len(chain) == 2:
        return Submodule(attr, ".".join(chain), line, dynamic=True)
    if chain is None or chain[0] == "self":
        return None
    name = ".".join(chain)
    if chain[-1] not in DYNAMIC_BUILDERS:
        return Submodule(attr, name, line, dynamic=False)
    archs = next((k.value for k in value.keywords if k.arg == "architectures"), None)
    named = archs.elts if isinstance(archs, (ast.List, ast.Tuple)) else []
    arch = _const_str(named[0]) if len(named) == 1 else None
    return Submodule(attr, name, line, dynamic=True, arch=arch or "")


def _annotated(attr: str, annotation: ast.expr, line: int) -> Submodule | None:
    """`self.x: Decoder | None = None`: the declared class (`Decoder`), when there is one."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        named = [n for n in sides if not (isinstance(n, ast.Constant) and n.value is None)]
        annotation = named[0] if len(named) == 1 else annotation
    elif isinstance(annotation, ast.Subscript) and (dotted(annotation.value) or ("",))[-1] == "Optional":
        annotation = annotation.slice
    chain = dotted(annotation) if isinstance(annotation, (ast.Name, ast.Attribute)) else None
    if chain is None or chain[0] == "self":
        return None
    return Submodule(attr, ".".join(chain), line, dynamic=False)


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(stmt, ast.Try):
        return [stmt.body, stmt.orelse, stmt.finalbody, *[h.body for h in stmt.handlers]]
    return [stmt.body, getattr(stmt, "orelse", [])]


class _FunctionAnalyzer:
    """Keys read / sent / allocated in one function, with their configuration guards."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, producer: bool) -> None:
        self.fn = fn
        self.producer = producer
        self.facts = FunctionFacts(fn.name, fn.lineno, fn.col_offset, params=_params(fn))
        self.aliases = {IT}
        self.kwargs_dicts: set[str] = set()
        self.local_dicts: dict[str, list[KeyUse]] = {}
        self.it_vars: dict[str, list[KeyUse]] = {}
        self.relays: dict[str, tuple[tuple[str, ...], int]] = {}
        self.self_aliases: dict[str, tuple[str, ...]] = {}

    def run(self) -> FunctionFacts:
        self._block(self.fn.body, ())
        if not self.producer:
            self.facts.altered = _altered_output(self.fn, self._passes_it)
        return self.facts

    def _block(self, body: list[ast.stmt], guard: Guard) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, ast.If):
                cond = _condition(stmt.test)
                self._expr(stmt.test, guard)
                self._block(stmt.body, guard + ((cond,) if cond else ()))
                negated = ((cond[0], not cond[1]),) if cond else ()
                self._block(stmt.orelse, guard + negated)
                if cond and _always_exits(stmt.body) and not stmt.orelse:
                    guard = guard + negated
                continue
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try)):
                for child in ast.iter_child_nodes(stmt):
                    if isinstance(child, ast.expr):
                        self._expr(child, guard)
                for block in _blocks(stmt):
                    self._block(block, guard)
                continue
            self._statement(stmt, guard)

    def _statement(self, stmt: ast.stmt, guard: Guard) -> None:
        if isinstance(stmt, ast.Assign):
            self._assignment(stmt.targets, stmt.value, guard)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assignment([stmt.target], stmt.value, guard)
        elif isinstance(stmt, ast.Return) and stmt.value is not None:
            self._return(stmt.value, guard)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            chain = dotted(call.func) or ()
            if len(chain) == 2 and chain[0] in self.local_dicts and chain[1] == "update":
                self.local_dicts[chain[0]].append(KeyUse(None, stmt.lineno, guard))
        self._expr(stmt, guard, skip_returned=isinstance(stmt, ast.Return))

    def _assignment(self, targets: list[ast.expr], value: ast.expr, guard: Guard) -> None:
        for target in targets:
            if isinstance(target, ast.Name):
                relay = self._relay(value)
                if relay:
                    self.relays[target.id] = (relay, value.lineno)
                else:
                    self.relays.pop(target.id, None)
                chain = dotted(value) if isinstance(value, ast.Attribute) else None
                if chain and chain[0] == "self":
                    self.self_aliases[target.id] = chain
                else:
                    self.self_aliases.pop(target.id, None)
                if isinstance(value, ast.Name) and value.id in self.aliases:
                    self.aliases.add(target.id)
                elif isinstance(value, ast.Dict):
                    self.local_dicts[target.id] = self._dict_keys(value, guard)
                    if any(isinstance(v, ast.Name) and v.id in self.aliases for v in value.values):
                        self.kwargs_dicts.add(target.id)
                elif _is_it_ctor(value):
                    self.it_vars[target.id] = self._ctor_keys(value, guard)
                elif self._is_delegated_alloc(value):
                    self.it_vars[target.id] = []
            elif isinstance(target, ast.Subscript) and isinstance(target.value, (ast.Name, ast.Attribute)):
                owner = target.value
                if isinstance(owner, ast.Attribute) and owner.attr == "tensors":
                    owner = owner.value
                if isinstance(owner, ast.Name):
                    key = _const_str(target.slice)
                    use = KeyUse(key, target.lineno, guard)
                    if owner.id in self.local_dicts:
                        self.local_dicts[owner.id].append(use)
                    elif owner.id in self.it_vars:
                        self.it_vars[owner.id].append(use)

    def _return(self, value: ast.expr, guard: Guard) -> None:
        keys: list[KeyUse] | None = None
        if _is_it_ctor(value):
            keys = self._ctor_keys(value, guard)
        elif isinstance(value, ast.Name) and value.id in self.it_vars:
            keys = [KeyUse(u.key, u.line, guard + u.guard[len(guard):]) for u in self.it_vars[value.id]]
        if keys is not None:
            (self.facts.allocs if self.producer else self.facts.sends).extend(keys)
            arg = value.args[0] if isinstance(value, ast.Call) and value.args else None
            if self.producer and isinstance(arg, ast.Dict):
                self.facts.alloc_dicts.append((arg.lineno, arg.col_offset))
        if self.producer and self._is_delegated_alloc(value):
            return
        if isinstance(value, ast.Call) and self._passes_it(value):
            chain = self._callee(value.func)
            if chain:
                self.facts.calls.append(Call(chain, value.lineno, guard, returned=True))
        elif not self.producer and (self._relay(value) or isinstance(value, ast.Name) and value.id in self.relays):
            chain, line = (self._relay(value), value.lineno) if isinstance(value, ast.Call) else self.relays[value.id]
            self.facts.calls.append(Call(chain, line, guard, returned=True, relay=True))

    def _relay(self, value: ast.expr) -> tuple[str, ...] | None:
        """`self.sub(...)` / `self.sub.forward(...)` not handed intermediate_tensors: its chain."""
        if not isinstance(value, ast.Call) or self._passes_it(value):
            return None
        chain = self._callee(value.func)
        return chain if chain and len(chain) >= 2 and chain[0] == "self" else None

    def _callee(self, func: ast.expr) -> tuple[str, ...] | None:
        """The callee's chain, a local alias of a `self` attribute spelled out
        (`decode = self.decoder` ... `decode.plan(...)` -> ("self", "decoder", "plan"))."""
        chain = dotted(func)
        if chain and chain[0] in self.self_aliases:
            return self.self_aliases[chain[0]] + chain[1:]
        return chain

    def _is_delegated_alloc(self, value: ast.expr) -> bool:
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
            return False
        chain = dotted(value.func)
        if chain and chain[-1] == ATTR and len(chain) > 1:
            self.facts.alloc_delegations.append(Call(chain[:-1], value.lineno))
            return True
        return False

    def _ctor_keys(self, call: ast.Call, guard: Guard) -> list[KeyUse]:
        arg = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg == "tensors"), None
        )
        if isinstance(arg, ast.Dict):
            return self._dict_keys(arg, guard)
        if isinstance(arg, ast.Name) and arg.id in self.local_dicts:
            return list(self.local_dicts[arg.id])
        if isinstance(arg, ast.Call) and dotted(arg.func) == ("dict",):
            return [KeyUse(k.arg, call.lineno, guard) for k in arg.keywords]
        return [KeyUse(None, call.lineno, guard)]

    def _dict_keys(self, node: ast.Dict, guard: Guard) -> list[KeyUse]:
        """Literal keys; `**spread` is unknown, except EAGLE-3's aux packing, whose keys follow
        `AUX_PATTERN` (the runner allocates them itself, vllm-pp-contract A.2.5)."""
        return [
            KeyUse(
                _const_str(k) if k is not None else _spread_pattern(v),
                getattr(k, "lineno", node.lineno) if k is not None else v.lineno,
                guard,
            )
            for k, v in zip(node.keys, node.values, strict=False)
        ]

    def _passes_it(self, call: ast.Call) -> bool:
        for arg in [*call.args, *[k.value for k in call.keywords]]:
            if isinstance(arg, ast.Name) and arg.id in self.aliases:
                return True
            if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name) and arg.value.id in self.aliases:
                return True
        return any(
            k.arg is None and isinstance(k.value, ast.Name) and k.value.id in self.kwargs_dicts
            for k in call.keywords
        )

    def _expr(self, root: ast.AST, guard: Guard, skip_returned: bool = False) -> None:
        """Visit an expression tree; `a if self.flag else b` guards each branch by the flag."""
        stack: list[tuple[ast.AST, Guard]] = [(root, guard)]
        while stack:
            node, where = stack.pop()
            if isinstance(node, ast.IfExp):
                cond = _condition(node.test)
                stack.append((node.test, where))
                stack.append((node.body, where + ((cond,) if cond else ())))
                stack.append((node.orelse, where + (((cond[0], not cond[1]),) if cond else ())))
                continue
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                self._read(node, where)
            elif isinstance(node, ast.Call):
                self._call(node, where, root, skip_returned)
            elif isinstance(node, ast.Compare):
                for op, right in zip(node.ops, node.comparators, strict=False):
                    if isinstance(op, (ast.In, ast.NotIn)) and self._is_alias(right):
                        self.facts.accesses.append(
                            Access("in", node.lineno, node.col_offset, ast.unparse(node))
                        )
            stack.extend((child, where) for child in ast.iter_child_nodes(node))

    def _is_alias(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and node.id in self.aliases

    def _read(self, node: ast.Subscript, guard: Guard) -> None:
        owner = node.value
        if isinstance(owner, ast.Attribute) and owner.attr == "tensors":
            owner = owner.value
        if not self._is_alias(owner):
            return
        if isinstance(node.slice, ast.Slice):
            return
        self.facts.reads.append(KeyUse(_const_str(node.slice), node.lineno, guard))

    def _call(self, node: ast.Call, guard: Guard, root: ast.AST, skip_returned: bool) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "get" and self._is_alias(func.value):
            self.facts.accesses.append(
                Access("get", node.lineno, node.col_offset, ast.unparse(node))
            )
            self.facts.reads.append(
                KeyUse(_const_str(node.args[0]) if node.args else None, node.lineno, guard)
            )
            return
        if skip_returned and isinstance(root, ast.Return) and node is root.value:
            return
        if self._passes_it(node):
            chain = self._callee(func)
            if chain and chain[-1] in AUX_COLLECTORS:
                self.facts.reads.append(KeyUse(AUX_PATTERN, node.lineno, guard))
            elif chain:
                self.facts.calls.append(Call(chain, node.lineno, guard))


def _altered_output(fn: ast.FunctionDef | ast.AsyncFunctionDef, passes_it) -> list[AlteredOutput]:
    """Where a forward transforms what an inner call returned, before any non-last-rank return.

    For each top-level `v = self.inner(..., intermediate_tensors, ...)`, looks at the statements
    after it: a guard (`if not get_pp_group().is_last_rank: return ...`, `if isinstance(v, ...):
    return ...`) or `return v` ends the search; a use of `v` under a configuration condition is
    skipped (it cannot be proven to run under pipeline parallelism); any other use of `v` is an
    alteration. `return self.head(self.inner(...))` is one too.
    """
    found: list[AlteredOutput] = []
    for index, stmt in enumerate(fn.body):
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call) and not passes_it(stmt.value):
            for inner in ast.walk(stmt.value):
                if isinstance(inner, ast.Call) and inner is not stmt.value and passes_it(inner):
                    found.append(AlteredOutput("", stmt.lineno, stmt.lineno, 0, dotted(inner.func) or ()))
                    break
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
            continue
        if isinstance(stmt.value, ast.Call) and passes_it(stmt.value):
            line = _first_alteration(stmt.targets[0].id, fn.body[index + 1 :])
            if line:
                target = dotted(stmt.value.func) or ()
                found.append(AlteredOutput(stmt.targets[0].id, stmt.lineno, line, stmt.end_lineno or stmt.lineno, target))
    return found


def _first_alteration(name: str, body: list[ast.stmt]) -> int:
    def uses(node: ast.AST) -> bool:
        return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))

    for stmt in body:
        if isinstance(stmt, ast.If):
            test = ast.unparse(stmt.test)
            returns = any(isinstance(n, ast.Return) for n in ast.walk(stmt))
            if returns and ("is_last_rank" in test or "IntermediateTensors" in test or f"isinstance({name}," in test):
                return 0
            if _condition(stmt.test) is not None and not uses(stmt.test):
                continue
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Name) and stmt.value.id == name:
            return 0
        if uses(stmt):
            return stmt.lineno
    return 0


def _spread_pattern(value: ast.expr) -> str | None:
    if isinstance(value, ast.Call) and (dotted(value.func) or ("",))[-1] in AUX_PACKERS:
        return AUX_PATTERN
    return None


def _is_it_ctor(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and (dotted(node.func) or ("",))[-1] == "IntermediateTensors"


def _const_str(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None
