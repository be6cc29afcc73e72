"""PP015: which guards of a received key's read rest on a value only the first rank has."""

from __future__ import annotations

import ast
import textwrap

import pytest

from contractfix.families.pp.facts.keyguards import key_guards

SIGNATURE = "def forward(self, input_ids, intermediate_tensors=None, extra=None, flag=False):\n"


def _guards(body: str):
    source = "class Toy:\n" + textwrap.indent(SIGNATURE + textwrap.indent(textwrap.dedent(body), " " * 4), " " * 4)
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ClassDef)
    return key_guards(node, source.splitlines())


@pytest.mark.parametrize(("body", "exact"), [
    ("if get_pp_group().is_first_rank:\n    extra = self.embed(extra)\nelse:\n"
     "    if extra is not None:\n        extra = intermediate_tensors['extra']\n", True),
    ("if not self.pp_group.is_first_rank:\n    if extra is not None:\n"
     "        extra = intermediate_tensors.tensors['extra']\n", True),
    ("if not get_pp_group().is_first_rank:\n    if extra is not None and self.on:\n"
     "        extra = intermediate_tensors['extra']\n", False),
    ("if not get_pp_group().is_first_rank:\n    if extra is not None:\n"
     "        extra = intermediate_tensors['extra'] * 2\n        log(extra)\n", False),
])
def test_reported(body: str, exact: bool) -> None:
    (guard,) = _guards(body)
    assert (guard.local, guard.key, guard.exact) == ("extra", "extra", exact)


@pytest.mark.parametrize("body", [
    "extra = self.buffer\nif not get_pp_group().is_first_rank:\n    if extra is not None:\n"
    "        extra = intermediate_tensors['extra']\n",
    "if not get_pp_group().is_first_rank:\n    extra = self.buffer\n    if extra is not None:\n"
    "        extra = intermediate_tensors['extra']\n",
    "if not get_pp_group().is_first_rank:\n    if 'extra' in intermediate_tensors.tensors:\n"
    "        extra = intermediate_tensors['extra']\n",
    "if not get_pp_group().is_first_rank:\n    if flag is not None:\n        extra = intermediate_tensors['extra']\n",
    "if get_pp_group().is_first_rank:\n    if extra is not None:\n        extra = intermediate_tensors['extra']\n",
    "if not get_pp_group().is_last_rank:\n    if extra is not None:\n        extra = intermediate_tensors['extra']\n",
    "if not get_pp_group().is_first_rank:\n    if extra is not None:\n        extra = intermediate_tensors[key]\n",
])
def test_not_reported(body: str) -> None:
    assert _guards(body) == ()
