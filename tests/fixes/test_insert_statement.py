"""InsertDelegation and EarlyReturn: a statement inserted after a top-level statement of a method."""

from __future__ import annotations

from contractfix.families.pp.edits import EarlyReturn, InsertDelegation
from tests.fixes.codemodtest import PATH, assert_codemod


def delegation(line, cls="Wrapper", attr="model"):
    return InsertDelegation(path=PATH, line=line, column=0, cls=cls, attr=attr)


def early_return(line, cls="Wrapper", var="hidden_states"):
    return EarlyReturn(path=PATH, line=line, column=0, cls=cls, var=var)


def test_delegation_follows_the_statement_ending_on_the_line() -> None:
    assert_codemod(
        """\
        class Wrapper(nn.Module, SupportsPP):
            def __init__(self, *, vllm_config, prefix=""):
                super().__init__()
                self.m = InnerModel(
                    vllm_config=vllm_config, prefix=prefix
                )
                self.lm_head = None
        """,
        """\
        class Wrapper(nn.Module, SupportsPP):
            def __init__(self, *, vllm_config, prefix=""):
                super().__init__()
                self.m = InnerModel(
                    vllm_config=vllm_config, prefix=prefix
                )
                self.make_empty_intermediate_tensors = self.m.make_empty_intermediate_tensors
                self.lm_head = None
        """,
        delegation(6, attr="m"),
    )


def test_delegation_opens_a_paragraph_after_a_block_and_wraps_when_too_long() -> None:
    assert_codemod(
        """\
        class Outer:
            class VeryLongWrapperName(nn.Module, SupportsPP):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    if vllm_config:
                        self.the_language_model_attribute = InnerModel()
        """,
        """\
        class Outer:
            class VeryLongWrapperName(nn.Module, SupportsPP):
                def __init__(self, *, vllm_config, prefix=""):
                    super().__init__()
                    if vllm_config:
                        self.the_language_model_attribute = InnerModel()

                    self.make_empty_intermediate_tensors = (
                        self.the_language_model_attribute.make_empty_intermediate_tensors
                    )
        """,
        delegation(6, cls="VeryLongWrapperName", attr="the_language_model_attribute"),
    )


def test_delegation_only_in_the_named_class() -> None:
    before = "class Other(nn.Module):\n    def __init__(self):\n        self.model = InnerModel()\n"
    assert_codemod(
        before + "class Wrapper(nn.Module):\n    def __init__(self):\n        self.model = InnerModel()\n",
        before + "class Wrapper(nn.Module):\n    def __init__(self):\n        self.model = InnerModel()\n"
        "        self.make_empty_intermediate_tensors = (\n"
        "            self.model.make_empty_intermediate_tensors\n"
        "        )\n",
        delegation(6),
    )


def test_early_return_after_the_inner_call_imports_get_pp_group() -> None:
    result = assert_codemod(
        """\
        import torch


        class Wrapper(nn.Module, SupportsPP):
            def forward(self, input_ids, positions, intermediate_tensors=None):
                hidden_states = self.model(input_ids, positions, intermediate_tensors)
                return hidden_states / self.scale
        """,
        """\
        import torch
        from vllm.distributed import get_pp_group


        class Wrapper(nn.Module, SupportsPP):
            def forward(self, input_ids, positions, intermediate_tensors=None):
                hidden_states = self.model(input_ids, positions, intermediate_tensors)
                if not get_pp_group().is_last_rank:
                    return hidden_states
                return hidden_states / self.scale
        """,
        early_return(6),
    )
    assert list(result.edit_spans.values()) == [((6, 6),)]


def test_early_return_reuses_a_name_already_bound() -> None:
    assert_codemod(
        """\
        from fork.distributed import get_pp_group


        class Wrapper(nn.Module, SupportsPP):
            def forward(self, input_ids, intermediate_tensors=None):
                out = self.model(input_ids, intermediate_tensors)
                return out * 2
        """,
        """\
        from fork.distributed import get_pp_group


        class Wrapper(nn.Module, SupportsPP):
            def forward(self, input_ids, intermediate_tensors=None):
                out = self.model(input_ids, intermediate_tensors)
                if not get_pp_group().is_last_rank:
                    return out
                return out * 2
        """,
        early_return(6, var="out"),
    )


def test_early_return_imports_from_the_package_of_the_other_distributed_imports() -> None:
    assert_codemod(
        """\
        \"\"\"A fork's model.\"\"\"
        from fork.distributed.parallel_state import get_tp_group
        try:
            from fork._C import ops
        except ImportError:
            ops = None


        class Wrapper(nn.Module, SupportsPP):
            def forward(self, input_ids, intermediate_tensors=None):
                out = self.model(input_ids, intermediate_tensors)
                return out * 2
        """,
        """\
        \"\"\"A fork's model.\"\"\"
        from fork.distributed.parallel_state import get_tp_group
        try:
            from fork._C import ops
        except ImportError:
            ops = None
        from fork.distributed import get_pp_group


        class Wrapper(nn.Module, SupportsPP):
            def forward(self, input_ids, intermediate_tensors=None):
                out = self.model(input_ids, intermediate_tensors)
                if not get_pp_group().is_last_rank:
                    return out
                return out * 2
        """,
        early_return(11, var="out"),
    )


def test_early_return_never_shadows_a_name_bound_under_try() -> None:
    assert_codemod(
        """\
        try:
            from fork.distributed import get_pp_group
        except ImportError:
            from vllm.distributed import get_pp_group


        class Wrapper(nn.Module, SupportsPP):
            def forward(self, input_ids, intermediate_tensors=None):
                out = self.model(input_ids, intermediate_tensors)
                return out * 2
        """,
        """\
        try:
            from fork.distributed import get_pp_group
        except ImportError:
            from vllm.distributed import get_pp_group


        class Wrapper(nn.Module, SupportsPP):
            def forward(self, input_ids, intermediate_tensors=None):
                out = self.model(input_ids, intermediate_tensors)
                if not get_pp_group().is_last_rank:
                    return out
                return out * 2
        """,
        early_return(9, var="out"),
    )
