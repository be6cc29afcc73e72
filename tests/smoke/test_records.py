"""Report format: records, JSON, verdict and exit code, human summary."""

from __future__ import annotations

import json

import pytest

from contractfix.smoke.records import CheckRecord, SmokeReport, Status

FIELDS = {"arch", "tier", "check", "status", "reason", "duration_s", "error", "keys", "pp", "path", "device", "notes"}


def _rec(status: Status, check: str = "chain-equals-pp1", **extra) -> CheckRecord:
    return CheckRecord("LlamaForCausalLM", "contract", check, status, pp=2, path="/t/llama.py", **extra)


def test_verdict_and_exit_code() -> None:
    assert SmokeReport([_rec(Status.PASS)]).exit_code == 0
    assert SmokeReport([_rec(Status.PASS), _rec(Status.FAIL)]).exit_code == 1
    assert SmokeReport([_rec(Status.PASS), _rec(Status.SKIP)]).exit_code == 1
    assert SmokeReport([_rec(Status.PASS), _rec(Status.SKIP)], allow_skip=True).exit_code == 0
    assert SmokeReport([_rec(Status.FAIL), _rec(Status.SKIP)], allow_skip=True).exit_code == 1
    assert not SmokeReport([]).ok, "a smoke that checked nothing does not pass"


def test_json_has_one_record_per_check_with_every_field() -> None:
    report = SmokeReport(
        [_rec(Status.FAIL, "factory-keys", keys={"allocated": ["hidden_states"], "sent": ["hidden_states", "residual"]},
              error="rank 1: ...")],
        tiers=["static", "contract"], not_run={"engine": "needs >= 2 CUDA GPUs"}, duration_s=12.345,
    )
    data = json.loads(json.dumps(report.to_json()))
    assert data["ok"] is False and data["counts"] == {"pass": 0, "fail": 1, "skip": 0}
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
