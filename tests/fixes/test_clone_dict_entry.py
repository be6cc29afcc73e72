"""CloneDictEntry: new keys of a hand-written producer, each a copy of the first entry's value."""

from __future__ import annotations

from contractfix.families.pp.edits import CloneDictEntry
from tests.fixes.codemodtest import PATH, assert_codemod


def test_clone_the_first_entry() -> None:
    assert_codemod(
        """\
        def make(self, batch_size, dtype, device):
            return IntermediateTensors({'hidden_states': torch.zeros((batch_size, 8), dtype=dtype)})
        """,
        """\
        def make(self, batch_size, dtype, device):
            return IntermediateTensors({'hidden_states': torch.zeros((batch_size, 8), dtype=dtype), 'residual': torch.zeros((batch_size, 8), dtype=dtype)})
        """,
        CloneDictEntry(path=PATH, line=2, column=31, existing=("hidden_states",), keys=("residual",)),
    )


def test_clone_into_a_dict_with_one_entry_per_line() -> None:
    assert_codemod(
        """\
        def make(self, batch_size, dtype, device):
            return IntermediateTensors({
                "hidden_states": torch.zeros((batch_size, 8)),
            })
        """,
        """\
        def make(self, batch_size, dtype, device):
            return IntermediateTensors({
                "hidden_states": torch.zeros((batch_size, 8)),
                "residual": torch.zeros((batch_size, 8)),
            })
        """,
        CloneDictEntry(path=PATH, line=2, column=31, existing=("hidden_states",), keys=("residual",)),
    )
