"""TiedEmbedding and TieOnLastRank: upstream's two edits for a tie under PP (PP009)."""

from __future__ import annotations

import pytest

from contractfix.apply import FixError
from contractfix.families.pp.edits import TiedEmbedding, TieOnLastRank
from tests.fixes.codemodtest import PATH, assert_codemod


def test_first_rank_branch_widened_as_upstream_writes_it() -> None:
    assert_codemod(
        """\
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                if self.pp_group.is_first_rank:  # embeddings
                    self.embed_tokens = Embedding(config)
                else:
                    self.embed_tokens = PPMissingLayer()
        """,
        """\
        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                if self.pp_group.is_first_rank or (
                    config.tie_word_embeddings and self.pp_group.is_last_rank
                ):  # embeddings
                    self.embed_tokens = Embedding(config)
                else:
                    self.embed_tokens = PPMissingLayer()
        """,
        TiedEmbedding(path=PATH, line=4, column=8, flag="config.tie_word_embeddings"),
    )


def test_an_if_that_is_not_a_first_rank_test_is_not_edited() -> None:
    with pytest.raises(FixError):
        assert_codemod(
            "if ready:\n    x = 1\n", "", TiedEmbedding(path=PATH, line=1, column=0, flag="config.tie_word_embeddings")
        )


def test_tie_moves_to_the_end_of_the_last_rank_branch_with_its_comment() -> None:
    assert_codemod(
        """\
        class Wrapper(nn.Module):
            def __init__(self, config):
                super().__init__()
                if get_pp_group().is_last_rank:
                    self.lm_head = Head(config)
                else:
                    self.lm_head = PPMissingLayer()

                # share the embedding
                if config.tie_word_embeddings:
                    self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
                self.logits_processor = LogitsProcessor(config.vocab_size)
        """,
        """\
        class Wrapper(nn.Module):
            def __init__(self, config):
                super().__init__()
                if get_pp_group().is_last_rank:
                    self.lm_head = Head(config)
                    # share the embedding
                    if config.tie_word_embeddings:
                        self.lm_head = self.lm_head.tie_weights(self.model.embed_tokens)
                else:
                    self.lm_head = PPMissingLayer()

                self.logits_processor = LogitsProcessor(config.vocab_size)
        """,
        TieOnLastRank(path=PATH, line=10, column=8, target_line=4, target_column=8),
    )


def test_tie_before_the_branch_is_not_moved() -> None:
    with pytest.raises(FixError):
        assert_codemod(
            """\
            class Wrapper(nn.Module):
                def __init__(self, config):
                    self.lm_head.weight = self.model.embed_tokens.weight
                    if get_pp_group().is_last_rank:
                        self.lm_head = Head(config)
            """,
            "",
            TieOnLastRank(path=PATH, line=3, column=8, target_line=4, target_column=8),
        )
