"""`rewriting.run`: a fix round's files rewritten in a pool give what they give in this process,
in the same order, and one file's failure stays that file's."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from contractfix import apply, engine, rewriting, rules
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
        rewriting.Job(path, session.sources[str(path)], tuple(edits), session.index.by_path[str(path)].module)
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


def test_a_syntax_error_the_edits_do_not_touch_refuses_the_fix_and_is_named(tmp_path: Path) -> None:
    """Issue 39: the rewrite parses only the definitions its edits touch, and the compile of the
    result proves the rest. A file whose other part does not parse (here a function the check
    never reads) is left as it was, and the error says why as the check would."""
    job = jobs(tmp_path, 1)[0]
    broken = job.source + b"\n\ndef helper():\n    return 1 +\n"
    done = rewriting.rewrite(dataclasses.replace(job, source=broken))
    line = broken.decode().splitlines().index("    return 1 +") + 1
    assert done.rewrite is None and done.problem == f"syntax error: invalid syntax (line {line})"


def test_a_fix_parses_the_definitions_it_edits_and_no_other(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39: the rewrite finds a file's top level by the outline scan, not by a parse of the
    whole file (a fix in a file of 200 classes parsed them all), and the result is the same."""
    job = jobs(tmp_path, 1)[0]
    others = "".join(f"\n\nclass Other{i}(nn.Module):\n    def forward(self, x):\n        return x\n" for i in range(200))
    source = job.source + others.encode()
    parsed: list[int] = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.append(len(text)) or real(text, *a, **k))
    result = apply.rewrite(source, job.edits)
    assert len(parsed) == 1 and parsed[0] <= len(job.source) < len(source) / 10, parsed
    monkeypatch.setattr(apply.pieces, "cut", lambda *args: None)
    assert apply.rewrite(source, job.edits) == result
