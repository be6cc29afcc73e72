"""`workers.Parser`: facts in the order the sources came, parsed by a pool that starts while
they are still read, cached entries read back after."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from contractfix import workers
from contractfix.analysis import analyze_source
from contractfix.cache import FactsCache

MODEL = '''\
class M{i}(nn.Module, SupportsPP):
    def forward(self, input_ids, positions, intermediate_tensors=None):
        return IntermediateTensors({{"hidden_states": input_ids}})
'''


def sources(tmp_path: Path, count: int) -> list[tuple[Path, bytes]]:
    out = []
    for i in range(count):
        path = tmp_path / f"m{i:03d}.py"
        data = MODEL.format(i=i).encode() if i != 3 else b"class Broken(:\n    intermediate_tensors\n"
        path.write_bytes(data)
        out.append((path, data))
    return out


def run(parser: workers.Parser, given: list[tuple[Path, bytes]]) -> list[tuple[str, workers.Result]]:
    with parser:
        for path, data in given:
            parser.add(path, data, path.stem)
        return list(parser.results())


def same(result: workers.Result, path: Path, data: bytes) -> bool:
    if isinstance(result, str):
        return result.startswith("syntax error")
    expected = analyze_source(data, str(path), path.stem)
    return pickle.dumps(result) == pickle.dumps(expected)


def test_the_pool_starts_while_sources_are_still_added(tmp_path: Path) -> None:
    given = sources(tmp_path, workers.PARALLEL_THRESHOLD + 2 * workers.BATCH + 3)
    parser = workers.Parser(FactsCache(None), jobs=2)
    with parser:
        for count, (path, data) in enumerate(given, start=1):
            parser.add(path, data, path.stem)
            if count == workers.PARALLEL_THRESHOLD - 1:
                assert parser.pool is None
        if workers.pool_size(2, len(given)) < 2:
            pytest.skip("one CPU: no pool")
        assert parser.pool is not None
        assert parser.submitted == len(given) - len(given) % workers.BATCH, "batches wait for results()"
        results = list(parser.results())
    assert parser.submitted == len(given)
    assert len(results) == len(given)
    assert all(same(result, path, data) for (_, result), (path, data) in zip(results, given, strict=True))


def test_few_sources_are_parsed_in_this_process(tmp_path: Path) -> None:
    given = sources(tmp_path, 5)
    parser = workers.Parser(FactsCache(None), jobs=2)
    results = run(parser, given)
    assert parser.pool is None
    assert all(same(result, path, data) for (_, result), (path, data) in zip(results, given, strict=True))


@pytest.mark.parametrize("count", [5, workers.PARALLEL_THRESHOLD + workers.BATCH + 1])
def test_each_file_parsed_is_cached_where_it_was_parsed(tmp_path: Path, count: int) -> None:
    """By the workers (which send the entry they stored) or, without a pool, here."""
    cache = FactsCache(tmp_path / "cache")
    parser = workers.Parser(cache, jobs=2)
    results = run(parser, sources(tmp_path, count))
    assert (parser.pool is not None) == (count > 5 and workers.pool_size(2, count) > 1)
    assert not parser.batches, "each batch's bytes are let go once read"
    for key, result in results:
        if isinstance(result, str):
            assert not cache.has(key)
        else:
            assert pickle.dumps(cache.get(key, result.path)) == pickle.dumps(result)


def test_cached_entries_are_read_after_every_source_and_parsed_again_when_unreadable(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    given = sources(tmp_path / "src", 8)
    cache = FactsCache(tmp_path / "cache")
    first = run(workers.Parser(cache, jobs=1), given)
    (tmp_path / "cache" / first[0][0][:2] / first[0][0]).write_bytes(b"\x80garbage")
    reads: list[str] = []
    real = cache.get

    def spy(key: str, path: str):
        reads.append(path)
        return real(key, path)

    cache.get = spy  # type: ignore[method-assign]
    parser = workers.Parser(cache, jobs=1)
    with parser:
        for path, data in given:
            parser.add(path, data, path.stem)
        assert reads == [] and len(parser.cached) == len(given) - 1  # the broken one has no facts cached
        again = list(parser.results())
    assert [key for key, _ in again] == [key for key, _ in first]
    assert len(reads) == len(given) - 1 and len(parser.missing) == 2  # the garbage entry, the broken file
    assert all(same(result, path, data) for (_, result), (path, data) in zip(again, given, strict=True))


def test_files_are_read_largest_first_and_reported_in_their_own_order(tmp_path: Path) -> None:
    from contractfix import engine
    from contractfix.config import Options
    from contractfix.findings import Report

    tree = tmp_path / "tree"
    tree.mkdir()
    sizes = {"a.py": 1, "b.py": 40, "c.py": 5, "e.py": 20}
    for name, lines in sizes.items():
        (tree / name).write_text(MODEL.format(i=name[0]) + "x = 1\n" * lines)
    broken = b"class Broken(:\n    def forward(self, intermediate_tensors): ...\n"
    (tree / "d.py").write_bytes(broken + b"x = 1\n" * 30)
    (tree / "f.py").write_bytes(broken)
    (tree / "c0.py").symlink_to(tree / "missing.py")
    (tree / "e0.py").symlink_to(tree / "e0.py")
    opened: list[str] = []
    real = engine.read_source

    def spy(path: Path, *known):
        opened.append(path.name)
        return real(path, *known)

    report = Report()
    try:
        engine.read_source = spy  # type: ignore[assignment]
        session = engine.analyze([tree], Options(cache=False), report)
    finally:
        engine.read_source = real  # type: ignore[assignment]
    regular = sorted((p for p in tree.iterdir() if not p.is_symlink()), key=lambda p: -p.stat().st_size)
    assert opened[: len(regular)] == [p.name for p in regular] and regular[0].name == "b.py"
    assert [Path(m.path).name for m in session.targets] == ["a.py", "b.py", "c.py", "e.py"]
    assert [Path(m).name for m in session.sources] == ["a.py", "b.py", "c.py", "d.py", "e.py", "f.py"]
    assert [(Path(e.path).name, e.message.split(":")[0]) for e in report.errors] == [
        ("c0.py", "cannot read"), ("e0.py", "cannot read"), ("d.py", "syntax error"), ("f.py", "syntax error"),
    ]
