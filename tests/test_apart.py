"""The rules that do not trace run in a forked child beside the others (`engine._check`) once
workers parsed the sources, or once a tree's facts came from the cache: the same findings as in
one process, the classes the child completed cached too, and the child's work done here whenever
it cannot give it."""

from __future__ import annotations

import inspect
import itertools
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from contractfix import apart, engine, index, rules, workers
from contractfix.cache import FactsCache
from contractfix.config import Options
from contractfix.findings import Report
from contractfix.workers import pool_size

FIXTURES = Path(__file__).parent / "fixtures"
two_cpus = pytest.mark.skipif(
    pool_size(0, 2) < 2 or not sys.platform.startswith("linux"), reason="one CPU, or not Linux: no child"
)


def _seen(report: Report) -> list[str]:
    return [repr(f) for f in report.findings + report.notes]


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool of workers for a few files, as for a tree."""
    monkeypatch.setattr(workers, "PARALLEL_THRESHOLD", 2)


def _spied(monkeypatch: pytest.MonkeyPatch) -> list:
    started: list = []
    real = apart.start

    def spy(work, jobs):
        child = real(work, jobs)
        started.append(child)
        return child

    monkeypatch.setattr(apart, "start", spy)
    return started


@two_cpus
def test_a_child_gives_its_result_or_none_when_it_fails() -> None:
    child = apart.start(lambda: {"sent": [1, 2]}, jobs=2)
    assert child is not None and child.result() == {"sent": [1, 2]}
    failing = apart.start(lambda: 1 // 0, jobs=2)
    assert failing is not None and failing.result() is None
    killed = apart.start(lambda: os.kill(os.getpid(), signal.SIGKILL), jobs=2)
    assert killed is not None and killed.result() is None


@two_cpus
def test_a_child_whose_result_is_never_read_is_stopped() -> None:
    child = apart.start(lambda: signal.pause(), jobs=2)
    assert child is not None
    with pytest.raises(KeyError), child:
        raise KeyError("this process failed meanwhile")
    assert child.reaped
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, 0)


@two_cpus
def test_a_child_never_holds_the_callers_output() -> None:
    """Killed, this process leaves a child that runs on a little: the reader of this process's
    output must not wait for it."""
    child = apart.start(lambda: signal.pause(), jobs=2)
    assert child is not None
    with child:
        deadline = time.monotonic() + 10
        while {os.readlink(f"/proc/{child.pid}/fd/{fd}") for fd in (1, 2)} != {os.devnull}:
            assert time.monotonic() < deadline, "the child still writes where this process does"
            time.sleep(0.01)


def test_no_child_on_one_job_or_beside_a_thread() -> None:
    assert apart.start(lambda: 1, jobs=1) is None
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert apart.start(lambda: 1, jobs=2) is None  # a fork would copy a lock another thread holds
    finally:
        stop.set()
        thread.join()


@two_cpus
def test_the_findings_are_those_of_one_process(monkeypatch: pytest.MonkeyPatch, pooled: None) -> None:
    started = _spied(monkeypatch)
    alone = engine.check([FIXTURES], Options(jobs=1, cache=False))
    assert started == [None]
    beside = engine.check([FIXTURES], Options(jobs=2, cache=False))
    assert started[1] is not None
    assert {f.rule for f in alone.findings} >= {"PP001", "PP008", "PP009", "PP012"}  # traced and not
    assert _seen(beside) == _seen(alone)


@two_cpus
def test_tasks_are_shared_from_either_end() -> None:
    """What one process takes, the other sees taken: the child stops where this process began."""
    shares = apart.Shares(6)
    assert shares.take(5) and shares.take(4)
    child = apart.start(lambda: list(itertools.takewhile(shares.take, range(6))), jobs=2)
    assert child is not None and child.result() == [0, 1, 2, 3]
    assert not shares.take(3)


@two_cpus
def test_this_process_takes_the_rules_a_late_child_has_not_reached(monkeypatch: pytest.MonkeyPatch,
                                                                    pooled: None) -> None:
    alone = engine.check([FIXTURES], Options(jobs=1, cache=False))
    parent = os.getpid()
    taken_here: list[int] = []
    real_take, real_untraced = apart.Shares.take, engine._untraced

    def take(self: apart.Shares, task: int) -> bool:
        took = real_take(self, task)
        if took and os.getpid() == parent:
            taken_here.append(task)
        return took

    def waiting(ctx, modules, shares: apart.Shares):
        """The child begins once this process has taken every rule (or after a minute)."""
        deadline = time.monotonic() + 60
        while not all(shares.taken[: len(modules)]) and time.monotonic() < deadline:
            time.sleep(0.01)
        return real_untraced(ctx, modules, shares)

    monkeypatch.setattr(apart.Shares, "take", take)
    monkeypatch.setattr(engine, "_untraced", waiting)
    assert _seen(engine.check([FIXTURES], Options(jobs=2, cache=False))) == _seen(alone)
    untraced = [m for m in rules.MODULES if not m.RULE.traces and not m.RULE.checks_suppressions]
    assert sorted(taken_here) == list(range(len(untraced)))


def test_no_child_for_a_few_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer files than would start the workers or make a tree: the rules run here, where a
    fork would cost more than it saves."""
    monkeypatch.setattr(workers, "PARALLEL_THRESHOLD", 10**6)  # however many fixtures there are
    monkeypatch.setattr(engine, "SHARED_TARGETS", 10**6)
    started = _spied(monkeypatch)
    engine.check([FIXTURES], Options(jobs=2, cache=False))
    assert started == [None]


@two_cpus
def test_a_tree_on_a_warm_cache_runs_its_rules_in_a_child_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file's facts cached, no worker starts; a tree's files still share the rules with a
    child, with the findings of one process."""
    monkeypatch.setattr(engine, "SHARED_TARGETS", 2)
    alone = engine.check([FIXTURES], Options(jobs=1))  # parsed here, and cached
    parsed_by_workers: list[bool] = []
    evaluate = engine.evaluate
    monkeypatch.setattr(engine, "evaluate",
                        lambda session: parsed_by_workers.append(session.pooled) or evaluate(session))
    started = _spied(monkeypatch)
    warm = engine.check([FIXTURES], Options(jobs=2))
    assert parsed_by_workers == [False]
    assert len(started) == 1 and started[0] is not None
    assert _seen(warm) == _seen(alone)


@two_cpus
def test_a_child_that_fails_leaves_its_rules_to_this_process(monkeypatch: pytest.MonkeyPatch, pooled: None) -> None:
    alone = engine.check([FIXTURES], Options(jobs=1, cache=False))
    monkeypatch.setattr(engine, "_untraced", lambda *args: os._exit(3))
    assert _seen(engine.check([FIXTURES], Options(jobs=2, cache=False))) == _seen(alone)


def test_a_rule_traces_exactly_when_it_asks_for_traffic_or_allocation() -> None:
    for module in rules.MODULES:
        source = inspect.getsource(module)
        asks = "resolver.traffic" in source or "resolver.allocation" in source
        assert module.RULE.traces == asks, module.RULE.code


def test_the_rules_that_do_not_trace_leave_the_resolver_untouched() -> None:
    """What the child checks (and fails on) at run time, checked here on every fixture."""
    session = engine.analyze([FIXTURES], Options(jobs=1, cache=False), Report())
    untraced = tuple(m.RULE.code for m in rules.MODULES if not m.RULE.traces)
    session.options = Options(jobs=1, cache=False, select=untraced)
    engine.evaluate(session)
    assert session.resolver is not None and not session.resolver.traced()


LAYERS = """\
import torch.nn as nn


class Tower(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.start_layer, self.end_layer, self.blocks = make_layers(config.n, lambda prefix: Block(config))
"""
MODEL = """\
import torch.nn as nn

from pkg.layers import Tower


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.tower = Tower(config)

    def load_weights(self, weights):
        params_dict = dict(self.named_parameters())
        for name, loaded in weights:
            param = params_dict[name]
"""


@two_cpus
def test_classes_the_child_completed_are_cached_for_the_next_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  pooled: None) -> None:
    """PP008 (run in the child) reads the splits of the model's tower, a class of a module read
    only by header: the cache must hold it parsed after the cold run, as when one process ran."""
    package = tmp_path / "pkg"
    (package / "models").mkdir(parents=True)
    files = {
        "__init__.py": "", "models/__init__.py": "", "layers.py": LAYERS, "models/a.py": MODEL, "models/b.py": MODEL,
    }
    for name, text in files.items():
        (package / name).write_text(text)
    monkeypatch.setenv("CONTRACTFIX_CACHE_DIR", str(tmp_path / "cache"))
    parent = os.getpid()
    real_take = apart.Shares.take  # every rule of the child's to the child
    monkeypatch.setattr(apart.Shares, "take", lambda self, task: os.getpid() != parent and real_take(self, task))
    adopted: list[dict] = []
    real = index.Index.adopt
    monkeypatch.setattr(index.Index, "adopt", lambda self, found: adopted.append(found) or real(self, found))
    engine.check([package], Options(jobs=2))
    assert [sorted(name for _, classes in found.values() for name in classes) for found in adopted] == [["Tower"]]
    cache = FactsCache(tmp_path / "cache")
    layers = cache.get(cache.key((package / "layers.py").read_bytes(), "pkg.layers", "headers"), "layers.py")
    assert layers is not None and "Tower" not in layers.pending and layers.classes["Tower"].loading
