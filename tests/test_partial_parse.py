"""Partial parsing: the classes no need asks for are read by header and parsed on demand, with
the same facts, line and column numbers as a whole-file parse."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from contractfix import analysis, cache
from contractfix.analysis import analyze_source, complete, needs
from contractfix.analysis.outline import Definition, Unplaceable, _masked, definitions, outline
from contractfix.cache import FactsCache
from contractfix.index import ClassRef, Index

MODEL = textwrap.dedent('''\
    """A model; a docstring showing code at column 0:
    class Phantom(nn.Module):
        intermediate_tensors = 1
    """
    import torch
    from vllm.sequence import IntermediateTensors
    from vllm.model_executor.models.llama import LlamaModel

    if TYPE_CHECKING:
        from .other import Other

    WEIGHTS = {
    "a": 1}


    class Helper(nn.Module):  # no contract words: left for later
        def __init__(self, config):
            super().__init__()
            self.proj = Linear(config.x,
    config.y)

        def project(self, x):
            return self.proj(x)


    class Builder(
        Base[Info]
    ): ...


    @dataclass
    class Sub(LlamaModel):
        pass


    class Model(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.helper = build(Helper, config)  # a call, not a class built here
            self.make_empty_intermediate_tensors = make_empty_intermediate_tensors_factory(
                ["hidden_states"], config.hidden_size)

        def forward(self, input_ids, intermediate_tensors: IntermediateTensors | None = None):
            x = "é" + intermediate_tensors["hidden_states"]
            return IntermediateTensors({"hidden_states": x})
    ''')


def _whole(source: bytes) -> str:
    """The facts of a whole-file parse (the fallback path), for comparison."""
    facts = analyze_source(source, "m.py", "pkg.m")
    for name in list(facts.pending):
        complete(facts, name)
    return repr(facts)


def test_only_needed_classes_are_parsed_and_the_rest_completes_identically(monkeypatch) -> None:
    source = MODEL.encode()
    facts = analyze_source(source, "m.py", "pkg.m")
    assert list(facts.classes) == ["Helper", "Builder", "Sub", "Model"]
    assert set(facts.pending) == {"Helper", "Builder"}  # Sub: a base from a models package; Model: the contract
    assert facts.classes["Helper"].bases == ["nn.Module"] and not facts.classes["Helper"].method_names
    assert facts.imports["Other"] == [("pkg.other", "Other")]
    assert "Phantom" not in facts.classes
    partial = _whole(source)

    def no_outline(text: str):
        raise Unplaceable("forced")

    monkeypatch.setattr(analysis.module, "outline", no_outline)
    whole = analyze_source(source, "m.py", "pkg.m")
    assert not whole.pending
    assert partial == repr(whole)


def test_columns_and_lines_are_the_files_own() -> None:
    facts = analyze_source(MODEL.encode(), "m.py", "pkg.m")
    tree = ast.parse(MODEL)
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    forward = facts.classes["Model"].methods["forward"]
    assert (facts.classes["Model"].line, forward.line) == (model.lineno, model.body[1].lineno)
    read = forward.reads[0]
    assert read.line == model.body[1].body[0].lineno


def test_classes_a_parsed_class_builds_are_parsed_ahead() -> None:
    """Submodules built by a parsed class of the same module (a model's layers) are parsed with
    it, in the worker, rather than later by a `ClassRef` in the main process; one level down."""
    source = textwrap.dedent('''\
        class Attention(nn.Module):
            def __init__(self):
                self.proj = Linear(1, 1)


        class Layer(nn.Module):
            def __init__(self):
                self.attn = Attention()


        class Unused(nn.Module):
            pass


        class Model(nn.Module):
            def __init__(self):
                self.layers = nn.ModuleList([Layer()])
                self.layer = Layer()

            def forward(self, intermediate_tensors=None):
                return intermediate_tensors
    ''').encode()
    facts = analyze_source(source, "m.py", "pkg.m")
    assert set(facts.pending) == {"Unused", "Attention"}
    assert "attn" in facts.classes["Layer"].submodules
    assert repr(facts.classes["Layer"]) == repr(complete(analyze_source(source, "m.py", "pkg.m", headers_only=True), "Layer"))


def test_layers_whose_output_is_sent_are_parsed_ahead() -> None:
    """A layer class built through `make_layers` whose output the model sends (PP012 reads its
    `forward`) is parsed in the worker; a layer whose output is not sent is left pending."""
    source = textwrap.dedent('''\
        class Layer(nn.Module):
            def forward(self, positions, hidden_states, residual):
                return hidden_states, None


        class Other(nn.Module):
            def forward(self, x):
                return x, None


        class Model(nn.Module):
            def __init__(self, config):
                self.start_layer, self.end_layer, self.layers = make_layers(config.n, lambda prefix: Layer())
                self.others = nn.ModuleList([Other() for _ in range(2)])

            def forward(self, input_ids, positions, intermediate_tensors=None):
                residual = None
                for layer in self.layers[self.start_layer:self.end_layer]:
                    hidden_states, residual = layer(positions, hidden_states, residual)
                for other in self.others:
                    other(hidden_states)
                return IntermediateTensors({"hidden_states": hidden_states, "residual": residual})
    ''').encode()
    facts = analyze_source(source, "m.py", "pkg.m")
    assert set(facts.pending) == {"Other"}
    assert facts.classes["Layer"].values and facts.classes["Layer"].values.none_returns == ((1, 3, ()),)
    assert repr(facts.classes["Layer"]) == repr(complete(analyze_source(source, "m.py", "pkg.m", headers_only=True), "Layer"))


def test_a_class_reference_completes_a_pending_class_when_read() -> None:
    facts = analyze_source(MODEL.encode(), "m.py", "pkg.m")
    stub = facts.classes["Helper"]
    ref = ClassRef(facts, stub)
    assert "Helper" in facts.pending and ref.header.bases == ["nn.Module"]
    assert ref.cls is stub and "Helper" not in facts.pending
    assert stub.init_calls == ("super",) and "proj" in stub.submodules


def test_a_class_reached_only_through_the_mro_is_never_parsed(tmp_path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text(MODEL + "\n\nclass Top(Helper):\n    intermediate_tensors = None\n")
    index = Index([tmp_path])
    [top] = index.lookup("pkg.m", "Top")
    assert [node.header.name for node in index.mro(top)] == ["Top", "Helper"]
    assert index.base_names(top) == {"Top", "Helper", "Module"}
    assert "Helper" in top.module.pending


def test_defines_parses_a_pending_class_only_when_its_text_can_define_the_method() -> None:
    facts = analyze_source(MODEL.encode(), "m.py", "pkg.m")
    helper = ClassRef(facts, facts.classes["Helper"])
    assert not helper.defines("forward") and "Helper" in facts.pending
    assert not helper.may_hold("make_layers") and helper.may_hold(r"self\.proj")
    assert helper.defines("project") and "Helper" not in facts.pending
    assert not helper.defines("proj")


def test_a_module_read_to_resolve_names_is_cached_apart_from_a_target(tmp_path) -> None:
    """A module parsed on demand leaves every body for later; those facts must never stand in
    for the same file's facts as a target, whose classes rules read directly."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text(MODEL)
    store = FactsCache(tmp_path / "cache")
    [ref] = Index([tmp_path], store).lookup("pkg.m", "Model")
    assert "Model" in ref.module.pending
    target = Index([tmp_path], store).parse(MODEL.encode(), str(tmp_path / "pkg" / "m.py"), "pkg.m")
    assert "Model" not in target.pending and target.classes["Model"].producers
    assert store.key(b"x", "m") != store.key(b"x", "m", "headers")


def test_index_resolves_into_pending_classes(tmp_path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text(MODEL)
    index = Index([tmp_path])
    [ref] = index.lookup("pkg.m", "Model")
    [helper] = index.resolve(ref.module, "Helper")
    assert helper.cls.method_names == {"__init__", "project"}


@pytest.mark.parametrize("text", [
    "x = '''\nunterminated\n",
    "a = 1\r\nclass A:\r  pass\n",
    "a = 1\n\fclass A:\n  pass\n",
    "x = (1,\n",
])
def test_what_the_outline_cannot_place_is_refused(text: str) -> None:
    with pytest.raises(Unplaceable):
        outline(text)


@pytest.mark.parametrize(("text", "masked"), [
    ('x = "a#b" # c "d\n', "x = S \n"),
    ("y = 'it\\'s' + \"q\\\"\" # 'x\n", "y = S + S \n"),
    ('s = """a\n"b" \'\'\' #\nc""" + \'\'\'d\ne\'\'\'\n', "s = S\n\0\n\0 + S\n\0\n"),
    ("e = \"\" + ''\n", "e = S + S\n"),
    ("z = f'{a[\"k\"]}'\n", "z = fS\n"),
])
def test_strings_and_comments_are_masked(text: str, masked: str) -> None:
    """Comments go, strings become `S` (escapes, quotes of the other kind and `#` inside them
    included), their line breaks kept, each continued line starting with NUL."""
    assert _masked(text) == masked


def test_outline_skips_continuations_strings_and_brackets() -> None:
    text = textwrap.dedent('''\
        from a \\
        import b
        x = [
        class_ for class_ in y]
        s = """
        class Fake:
        """
        try:
            import c
        except ImportError:
            c = None
        @deco(
        1)
        class A(B,
        C):
            pass
        class D: pass
        ''')
    kinds = [(s.kind, s.start, s.head, s.colon, s.inline) for s in outline(text)]
    assert kinds == [
        ("import", 1, 0, 0, False), ("other", 3, 0, 0, False), ("other", 5, 0, 0, False), ("compound", 8, 0, 0, False),
        ("class", 12, 14, 15, False), ("class", 17, 17, 17, True),
    ]


DEFINITIONS = textwrap.dedent('''\
    @deco(
    1)
    # a comment between decorators
    @other
    class A(B,
    C):  # a comment after the colon

        """Doc."""
        x = 1
    # a comment at column 0 inside the class
        y = (2,
    3)
    # trailing comment, not the class's

    async def f(a: "x:y" = {1: 2}, b=lambda: 3) -> dict[str, int]: return {}
    def g(): \\
        pass
    s = """
    class Fake:
        pass
    """
    class H: x = 1; y = 2
    def \ufb01le(): pass
    (a,
     b) = make(H)
    def i(
        a,
    ):
        @inner
        def j():
            pass
        return j
    ''')


def _by_ast(text: str) -> list[Definition]:
    found = []
    for node in ast.parse(text).body:
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        inner = node.body[0]
        body = min([inner.lineno, *(d.lineno for d in getattr(inner, "decorator_list", ()))])
        row = text.split("\n")[body - 1].encode()
        inline = not getattr(inner, "decorator_list", ()) and bool(row[:inner.col_offset].strip())
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        found.append(Definition(kind, node.name, first, node.end_lineno or node.lineno, body, inline))
    return found


def test_the_definitions_the_scan_finds_are_where_ast_puts_them() -> None:
    """Issue 39: the fixer cuts a file for libcst by this scan and parses only the definitions
    its edits touch: each top-level class and function, its first and last line of code and
    where its body starts, as `ast` says, on the hard shapes and on every file of this project."""
    assert definitions(DEFINITIONS) == _by_ast(DEFINITIONS)
    root = Path(__file__).resolve().parents[1]
    for path in sorted(path for folder in ("codemods", "tests", "bench") for path in (root / folder).rglob("*.py")):
        text = path.read_text()
        assert definitions(text) == _by_ast(text), path


def test_a_syntax_error_in_a_needed_class_is_still_reported() -> None:
    broken = MODEL.replace("def forward(self, input_ids,", "def forward(self input_ids,")
    with pytest.raises(SyntaxError):
        analyze_source(broken.encode(), "m.py", "pkg.m")


KEYED = MODEL.replace('intermediate_tensors["hidden_states"]', 'intermediate_tensors["KEY"]')


@pytest.mark.parametrize("source", [
    # in Latin-1, and valid UTF-8 too (of other text)
    b"# -*- coding: latin-1 -*-\n" + KEYED.replace('"\u00e9"', '"e"').replace("KEY", "h\u00c3\u00a9").encode("latin-1"),
    b"\xef\xbb\xbf" + KEYED.replace("KEY", "h\u00e9").encode(),
    KEYED.replace("KEY", "h\ufffd").encode(),
    KEYED.replace("KEY", "h\u00e9").replace("\n", "\r\n").encode(),
], ids=["latin-1", "bom", "replacement-character", "crlf"])
def test_each_encoding_and_line_end_reads_as_a_whole_parse(source: bytes, monkeypatch) -> None:
    """The partial parse decodes the source once for both its text tests and its rows when
    they agree (UTF-8 declared, nothing replaced); otherwise as declared, as ast does."""
    partial = _whole(source)
    assert "KEY" not in partial and "h" in partial

    def no_outline(text: str):
        raise Unplaceable("forced")

    monkeypatch.setattr(analysis.module, "outline", no_outline)
    assert partial == repr(analyze_source(source, "m.py", "pkg.m"))


def test_a_source_that_is_not_valid_utf8_is_refused() -> None:
    with pytest.raises((SyntaxError, ValueError)):
        analyze_source(KEYED.replace("KEY", "h").encode().replace(b'"h"', b'"h\xe9"'), "m.py", "pkg.m")


def test_a_declared_need_is_parsed_and_changes_the_cache_key(monkeypatch, tmp_path) -> None:
    before = FactsCache(tmp_path).key(MODEL.encode(), "pkg.m")
    monkeypatch.setattr(needs, "NEEDS", list(needs.NEEDS))
    needs.declare(needs.Need("projections", markers=("self.proj",)))
    assert FactsCache(tmp_path).key(MODEL.encode(), "pkg.m") != before
    facts = analyze_source(MODEL.encode(), "m.py", "pkg.m")
    assert set(facts.pending) == {"Builder"} and facts.classes["Helper"].method_names == {"__init__", "project"}


def test_pending_classes_survive_the_cache(tmp_path) -> None:
    store = FactsCache(tmp_path)
    facts = analyze_source(MODEL.encode(), "m.py", "pkg.m")
    store.put("ab" * 32, facts)
    back = store.get("ab" * 32, "m.py")
    assert back.pending == facts.pending and back.source == b""
    back.source = MODEL.encode()
    assert complete(back, "Helper").method_names == {"__init__", "project"}
    assert cache.FINGERPRINT


def test_classes_completed_in_a_run_are_cached_for_the_next(tmp_path, monkeypatch) -> None:
    """A warm run parses no class body a cold run has already completed."""
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "pkg" / "m.py").write_text(MODEL)
    first = Index([tmp_path / "src"], FactsCache(tmp_path / "cache"))
    [ref] = first.lookup("pkg.m", "Model")
    [helper] = first.resolve(ref.module, "Helper")
    assert ref.cls.producers and helper.cls.submodules
    first.flush()
    parsed = []
    monkeypatch.setattr("contractfix.analysis.complete", lambda module, name: parsed.append(name))
    second = Index([tmp_path / "src"], FactsCache(tmp_path / "cache"))
    [ref] = second.lookup("pkg.m", "Model")
    [helper] = second.resolve(ref.module, "Helper")
    assert helper.cls.method_names == {"__init__", "project"} and ref.cls.producers and parsed == []
    assert set(ref.module.pending) == {"Builder", "Sub"}
