"""`rewriting.run`: a fix round's files rewritten in a pool give what they give in this process,
in the same order, and one file's failure stays that file's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from contractfix import engine, rewriting, rules
from contractfix.apply import edits_of
from contractfix.config import Options
from contractfix.findings import Report


def jobs(tmp_path: Path, count: int) -> list[rewriting.Job]:
    models = tmp_path / "vllm" / "model_executor" / "models"
    models.mkdir(parents=True)
    for i in range(count):
        (models / f"m{i:02d}.py").write_text(rules.ALL["PP002"].before)
    session = engine.analyze([tmp_path / "vllm"], Options(), Report())
    findings, _ = engine.evaluate(session)
    found = [
        rewriting.Job(path, session.sources[str(path)], tuple(edits), session.index.by_path[str(path)].module, parsed=False)
        for path, edits in sorted(edits_of([f for f in findings if f.fix]).items())
    ]
    assert len(found) == count, "every copy has a fix"
    return found


def outcome(done: rewriting.Done) -> tuple:
    after = done.rewrite.after if done.rewrite else None
    return after, done.facts.path if done.facts else None, sorted(done.facts.classes) if done.facts else None, done.problem


def test_a_pool_rewrites_as_this_process_does_and_in_order(tmp_path: Path) -> None:
    given = jobs(tmp_path, rewriting.POOLED_FROM + 3)
    lost = dataclasses.replace(given[2].edits[0], line=given[2].edits[0].line + 1000)
    given[2] = dataclasses.replace(given[2], edits=(lost,))
    if rewriting.pool_size(2, len(given)) < 2:
        pytest.skip("one CPU: no pool")
    alone = [outcome(d) for d in rewriting.run(given, workers=1)]
    pooled = [outcome(d) for d in rewriting.run(given, workers=2)]
    assert pooled == alone
    assert [bool(problem) for *_, problem in pooled] == [i == 2 for i in range(len(given))]
    assert "could not locate the code to edit" in pooled[2][3]
    assert all(after and b"intermediate_tensors: IntermediateTensors | None = None" in after
               for after, *_ in pooled[:2] + pooled[3:])


def test_facts_of_the_new_text_come_back_without_their_source(tmp_path: Path) -> None:
    """The main process sets the source back: a pending class is parsed from it."""
    given = jobs(tmp_path, rewriting.POOLED_FROM)
    done = list(rewriting.run(given, workers=2))
    assert all(d.facts is not None and d.facts.module == job.module for d, job in zip(done, given, strict=True))
