"""Hypothesis strategies: vLLM-style model trees, healthy, or with exactly one violation."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from contractfix.rules import ALL
from tests.property.modelgen import (
    Family,
    KeyList,
    Module,
    Param,
    Signature,
    Tree,
    Violation,
)

KEYS = ("hidden_states", "residual", "aux_hidden", "per_layer_inputs", "pre_mix", "deepstack_0")
STEMS = ("alpha", "bravo")
COMMENTS = (None, "# buffer", "# type: ignore", "# noqa: E501")
TYPE_IGNORE = (None, "# type: ignore", "# type: ignore[override]")

KINDS = {
    "drop_key": "PP001",
    "drop_conditional_key": "PP001",
    "read_unsent": "PP001",
    "required_it": "PP002",
    "extra_key": "PP003",
    "no_delegation": "PP004",
    "altered_output": "PP006",
    "get_access": "PP007",
}
"""Violation kinds and the rule that must report them (kinds of rules not registered are not drawn)."""


@st.composite
def keylists(draw, n_keys: int) -> KeyList:
    layout = draw(st.sampled_from(("inline", "wrapped", "multiline")))
    multiline = layout == "multiline"
    return KeyList(
        quote=draw(st.sampled_from(('"', "'"))),
        layout=layout,
        trailing_comma=draw(st.booleans()),
        comments=tuple(draw(st.sampled_from(COMMENTS)) for _ in range(n_keys)) if multiline else (),
        header=draw(st.sampled_from((None, "# keys sent between ranks"))) if multiline else None,
        keyword=draw(st.booleans()),
    )


def _it(annotation, default, comment) -> Param:
    return Param("intermediate_tensors", annotation, default, comment)


@st.composite
def wrapper_signatures(draw) -> Signature:
    """An entry forward that keeps the contract: `intermediate_tensors` defaults to None.

    Later positional parameters may carry `loses_default` (a prefix of them, so the violated
    signature stays valid Python)."""
    params = [
        Param("input_ids", draw(st.sampled_from(("torch.Tensor | None", "torch.Tensor", None)))),
        Param("positions", draw(st.sampled_from(("torch.Tensor", None)))),
    ]
    star = draw(st.sampled_from((None, "*", "*args")))
    if star:
        params.append(Param(star))
    annotation = draw(st.sampled_from(("IntermediateTensors | None", "IntermediateTensors", None)))
    params.append(_it(annotation, "None", draw(st.sampled_from(TYPE_IGNORE))))
    later = [("inputs_embeds", "torch.Tensor | None")] + draw(
        st.lists(st.sampled_from((("scale", "float | None"), ("attn_metadata", None), ("mask", "torch.Tensor"))), unique=True, max_size=2)
    )
    losing = draw(st.integers(0, len(later))) if not star else 0
    for i, (name, ann) in enumerate(later):
        params.append(Param(name, ann, "None", draw(st.sampled_from(TYPE_IGNORE)), loses_default=i < losing))
    if draw(st.booleans()):
        params.append(Param("**kwargs"))
    multiline = draw(st.booleans())
    if not multiline:
        params = [replace(p, comment=None) for p in params]
    return Signature(tuple(params), multiline, draw(st.sampled_from(TYPE_IGNORE)) if multiline else None)


@st.composite
def inner_signatures(draw) -> Signature:
    """An inner `*Model.forward`: not an entry, so its `intermediate_tensors` may be required."""
    default = draw(st.sampled_from(("None", None)))
    annotation = draw(st.sampled_from(("IntermediateTensors | None", "IntermediateTensors", None)))
    params = (
        Param("input_ids", "torch.Tensor | None"),
        Param("positions", "torch.Tensor"),
        _it(annotation, default, None),
        Param("inputs_embeds", "torch.Tensor | None", "None"),
    )
    return Signature(params, draw(st.booleans()))


@st.composite
def families(draw, stem: str) -> Family:
    keys = tuple(draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=4, unique=True)))
    producer = draw(st.sampled_from(("factory", "factory", "method", "closure")))
    conditional = None
    if producer == "factory" and draw(st.booleans()):
        conditional = draw(st.sampled_from([k for k in KEYS if k not in keys] or [None]))
    split = draw(st.booleans())
    return Family(
        stem=stem,
        keys=keys,
        reads=tuple(k for k in keys if draw(st.booleans())),
        read_style=draw(st.sampled_from(("subscript", "tensors", "tensors_get"))),
        producer=producer,
        keylist=draw(keylists(len(keys))),
        conditional=conditional,
        inner_sig=draw(inner_signatures()),
        wrapper_sig=draw(wrapper_signatures()),
        split=split,
        wrapper_base=split and draw(st.booleans()),
        relative_import=draw(st.booleans()),
        guarded_output=draw(st.booleans()),
        layer_range=draw(st.booleans()),
    )


@st.composite
def trees(draw) -> Tree:
    count = draw(st.integers(1, len(STEMS)))
    style = Module(
        newline=draw(st.sampled_from(("\n", "\r\n"))),
        tabs=draw(st.booleans()),
        optional=draw(st.sampled_from(("pipe", "typing"))),
        future=draw(st.booleans()),
    )
    return Tree(tuple(draw(families(s)) for s in STEMS[:count]), style, draw(st.booleans()))


def possible_kinds(f: Family) -> list[str]:
    """Violation kinds that make sense for this family and whose rule exists."""
    possible = {
        "drop_key": len(f.keys) > 1,
        "extra_key": True,
        "required_it": True,
        "no_delegation": not f.wrapper_base,
        "get_access": f.read_style == "tensors_get" and bool(f.reads),
        "drop_conditional_key": bool(f.conditional),
        "altered_output": True,
        "read_unsent": True,
    }
    return [k for k, ok in possible.items() if ok and KINDS[k] in ALL]


def violation(tree: Tree, index: int, kind: str) -> Violation:
    """What `check` must report for `kind` in family `index`, and whether a safe fix must undo it."""
    f = tree.families[index]
    fixable, classes = False, {f.inner}
    if kind == "read_unsent":
        classes = f.classes  # reported on the first class that reads through this factory
    if kind == "drop_key":
        fixable = f.producer == "factory"
        classes = {f.inner} if fixable else f.classes
    elif kind == "extra_key":
        fixable = f.producer == "factory"
        classes = {f.inner} if fixable else f.classes
    elif kind == "required_it":
        classes = {f.wrapper}
        losing = [p for p in f.wrapper_sig.params if p.loses_default]
        fixable = all(p.annotation and "None" in p.annotation for p in losing)
    elif kind in ("no_delegation", "altered_output"):
        classes = {f"{f.title}ForCausalLM"} if kind == "no_delegation" else {f.wrapper}
        fixable = kind == "no_delegation"
    elif kind in ("get_access", "drop_conditional_key"):
        fixable = True
    exact = fixable and not (kind == "drop_key" and f.conditional)  # the key goes after the conditional one
    if kind == "required_it" and f.wrapper_sig.it.annotation == "IntermediateTensors":
        exact = False  # the fix also widens the annotation: checked by scope, not by the twin
    sites = 2 if kind in ("drop_key", "extra_key") and f.conditional else 1  # one finding per factory branch
    return Violation(index, kind, KINDS[kind], frozenset(classes), fixable, exact, sites)


@st.composite
def violated_trees(draw) -> tuple[Tree, Violation]:
    tree = draw(trees())
    index = draw(st.integers(0, len(tree.families) - 1))
    f = tree.families[index]
    kind = draw(st.sampled_from(possible_kinds(f)))
    if kind == "drop_key":
        comments = f.keylist.comments[: len(f.keys) - 1] + (None,) if f.keylist.comments else ()
        f = replace(f, keylist=replace(f.keylist, comments=comments))
        tree = replace(tree, families=tree.families[:index] + (f,) + tree.families[index + 1 :])
    return tree, violation(tree, index, kind)
