"""AddFactoryKeys and RemoveFactoryKeys: key lists edited in their own layout."""

from __future__ import annotations

import pytest

from contractfix.apply import FixError
from contractfix.families.pp.edits import AddFactoryKeys, RemoveFactoryKeys
from tests.fixes.codemodtest import PATH, assert_codemod


def add(line, existing, keys, column=0):
    return AddFactoryKeys(path=PATH, line=line, column=column, existing=existing, keys=keys)


def remove(line, existing, keys, column=0):
    return RemoveFactoryKeys(path=PATH, line=line, column=column, existing=existing, keys=keys)


def test_add_to_a_one_line_list() -> None:
    assert_codemod(
        """\
        f = make_empty_intermediate_tensors_factory(["hidden_states"], 8)
        """,
        """\
        f = make_empty_intermediate_tensors_factory(["hidden_states", "residual"], 8)
        """,
        add(1, ("hidden_states",), ("residual",)),
    )


def test_add_keeps_the_quote_and_the_tuple() -> None:
    assert_codemod(
        """\
        f = make_empty_intermediate_tensors_factory(('hidden_states', 'x'), 8)
        """,
        """\
        f = make_empty_intermediate_tensors_factory(('hidden_states', 'x', 'residual', 'aux'), 8)
        """,
        add(1, ("hidden_states", "x"), ("residual", "aux")),
    )


def test_add_to_a_list_with_one_key_per_line_keeps_the_trailing_comma_and_comments() -> None:
    assert_codemod(
        """\
        f = make_empty_intermediate_tensors_factory(
            [
                "hidden_states",  # the output
            ],
            8,
        )
        """,
        """\
        f = make_empty_intermediate_tensors_factory(
            [
                "hidden_states",  # the output
                "residual",
            ],
            8,
        )
        """,
        add(2, ("hidden_states",), ("residual",)),
    )


def test_add_locates_the_list_by_line_and_keys() -> None:
    with pytest.raises(FixError, match="could not locate the code to edit at line 1"):
        assert_codemod("f = factory(['a'], 8)\n", "", add(1, ("b",), ("c",)))


def test_remove_from_a_one_line_list() -> None:
    assert_codemod(
        """\
        f = make_empty_intermediate_tensors_factory(["hidden_states", "residual"], 8)
        """,
        """\
        f = make_empty_intermediate_tensors_factory(["hidden_states"], 8)
        """,
        remove(1, ("hidden_states", "residual"), ("residual",)),
    )


def test_remove_the_middle_key() -> None:
    assert_codemod(
        """\
        f = make_empty_intermediate_tensors_factory(["a", "b", "c"], 8)
        """,
        """\
        f = make_empty_intermediate_tensors_factory(["a", "c"], 8)
        """,
        remove(1, ("a", "b", "c"), ("b",)),
    )


def test_remove_the_last_key_keeps_the_new_last_keys_comment_and_the_trailing_comma() -> None:
    assert_codemod(
        """\
        f = make_empty_intermediate_tensors_factory(
            [
                "hidden_states",  # the output
                "residual",
            ],
            8,
        )
        """,
        """\
        f = make_empty_intermediate_tensors_factory(
            [
                "hidden_states",  # the output
            ],
            8,
        )
        """,
        remove(2, ("hidden_states", "residual"), ("residual",)),
    )


def test_remove_the_last_key_without_trailing_comma_moves_the_comment_before_the_closer() -> None:
    assert_codemod(
        """\
        f = make_empty_intermediate_tensors_factory(
            [
                "hidden_states",  # the output
                "residual"
            ],
            8,
        )
        """,
        """\
        f = make_empty_intermediate_tensors_factory(
            [
                "hidden_states"  # the output
            ],
            8,
        )
        """,
        remove(2, ("hidden_states", "residual"), ("residual",)),
    )


def test_remove_down_to_one_tuple_element_keeps_it_a_tuple() -> None:
    assert_codemod(
        """\
        f = make_empty_intermediate_tensors_factory(("hidden_states", "residual"), 8)
        """,
        """\
        f = make_empty_intermediate_tensors_factory(("hidden_states",), 8)
        """,
        remove(1, ("hidden_states", "residual"), ("residual",)),
    )
