"""The vLLM names the analysis looks for, and small `ast` helpers every fact module shares."""

from __future__ import annotations

import ast
import re

from .. import vllm_names
from ..unparse import unparse

ATTR = vllm_names.PRODUCER
FACTORY = vllm_names.FACTORY
IT = vllm_names.PARAM
IT_CLASS = vllm_names.TENSORS_CLASS
DYNAMIC_BUILDERS = {"initialize_model", "build_model", "_init_model", "init_model"}
REGISTERED_BUILDER = re.compile(r"init_\w+_registered_model")
"""vLLM's `init_vllm_registered_model`, under the name a fork that renamed the package gives it
(aphrodite's `init_aphrodite_registered_model`)."""
RANK_WORDS = ("is_first_rank", "is_last_rank", "get_pp_group", "pp_group", IT, "pp_rank", "pp_size",
              "start_layer", "end_layer")  # a rank's layer range (make_layers) is per rank, not configuration
AUX_PACKERS = {"pack_local_aux_hidden_states"}
AUX_COLLECTORS = {"collect_remote_aux_hidden_states"}
AUX_PATTERN = "aux_hidden_states_*"

Function = ast.FunctionDef | ast.AsyncFunctionDef


def dynamic_builder(name: str) -> bool:
    """Whether a call of `name` builds a model chosen at run time (by architecture or config)."""
    return name in DYNAMIC_BUILDERS or REGISTERED_BUILDER.fullmatch(name) is not None


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


def named(node: ast.expr | None) -> str | None:
    """A dotted name that is not an attribute of `self` (`InternLM2Model`, `models.Model`)."""
    chain = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    return ".".join(chain) if chain and chain[0] != "self" else None


def name_defaults(fn: Function) -> dict[str, str]:
    """Parameters whose default is a dotted name: a class the caller may replace."""
    args = fn.args
    positional = args.posonlyargs + args.args
    pairs = [*zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True),
             *zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    return {arg.arg: name for arg, default in pairs if (name := named(default))}


def base_name(node: ast.expr) -> str:
    """A base class as written, without its subscript: `nn.Module`, `Generic[T]` -> "Generic"."""
    if isinstance(node, ast.Subscript):
        node = node.value
    chain = dotted(node)
    return ".".join(chain) if chain else unparse(node)


def condition(test: ast.expr) -> tuple[str, bool] | None:
    """A configuration condition as (normalized source, polarity); None for rank/runtime tests."""
    polarity = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, polarity = test.operand, not polarity
    source = unparse(test)
    if any(word in source for word in RANK_WORDS):
        return None
    if "self." in source or "config" in source:
        return (source, polarity)
    return None


def always_exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


_TRIES = (ast.Try, getattr(ast, "TryStar", ast.Try))


def blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in a statement: the body and `else` of a `for`, `while`, `if`,
    `with` or definition, those of a `try` with its handlers' and `finally`, the `case`s of a
    `match`; none for a simple statement."""
    if isinstance(stmt, _TRIES):
        return [stmt.body, stmt.orelse, stmt.finalbody, *[h.body for h in stmt.handlers]]
    if isinstance(stmt, ast.Match):
        return [case.body for case in stmt.cases]
    return [stmt.body, getattr(stmt, "orelse", [])] if hasattr(stmt, "body") else []


def const_str(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None
