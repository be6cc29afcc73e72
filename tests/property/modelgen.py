"""Render vLLM-style model trees from a spec, healthy or with exactly one contract violation.

A `Tree` holds one or more model families (inner `*Model` with the producer and the forward that
reads and sends keys, plus the registered `*ForCausalLM` wrapper that delegates to it), each in one
file or split across two (a base class in `base_<stem>.py`). `render(tree, violation)` gives the
file texts; `render(tree)` gives the healthy twin, which is also what a safe fix of the violation
must produce byte for byte whenever `Violation.exact` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

MODELS = "vllm/model_executor/models"
PACKAGES = ("vllm/__init__.py", "vllm/model_executor/__init__.py", f"{MODELS}/__init__.py")
UNSENT = "never_sent"
EXTRA = "unused_buffer"


@dataclass(frozen=True)
class KeyList:
    """How a factory's literal key list is written."""

    quote: str = '"'
    layout: str = "wrapped"  # "inline" | "wrapped" (args on their own line) | "multiline" (a key per line)
    trailing_comma: bool = False
    comments: tuple[str | None, ...] = ()  # multiline: a trailing comment per key (None: none)
    header: str | None = None  # multiline: a comment line right after "["
    keyword: bool = False  # `keys=[...]`


@dataclass(frozen=True)
class Param:
    name: str
    annotation: str | None = None
    default: str | None = None
    comment: str | None = None  # trailing comment on the parameter's line (multiline signatures)
    loses_default: bool = False  # positional after intermediate_tensors: loses `= None` with it


@dataclass(frozen=True)
class Signature:
    """Parameters after `self`; names "*", "*args", "**kwargs" are the markers themselves."""

    params: tuple[Param, ...]
    multiline: bool = True
    def_comment: str | None = None  # e.g. "# type: ignore[override]" after "def forward("

    @property
    def it(self) -> Param:
        return next(p for p in self.params if p.name == "intermediate_tensors")

    def with_param(self, name: str, **changes) -> Signature:
        return replace(self, params=tuple(replace(p, **changes) if p.name == name else p for p in self.params))


@dataclass(frozen=True)
class Family:
    stem: str
    keys: tuple[str, ...]  # allocated == sent (F == P)
    reads: tuple[str, ...]  # read on non-first ranks, a subset of keys
    read_style: str  # "subscript" | "tensors" (x.tensors["k"]) | "tensors_get" (x.tensors.get("k"))
    producer: str  # "factory" | "method" | "closure"
    keylist: KeyList
    conditional: str | None  # an extra key allocated and sent only under `if self.use_<key>:`
    inner_sig: Signature
    wrapper_sig: Signature
    split: bool  # the inner model (and, with wrapper_base, the wrapper) live in base_<stem>.py
    wrapper_base: bool  # the registered wrapper inherits everything from a base wrapper
    relative_import: bool
    guarded_output: bool  # the wrapper post-processes the output after a non-last-rank return
    layer_range: bool = False  # "not last rank" spelled `self.end_layer != len(self.layers)`

    @property
    def title(self) -> str:
        return self.stem.capitalize()

    @property
    def inner(self) -> str:
        """The class that defines the producer and the inner forward."""
        return f"{self.title}BaseModel" if self.split else f"{self.title}Model"

    @property
    def wrapper(self) -> str:
        """The class that defines the wrapper's __init__ and forward."""
        return f"{self.title}BaseForCausalLM" if self.wrapper_base else f"{self.title}ForCausalLM"

    @property
    def classes(self) -> set[str]:
        return {self.inner, self.wrapper, f"{self.title}Model", f"{self.title}ForCausalLM"}

    def file_of(self, cls: str) -> str:
        base = f"{MODELS}/base_{self.stem}.py"
        if self.split and (cls == self.inner or cls == self.wrapper and self.wrapper_base):
            return base
        return f"{MODELS}/{self.stem}.py"


@dataclass(frozen=True)
class Module:
    """Per-file style: line endings, indentation, Optional spelling, future import."""

    newline: str = "\n"
    tabs: bool = False
    optional: str = "pipe"  # "pipe" (X | None) | "typing" (Optional[X], imported)
    future: bool = False


@dataclass(frozen=True)
class Tree:
    families: tuple[Family, ...]
    style: Module
    registry: bool


@dataclass(frozen=True)
class Violation:
    """One broken contract in family `family`, and what check and fix must say about it."""

    family: int
    kind: str
    rule: str
    classes: frozenset[str]  # the finding's class is one of these
    fixable: bool  # a safe fix is expected (applied by a default `fix`)
    exact: bool  # that fix must give the healthy twin byte for byte
    sites: int = 1  # findings expected: one per factory list it breaks


def render(tree: Tree, violation: Violation | None = None) -> dict[str, str]:
    files = {p: "" for p in PACKAGES}
    for index, family in enumerate(tree.families):
        kind = violation.kind if violation and violation.family == index else None
        files.update(_family_files(family, tree.style, kind))
    if tree.registry:
        files[f"{MODELS}/registry.py"] = _registry(tree.families)
    return {path: _styled(text, tree.style) for path, text in files.items()}


def _styled(text: str, style: Module) -> str:
    if style.tabs:
        lines = []
        for line in text.split("\n"):
            stripped = line.lstrip(" ")
            lines.append("\t" * ((len(line) - len(stripped)) // 4) + stripped)
        text = "\n".join(lines)
    return text.replace("\n", style.newline)


def _registry(families: tuple[Family, ...]) -> str:
    rows = "".join(f'    "{f.title}ForCausalLM": ("{f.stem}", "{f.title}ForCausalLM"),\n' for f in families)
    return f'"""Generated registry."""\n\n_TEXT_GENERATION_MODELS = {{\n{rows}}}\n'


def _header(style: Module, relative: str | None = None) -> str:
    lines = ['"""Generated vLLM-style model."""', ""]
    if style.future:
        lines += ["from __future__ import annotations", ""]
    if style.optional == "typing":
        lines += ["from typing import Optional", ""]
    lines += [
        "import torch",
        "from torch import nn",
        "",
        "from vllm.distributed import get_pp_group",
        "from vllm.model_executor.models.interfaces import SupportsPP",
        "from vllm.model_executor.models.utils import make_empty_intermediate_tensors_factory, make_layers",
        "from vllm.sequence import IntermediateTensors",
    ]
    if relative:
        lines.append(relative)
    return "\n".join(lines) + "\n"


def _family_files(f: Family, style: Module, kind: str | None) -> dict[str, str]:
    inner = _inner_class(f, f.inner, style, kind)
    wrapper = _wrapper_class(f, f.wrapper, f"{f.title}Model", style, kind)
    if not f.split:
        return {f.file_of(f.inner): _header(style) + "\n\n" + inner + "\n\n" + wrapper}
    names = [f.inner] + ([f.wrapper] if f.wrapper_base else [])
    source = f".base_{f.stem}" if f.relative_import else f"vllm.model_executor.models.base_{f.stem}"
    derived = f'class {f.title}Model({f.inner}):\n    """Same model, another name."""\n'
    base_parts = [inner]
    main_parts = [derived]
    if f.wrapper_base:
        base_parts.append(wrapper)
        main_parts.append(f"class {f.title}ForCausalLM({f.wrapper}):\n    pass\n")
    else:
        main_parts.append(wrapper)
    return {
        f.file_of(f.inner): _header(style) + "\n\n" + "\n\n".join(base_parts),
        f"{MODELS}/{f.stem}.py": _header(style, f"from {source} import {', '.join(names)}")
        + "\n\n"
        + "\n\n".join(main_parts),
    }


def _keys_for(f: Family, kind: str | None) -> tuple[str, ...]:
    if kind == "drop_key":
        return f.keys[:-1]
    if kind == "extra_key":
        return f.keys + (EXTRA,)
    return f.keys


def _inner_class(f: Family, name: str, style: Module, kind: str | None) -> str:
    out = [f"class {name}(nn.Module):", "    def __init__(self, config):", "        super().__init__()"]
    out += ["        self.hidden_size = config.hidden_size", "        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)"]
    if f.layer_range:
        out += ["        self.start_layer, self.end_layer, self.layers = make_layers(config.num_hidden_layers)"]
    keys = _keys_for(f, kind)
    if f.conditional:
        out.append(f"        self.use_{f.conditional} = config.use_{f.conditional}")
        extra = () if kind == "drop_conditional_key" else (f.conditional,)
        out.append(f"        if self.use_{f.conditional}:")
        out += _factory(keys + extra, f.keylist, 12)
        out.append("        else:")
        out += _factory(keys, f.keylist, 12)
    elif f.producer == "factory":
        out += _factory(keys, f.keylist, 8)
    elif f.producer == "closure":
        out += ["", "        def make_empty_intermediate_tensors(batch_size, dtype, device):"]
        out += _alloc_return(keys, 12, "config.hidden_size")
        out += ["", "        self.make_empty_intermediate_tensors = make_empty_intermediate_tensors"]
    out.append("")
    if f.producer == "method":
        out += [
            "    def make_empty_intermediate_tensors(",
            "        self, batch_size: int, dtype: torch.dtype, device: torch.device",
            "    ) -> IntermediateTensors:",
        ]
        out += _alloc_return(keys, 8, "self.hidden_size")
        out.append("")
    out += _signature(f.inner_sig, style, "torch.Tensor | IntermediateTensors")
    out += _inner_body(f, kind)
    return "\n".join(out) + "\n"


def _alloc_return(keys: tuple[str, ...], indent: int, width: str) -> list[str]:
    pad = " " * indent
    lines = [f"{pad}return IntermediateTensors({{"]
    lines += [
        f'{pad}    "{k}": torch.zeros((batch_size, {width}), dtype=dtype, device=device),' for k in keys
    ]
    return lines + [f"{pad}}})"]


def _factory(keys: tuple[str, ...], style: KeyList, indent: int) -> list[str]:
    pad = " " * indent
    head = f"{pad}self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory("
    keyword = "keys=" if style.keyword else ""
    width = "hidden_size=config.hidden_size" if style.keyword else "config.hidden_size"
    quoted = [f"{style.quote}{k}{style.quote}" for k in keys]
    if style.layout == "inline":
        items = ", ".join(quoted) + ("," if style.trailing_comma else "")
        return [f"{head}{keyword}[{items}], {width})"]
    if style.layout == "wrapped":
        items = ", ".join(quoted) + ("," if style.trailing_comma else "")
        return [head, f"{pad}    {keyword}[{items}], {width}", f"{pad})"]
    lines = [head, f"{pad}    {keyword}["]
    if style.header:
        lines.append(f"{pad}        {style.header}")
    for i, q in enumerate(quoted):
        comma = "," if i < len(quoted) - 1 or style.trailing_comma else ""
        comment = style.comments[i] if i < len(style.comments) else None
        lines.append(f"{pad}        {q}{comma}" + (f"  {comment}" if comment else ""))
    return lines + [f"{pad}    ],", f"{pad}    {width},", f"{pad})"]


def _annotation(text: str | None, style: Module) -> str | None:
    """Spell "X | None" annotations in the module's Optional style."""
    if text and style.optional == "typing" and text.endswith(" | None"):
        return f"Optional[{text.removesuffix(' | None')}]"
    return text


def _signature(sig: Signature, style: Module, returns: str) -> list[str]:
    def one(p: Param) -> str:
        if p.name.startswith("*"):
            return p.name
        annotation = _annotation(p.annotation, style)
        text = p.name + (f": {annotation}" if annotation else "")
        if p.default is not None:
            text += f" = {p.default}" if annotation else f"={p.default}"
        return text

    if not sig.multiline:
        return [f"    def forward(self, {', '.join(one(p) for p in sig.params)}) -> {returns}:"]
    opener = "    def forward(" + (f"  {sig.def_comment}" if sig.def_comment else "")
    lines = [opener, "        self,"]
    lines += [f"        {one(p)}," + (f"  {p.comment}" if p.comment else "") for p in sig.params]
    return lines + [f"    ) -> {returns}:"]


def _read_expr(f: Family, key: str, kind: str | None) -> str:
    if f.read_style == "tensors":
        return f'intermediate_tensors.tensors["{key}"]'
    if f.read_style == "tensors_get":
        broken = kind == "get_access" and key == f.reads[0]  # one unsupported access, one finding
        return f'intermediate_tensors.get("{key}")' if broken else f'intermediate_tensors.tensors.get("{key}")'
    return f'intermediate_tensors["{key}"]'


def _inner_body(f: Family, kind: str | None) -> list[str]:
    reads = f.reads + ((UNSENT,) if kind == "read_unsent" else ())
    out = ["        if get_pp_group().is_first_rank:", "            hidden_states = self.embed(input_ids)"]
    out += ["        else:"]
    out += [f"            {k} = {_read_expr(f, k, kind)}" for k in f.reads] or ["            pass"]
    if kind == "read_unsent":  # a subscript: `.tensors.get` of a missing key is fine (None)
        out.append(f'            {UNSENT} = intermediate_tensors["{UNSENT}"]')
    if reads and "hidden_states" not in reads:
        out.append(f"            hidden_states = {reads[0]}")
    out += ["        if self.end_layer != len(self.layers):" if f.layer_range else "        if not get_pp_group().is_last_rank:"]
    if f.conditional:
        sent = f.keys + (f.conditional,)
        out += [f"            if self.use_{f.conditional}:", f"                return {_send(sent)}"]
    out += [f"            return {_send(f.keys)}", "        return hidden_states"]
    return out


def _send(keys: tuple[str, ...]) -> str:
    return "IntermediateTensors({" + ", ".join(f'"{k}": hidden_states' for k in keys) + "})"


def _wrapper_class(f: Family, name: str, inner: str, style: Module, kind: str | None) -> str:
    out = [
        f"class {name}(nn.Module, SupportsPP):",
        '    def __init__(self, *, vllm_config, prefix: str = ""):',
        "        super().__init__()",
        "        config = vllm_config.model_config.hf_config",
        f"        self.model = {inner}(config)",
    ]
    if kind != "no_delegation" and style.tabs:  # right after the last module built, as vLLM mostly writes it
        out.append("        self.make_empty_intermediate_tensors = self.model.make_empty_intermediate_tensors")
    elif kind != "no_delegation":  # over 88 columns with spaces: wrapped, as ruff formats vLLM
        out += [
            "        self.make_empty_intermediate_tensors = (",
            "            self.model.make_empty_intermediate_tensors",
            "        )",
        ]
    out.append("        self.scale = config.logit_scale")
    out.append("")
    sig = f.wrapper_sig
    if kind == "required_it":
        sig = _required(sig)
    out += _signature(sig, style, "torch.Tensor | IntermediateTensors")
    call = _inner_call(sig)
    if kind == "altered_output":
        out += [f"        hidden_states = {call}", "        return hidden_states * self.scale"]
    elif f.guarded_output:
        out += [
            f"        hidden_states = {call}",
            "        if not get_pp_group().is_last_rank:",
            "            return hidden_states",
            "        return hidden_states * self.scale",
        ]
    else:
        out.append(f"        return {call}")
    return "\n".join(out) + "\n"


def _required(sig: Signature) -> Signature:
    """The signature with `intermediate_tensors`, and the parameters marked `loses_default`,
    stripped of their `= None`."""
    return replace(sig, params=tuple(
        replace(p, default=None) if p.name == "intermediate_tensors" or p.loses_default else p for p in sig.params
    ))


def _inner_call(sig: Signature) -> str:
    names = [p.name for p in sig.params if not p.name.startswith("*") and p.name != "intermediate_tensors"]
    args = ", ".join(names[:2])
    return f"self.model({args}, intermediate_tensors=intermediate_tensors)"
