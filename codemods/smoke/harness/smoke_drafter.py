"""The contract tier for a draft head: built as vLLM's last PP rank builds it, then one step.

vLLM builds a drafter on the last PP rank only (v1/worker/gpu_model_runner.py; V2
v1/worker/gpu/model_runner.py), through `get_model(model_config=<the draft model config>)`
(v1/spec_decode/llm_base_proposer.py `_get_model`), where the draft model config is the one its
speculative config derives from the target's, and `get_pp_group()` is still the target's group:
rank N-1 of N, `is_first_rank` False. So: the target's tiny config is written, vLLM derives the
drafter's, and the drafter is built under a fake PP group.

Checks: `build` (the drafter builds and runs one step at PP=1) and, per PP size N,
`drafter-last-rank` (built as rank N-1 of N, one step gives the PP=1 drafter's logits). A step is
what the proposer runs: `model(input_ids, positions, hidden_states, inputs_embeds=None)` on dummy
token ids and target hidden states, then `compute_logits`. A drafter that tests `is_first_rank`, or
drops its embedding by rank (PP010), fails at N > 1 (an assertion, a shape error, or other logits).
"""

from __future__ import annotations

import inspect
import json
import os
import time

import smoke_config
import smoke_contract
import smoke_stage
from smoke_records import Emitter, excerpt

CHECK = "drafter-last-rank"
LAYERS = 2


def run_target(target: dict, plan: dict, emit: Emitter, config_dir: str) -> None:
    device = plan["device"]
    start = time.monotonic()
    prepared = smoke_contract.set_up(
        target, emit, start, lambda: (smoke_contract.register(target), _write_config(target["draft"], device, config_dir))
    )
    if prepared is None:
        return
    cls, written = prepared
    notes = [*target["notes"], *written]
    reference, error = one_step(config_dir, device, cls, target, 0, 1)
    if reference is None:
        status, reason = _blame(target, config_dir, device)
        emit("build", status, pp=1, reason=reason, error=error, notes=notes, duration_s=time.monotonic() - start)
        return
    emit("build", "pass", pp=1, notes=notes, duration_s=time.monotonic() - start,
         reason=f"{cls.__module__}.{cls.__qualname__} from {inspect.getsourcefile(cls)}: "
                "one step at PP=1 (forward, compute_logits)")
    for size in plan["pp_sizes"]:
        _last_rank(config_dir, device, cls, target, size, reference, emit)


def _write_config(draft: dict, device: str, folder: str) -> list[str]:
    """The target's tiny config.json, with the fields the speculative config's override reads."""
    model_type, defaults, found = smoke_config.defaults_for(draft["target"])
    tiny = smoke_config.derive(defaults, draft["target"], model_type, LAYERS, dense=device == "cpu")
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as handle:
        json.dump({**tiny.values, **draft["config"]}, handle, indent=1, default=str)
    return [f"target config class: {found}; speculative method {draft['method']!r}; the target itself is not built",
            *tiny.notes]


def build(config_dir: str, device: str, rank: int, size: int, method: str) -> smoke_stage.Stage:
    """The drafter of the target in `config_dir`, as rank `rank` of `size` builds it."""
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.model_loader import get_model

    cfg = smoke_stage.engine_config(config_dir, device,
                                    speculative_config={"method": method, "num_speculative_tokens": 1})
    smoke_stage.init_distributed(cfg, device)
    with set_current_vllm_config(cfg), smoke_stage.pp_rank(rank, size):
        model = get_model(vllm_config=cfg, model_config=cfg.speculative_config.draft_model_config)
    model.eval()
    return smoke_stage.Stage(cfg, model, rank, size)


def one_step(config_dir: str, device: str, cls, target: dict, rank: int, size: int):
    """(logits, "") of one draft step at rank `rank` of `size`, or (None, where and why it failed)."""
    import torch

    where = f"rank {rank} of {size}" if size > 1 else "PP=1"
    step = f"build the drafter at {where}"
    try:
        stage = build(config_dir, device, rank, size, target["draft"]["method"])
        if not isinstance(stage.model, cls):
            return None, f"the built drafter is a {type(stage.model).__qualname__}, not the changed {target['cls']}"
        ids, positions = smoke_contract.inputs(stage, device)
        gen = torch.Generator().manual_seed(1)
        width = stage.cfg.speculative_config.draft_model_config.get_hidden_size()
        hidden = torch.randn(len(ids), width, generator=gen).to(device)
        with stage.running(len(ids)):
            step = f"{where} forward(input_ids, positions, hidden_states)"
            out = stage.model(input_ids=ids, positions=positions, hidden_states=hidden, inputs_embeds=None)
            step = f"{where} compute_logits"
            return stage.model.compute_logits(out[0] if isinstance(out, tuple) else out), ""
    except Exception as exc:  # noqa: BLE001
        return None, excerpt(step, exc, target["path"])


def _last_rank(config_dir: str, device: str, cls, target: dict, size: int, reference, emit: Emitter) -> None:
    import torch

    start = time.monotonic()
    logits, error = one_step(config_dir, device, cls, target, size - 1, size)
    took = time.monotonic() - start
    if logits is None:
        emit(CHECK, "fail", pp=size, error=error, duration_s=took)
        return
    shaped = logits.shape == reference.shape
    diff = smoke_contract.max_diff(logits, reference) if shaped else float("inf")
    same = shaped and torch.allclose(
        logits.float(), reference.float(), atol=smoke_contract.ATOL, rtol=smoke_contract.RTOL)
    emit(CHECK, "pass" if same else "fail", pp=size, duration_s=took,
         reason=f"built as rank {size - 1} of {size}: max |logits - PP=1 drafter's| = {diff:.2e}",
         error="" if same else f"the drafter built as rank {size - 1} of {size} gives other logits than at PP=1 "
                               f"(max diff {diff:.2e}, shapes {tuple(logits.shape)} and {tuple(reference.shape)})")


def _blame(target: dict, config_dir: str, device: str) -> tuple[str, str]:
    """A PP=1 failure is the change's fault unless the installed module fails the same way."""
    if not target["path"]:
        return "skip", "cannot smoke this drafter here: its tiny model does not run at PP=1"
    from vllm import ModelRegistry

    installed = smoke_contract.installed_class(target)
    if installed is None:
        return "fail", "the changed drafter does not run at PP=1"
    ModelRegistry.register_model(target["arch"], installed)
    logits, _ = one_step(config_dir, device, installed, target, 0, 1)
    if logits is None:
        return "skip", "cannot smoke this drafter here: the installed module's tiny drafter fails at PP=1 too"
    return "fail", "the changed drafter does not run at PP=1, the installed module's does"
