"""The engine tier, one setting per process: a real `vllm.LLM` with dummy weights, greedy tokens out.

The caller runs this once with PP=1 and once with PP=N, each in its own process (so GPU memory
is given back in between), and compares the token ids. vLLM's workers load the changed module
through the sitecustomize shim (see shim/), which the caller puts on PYTHONPATH.
On CPU (a vLLM build with CPU kernels) the spike's workarounds apply: head_dim >= 32, a 64 MiB KV
cache, one thread group per rank, and DYNAMO_TRACE_ONCE with the eager backend for PP > 1 (with
enforce_eager the CPU runner never allocates the receive buffers). MoE layers stay: the build has
CPU MoE kernels.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import traceback

import smoke_config
from smoke_records import Emitter, excerpt

PROMPT = list(range(1, 9))
MAX_TOKENS = 8
KV_CACHE_BYTES = 64 << 20
"""On CPU, vLLM otherwise sizes the KV cache from free memory (GiBs, zeroed at start) and warms up
at 8192 tokens: a tiny model needs neither."""


def run(plan: dict) -> None:
    target, size, device = plan["target"], plan["pp"], plan["device"]
    emit = Emitter(plan["results"], arch=target["arch"], tier="engine", path=target["path"], device=device)
    start = time.monotonic()
    step = "derive the tiny config"
    try:
        with tempfile.TemporaryDirectory(prefix="contractfix-smoke-engine-") as config_dir:
            _write_config(target, device, config_dir)
            step = f"start LLM(pipeline_parallel_size={size})"
            llm = _engine(config_dir, size, device)
            step = "generate"
            tokens = _generate(llm)
    except smoke_config.NoConfigClass as exc:
        emit("generate", "skip", pp=size, reason=f"cannot smoke {target['arch']}: {exc}")
        return
    except Exception as exc:  # noqa: BLE001
        emit("generate", "fail", pp=size, error=excerpt(step, exc, target["path"]), duration_s=time.monotonic() - start,
             trace="".join(traceback.format_exception(exc)))
        return
    emit("generate", "pass", pp=size, duration_s=time.monotonic() - start, notes=[f"tokens: {tokens}"])
    with open(plan["outputs"], "w") as handle:
        json.dump({"tokens": tokens}, handle)


def _write_config(target: dict, device: str, folder: str) -> None:
    if target.get("config"):
        values = {**target["config"], "architectures": [target["arch"]]}
    else:
        model_type, defaults, _ = smoke_config.defaults_for(target["arch"])
        layers = max(2, target["layers"])
        values = smoke_config.derive(defaults, target["arch"], model_type, layers,
                                     dense=False, wide=device == "cpu").values
    with open(os.path.join(folder, "config.json"), "w") as handle:
        json.dump(values, handle, indent=1, default=str)


def _engine(config_dir: str, size: int, device: str):
    from vllm import LLM

    options = {
        "model": config_dir,
        "load_format": "dummy",
        "max_model_len": 64,
        "skip_tokenizer_init": True,
        "dtype": "float32",
        "seed": 0,
        "gpu_memory_utilization": 0.3,
        "pipeline_parallel_size": size,
    }
    if size > 1:
        options["distributed_executor_backend"] = "mp"
    if device == "cpu":
        options.update(kv_cache_memory_bytes=KV_CACHE_BYTES, max_num_batched_tokens=64, max_num_seqs=4)
        _inspect_in_process()
    if device == "cpu" and size > 1:
        options.update(enforce_eager=False, compilation_config={"mode": 2, "backend": "eager"})
    else:
        options["enforce_eager"] = True
    return LLM(**options)


def _inspect_in_process() -> None:
    """vLLM inspects the model class in a fresh interpreter (so as not to initialise CUDA), which
    imports vLLM all over again: on CPU the same inspection runs here, with the changed module."""
    from vllm.model_executor.models import registry

    if hasattr(registry, "_run_in_subprocess"):
        registry._run_in_subprocess = lambda fn: fn()


def _generate(llm) -> list[int]:
    from vllm import SamplingParams

    params = SamplingParams(max_tokens=MAX_TOKENS, temperature=0.0, detokenize=False)
    out = llm.generate([{"prompt_token_ids": PROMPT}], params)
    return list(out[0].outputs[0].token_ids)
