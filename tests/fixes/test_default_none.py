"""DefaultNone: `= None` for intermediate_tensors (and later positional parameters)."""

from __future__ import annotations

from contractfix.families.pp.edits import DefaultNone
from tests.fixes.codemodtest import PATH, assert_codemod


def default(line, params=("intermediate_tensors",), style="", column=0):
    return DefaultNone(path=PATH, line=line, column=column, function="forward", params=params, style=style)


def test_annotated_parameter_gets_the_spaced_equal() -> None:
    assert_codemod(
        """\
        class M:
            def forward(self, input_ids, intermediate_tensors: IntermediateTensors | None):
                pass
        """,
        """\
        class M:
            def forward(self, input_ids, intermediate_tensors: IntermediateTensors | None = None):
                pass
        """,
        default(2),
    )


def test_later_positional_parameters_get_it_too_in_the_siblings_style() -> None:
    assert_codemod(
        """\
        def forward(self, intermediate_tensors, inputs_embeds, x=1):
            pass
        """,
        """\
        def forward(self, intermediate_tensors=None, inputs_embeds=None, x=1):
            pass
        """,
        default(1, ("intermediate_tensors", "inputs_embeds")),
    )


def test_pipe_style_widens_the_annotation() -> None:
    assert_codemod(
        """\
        def forward(self,
                    intermediate_tensors: IntermediateTensors,
                    inputs_embeds=None):
            pass
        """,
        """\
        def forward(self,
                    intermediate_tensors: IntermediateTensors | None = None,
                    inputs_embeds=None):
            pass
        """,
        default(2, style="pipe"),
    )


def test_optional_style_imports_optional() -> None:
    result = assert_codemod(
        """\
        import torch


        def forward(self, intermediate_tensors: "IntermediateTensors"):
            pass
        """,
        """\
        import torch
        from typing import Optional


        def forward(self, intermediate_tensors: "Optional[IntermediateTensors]" = None):
            pass
        """,
        default(4, style="optional"),
    )
    assert set(result.edit_imports.values()) == {frozenset({("typing", "Optional")})}


def test_only_the_forward_whose_parameter_starts_on_the_line() -> None:
    assert_codemod(
        """\
        class A:
            def forward(self, intermediate_tensors):
                pass
        class B:
            def forward(self, intermediate_tensors):
                pass
        """,
        """\
        class A:
            def forward(self, intermediate_tensors):
                pass
        class B:
            def forward(self, intermediate_tensors=None):
                pass
        """,
        default(5),
    )
