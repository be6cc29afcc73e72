"""Every edit of a file in one pass: edits of several kinds, located by their original positions."""

from __future__ import annotations

import pytest

from contractfix import apply
from contractfix.families.pf.edits import AddPrefix
from contractfix.families.pp.edits import AddFactoryKeys, DefaultNone, InsertDelegation
from tests.fixes.codemodtest import PATH, assert_codemod


def test_edits_of_several_kinds_do_not_shift_each_other() -> None:
    assert_codemod(
        """\
        class Inner(nn.Module):
            def __init__(self):
                self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
                    [
                        "hidden_states",
                    ],
                    8,
                )

            def forward(self, intermediate_tensors):
                pass


        class Wrapper(nn.Module, SupportsPP):
            def __init__(self):
                self.model = Inner()
        """,
        """\
        class Inner(nn.Module):
            def __init__(self):
                self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
                    [
                        "hidden_states",
                        "residual",
                    ],
                    8,
                )

            def forward(self, intermediate_tensors=None):
                pass


        class Wrapper(nn.Module, SupportsPP):
            def __init__(self):
                self.model = Inner()
                self.make_empty_intermediate_tensors = (
                    self.model.make_empty_intermediate_tensors
                )
        """,
        AddFactoryKeys(path=PATH, line=4, column=12, existing=("hidden_states",), keys=("residual",)),
        DefaultNone(path=PATH, line=10, column=22, function="forward", params=("intermediate_tensors",)),
        InsertDelegation(path=PATH, line=16, column=0, cls="Wrapper", attr="model"),
    )


def test_a_hundred_edits_take_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 11 item 10: the time grew with the square of the edits (a deep copy and a metadata
    pass per edit). Issue 39: libcst reads only the methods the edits touch, each piece wrapped
    and visited once, so the work grows with the edits and never with the rest of the file."""
    wrapped: list[int] = []
    real = apply.cst.MetadataWrapper

    def counting(module, *args, **kwargs):
        wrapped.append(len(module.code.splitlines()))
        return real(module, *args, **kwargs)

    monkeypatch.setattr(apply.cst, "MetadataWrapper", counting)
    block = "class W{i}(nn.Module, SupportsPP):\n    def __init__(self):\n        self.model = Inner()\n\n\n"
    source = "".join(block.format(i=i) for i in range(100)).encode()
    edits = [
        InsertDelegation(path=PATH, line=5 * i + 3, column=0, cls=f"W{i}", attr="model") for i in range(100)
    ]
    result = apply.rewrite(source, edits)
    assert result.after.count(b"self.model.make_empty_intermediate_tensors") == 100
    assert wrapped == [3] * 100  # each method under its class's line, once


def test_the_scope_holds_where_one_diff_shows_every_change_inside_the_edits() -> None:
    """Issue 39: the quick diff (the common head and tail, then anchors) is tried first, and
    difflib's only where it shows a change outside. Here the two place one insertion differently:
    difflib before line 1 (outside the edit's line 2), the quick diff before line 2 (inside)."""
    result = apply.Rewrite(b"x\ny\n", b"x\nz\nx\ny\n", spans=((2, 2),))
    apply.verify_scope(result)
    with pytest.raises(apply.FixError, match="changed lines 1-1 outside"):
        apply.verify_scope(apply.Rewrite(b"x\ny\n", b"w\ny\nz\n", spans=((2, 2),)))


CALL = 'Linear(8, 8, quant_config=quant_config)'
SHAPES = {
    "deep in loops and branches": "        for a in b:\n            if a:\n                pass\n            else:\n                x = {call}\n",
    "an elif branch": "        if a:\n            pass\n        elif b:\n            x = {call}\n",
    "after a semicolon": "        y = 1; x = {call}\n",
    "on a one-line if": "        if a: x = {call}\n",
    "in a try's handler": "        try:\n            pass\n        except E:\n            x = {call}\n        finally:\n            pass\n",
    "in a decorated inner function": "        @cache\n        def inner():\n            return {call}\n",
    "in a with block, commented": "        with a:  # a comment\n            # above\n            x = {call}  # after\n",
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_local_edit_is_read_alone_and_written_as_in_the_whole_file(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39: libcst reads the statement that holds a local edit (a `prefix=` to add), under a
    stand-in line per block around it, not the method: 1,750 lines instead of 6,700 for vLLM
    0.21.0's fixes. `assert_codemod` compares the result, spans included, with the whole file's;
    a statement that shares a line with other code is read with its method."""
    wrapped: list[int] = []
    real = apply.cst.MetadataWrapper
    monkeypatch.setattr(apply.cst, "MetadataWrapper", lambda module, *a, **k: wrapped.append(
        len(module.code.splitlines())) or real(module, *a, **k))
    body = "\n".join(f"        step_{i}()" for i in range(40)) + "\n" + SHAPES[shape].format(call=CALL)
    before = "class M(nn.Module):\n    def __init__(self, quant_config, prefix):\n" + body
    line, text = next((n, t) for n, t in enumerate(before.splitlines(), 1) if CALL in t)
    edit = AddPrefix(path=PATH, line=line, column=text.index("Linear"), value='f"{prefix}.x"')
    after = before.replace(CALL, CALL[:-1] + ', prefix=f"{prefix}.x")')
    assert_codemod(before, after, edit)
    alone = shape not in ("after a semicolon", "on a one-line if")
    assert (max(wrapped[:1]) < 10) == alone, wrapped


HEADERS = {
    "decorated, a comment above the body": (
        "    @torch.inference_mode()\n    def forward(\n        self,\n        input_ids,\n"
        "        intermediate_tensors: IntermediateTensors,\n    ) -> torch.Tensor:\n        # the body\n"
    ),
    "a docstring first": "    def forward(self, input_ids, intermediate_tensors):\n        \"\"\"Run.\"\"\"\n",
    "a comment after the colon": "    def forward(self, input_ids, intermediate_tensors):  # the entry\n",
}


@pytest.mark.parametrize("shape", list(HEADERS))
def test_a_parameters_edit_reads_the_def_lines_alone(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39: `= None` for `intermediate_tensors` reads only the method's `def` lines, under
    a stand-in body (134 forwards of 20 lines each where a violation was put in each model of
    vLLM 0.33.0); the result is the whole file's. A comment after the colon keeps the method."""
    wrapped: list[int] = []
    real = apply.cst.MetadataWrapper
    monkeypatch.setattr(apply.cst, "MetadataWrapper", lambda module, *a, **k: wrapped.append(
        len(module.code.splitlines())) or real(module, *a, **k))
    body = "".join(f"        step_{i}()\n" for i in range(40))
    before = "class M(nn.Module, SupportsPP):\n" + HEADERS[shape] + body
    line = next(n for n, t in enumerate(before.splitlines(), 1) if "intermediate_tensors" in t)
    edit = DefaultNone(path=PATH, line=line, column=0, function="forward", params=("intermediate_tensors",))
    after = before.replace("intermediate_tensors: IntermediateTensors,", "intermediate_tensors: IntermediateTensors = None,")
    after = after.replace("intermediate_tensors):", "intermediate_tensors=None):")
    assert_codemod(before, after, edit)
    assert (wrapped[0] < 12) == (shape != "a comment after the colon"), wrapped
