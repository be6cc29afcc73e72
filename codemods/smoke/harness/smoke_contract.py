"""The contract tier: a one-process fake-PP run of each target, against its PP=1 model.

Per target: `build` (the changed class builds as a tiny PP=1 model) and
`entry-without-intermediate-tensors` (its forward runs without the keyword); per PP size N:
`factory-keys` (each receiving rank allocates exactly the keys the previous rank sent),
`keys-read` (zeroing any received key changes that rank's output) and `chain-equals-pp1`
(rank 0 -> ... -> rank N-1 gives the PP=1 output) and `weights-load` (every rank's
`load_weights` takes the PP=1 model's weights under their full-model names, as every rank reads
the whole checkpoint: a loader that looks up another rank's layer fails with KeyError) and
`tied-embeddings` (with `tie_word_embeddings` set, the last rank builds and its output head shares
storage with a real input embedding, as at PP=1: an embedding built on the first rank only fails
the tie with AttributeError). Draft heads get their own checks (smoke_drafter). Receiving follows
vLLM's V2 runner: every
allocated key is filled from what was sent (gpu/model_runner.py:2030-2036).
"""

from __future__ import annotations

import gc
import importlib
import inspect
import json
import os
import tempfile
import time
from dataclasses import dataclass, field

import smoke_config
import smoke_override
import smoke_stage
from smoke_records import Emitter, excerpt

TOKENS = 8
ATOL = RTOL = 1e-4
READ_TOL = 1e-4
PP_CHECKS = ("factory-keys", "keys-read", "chain-equals-pp1", "weights-load", "tied-embeddings")


def run(plan: dict) -> None:
    """Run every unit of the plan; each unit installs its module overrides for its targets only.
    A draft head is not a pipeline: smoke_drafter runs it."""
    import smoke_drafter

    smoke_stage.patch_runtime(plan["device"])
    with tempfile.TemporaryDirectory(prefix="contractfix-smoke-configs-") as work:
        for number, unit in enumerate(plan["units"]):
            finder = smoke_override.install(unit["overrides"])
            try:
                for target in unit["targets"]:
                    emit = Emitter(plan["results"], arch=target["arch"], tier="contract",
                                   path=target["path"], device=plan["device"])
                    runner = smoke_drafter.run_target if target.get("draft") else run_target
                    runner(target, plan, emit, os.path.join(work, f"{number}-{target['arch']}"))
                    gc.collect()
            finally:
                smoke_override.uninstall(finder)


def set_up(target: dict, emit: Emitter, start: float, prepare):
    """What `prepare()` returns (it imports the changed module and writes the tiny config), or
    None once the `build` check's skip (no config class) or failure (any other error) is emitted."""
    try:
        return prepare()
    except smoke_config.NoConfigClass as exc:
        emit("build", "skip", pp=1, reason=f"cannot smoke {target['arch']}: {exc}")
    except Exception as exc:  # noqa: BLE001 - any import/config failure fails the target
        emit("build", "fail", pp=1, error=excerpt("import the changed module", exc, target["path"]),
             duration_s=time.monotonic() - start)
    return None


def run_target(target: dict, plan: dict, emit: Emitter, config_dir: str) -> None:
    device, sizes = plan["device"], plan["pp_sizes"]
    start = time.monotonic()
    prepared = set_up(target, emit, start, lambda: (register(target), *_write_config(target, max(sizes), device, config_dir)))
    if prepared is None:
        return
    cls, layers, written = prepared
    notes = [*target["notes"], *written]
    full, error = _build_entry(config_dir, device, cls, target)
    if full is None:
        status, reason = _blame(target, config_dir, device, error)
        emit("build", status, pp=1, reason=reason, error=error, notes=notes,
             duration_s=time.monotonic() - start)
        return
    emit("build", "pass", pp=1, notes=notes, duration_s=time.monotonic() - start,
         reason=f"{cls.__module__}.{cls.__qualname__} from {inspect.getsourcefile(cls)}")
    reference = _entry_check(full, emit, device, target["path"])
    for size in sizes:
        if size > layers:
            for check in PP_CHECKS:
                emit(check, "skip", pp=size, reason=f"the config has {layers} layers, fewer than PP={size}")
            continue
        _pp_checks(config_dir, device, size, reference, emit, target["path"], full)


def register(target: dict):
    """Import the target's module (through the overrides) and make its class the architecture."""
    from vllm import ModelRegistry

    module = importlib.import_module(target["module"])
    cls = getattr(module, target["cls"])
    if target["path"] and os.path.realpath(inspect.getsourcefile(cls)) != os.path.realpath(target["path"]):
        raise ImportError(f"{target['cls']} came from {inspect.getsourcefile(cls)}, not {target['path']}")
    ModelRegistry.register_model(target["arch"], cls)
    return cls


def _write_config(target: dict, layers: int, device: str, folder: str) -> tuple[int, list[str]]:
    """Write the target's tiny config.json into `folder`; returns its layer count and notes."""
    if target.get("config"):
        values, notes = dict(target["config"]), [f"config supplied by the user ({target['config_source']})"]
        values["architectures"] = [target["arch"]]
    else:
        model_type, defaults, found = smoke_config.defaults_for(target["arch"])
        tiny = smoke_config.derive(defaults, target["arch"], model_type, max(layers, 2), dense=device == "cpu")
        values, notes = tiny.values, [f"config class: {found}", *tiny.notes]
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as handle:
        json.dump(values, handle, indent=1, default=str)
    count = next((values[f] for f in smoke_config.LAYER_FIELDS if isinstance(values.get(f), int)), layers)
    return count, notes


def _build_entry(config_dir: str, device: str, cls, target: dict):
    try:
        full = smoke_stage.build(config_dir, device, 0, 1)
    except Exception as exc:  # noqa: BLE001
        return None, excerpt("build the PP=1 model", exc, target["path"])
    if not isinstance(full.model, cls):
        return None, f"the built model is a {type(full.model).__qualname__}, not the changed {target['cls']}"
    return full, ""


def _cause(error: str) -> str:
    """An `excerpt` without its places: the step, the exception's type and its message."""
    return error.split("\n  at ")[0]


def _blame(target: dict, config_dir: str, device: str, error: str) -> tuple[str, str]:
    """A build failure is the change's fault unless vLLM's own module fails the same way: then
    vLLM cannot build the architecture from its config class at all, and the check does not apply
    (LlamaBidirectionalModel needs a `pooling` field that no config class has)."""
    if not target["path"]:
        return "n/a", "not applicable: vLLM cannot build this architecture from its config class"
    from vllm import ModelRegistry

    installed = installed_class(target)
    if installed is None:
        return "fail", "the changed module's model does not build"
    ModelRegistry.register_model(target["arch"], installed)
    try:
        smoke_stage.build(config_dir, device, 0, 1)
    except Exception as exc:  # noqa: BLE001
        if _cause(excerpt("build the PP=1 model", exc)) == _cause(error):
            return "n/a", "not applicable: vLLM's own module does not build this architecture from its config class either"
        return "skip", "cannot smoke this architecture here: the installed module's tiny model fails to build too"
    return "fail", "the changed module's model does not build, the installed module's does"


def installed_class(target: dict):
    """The class from the installed module, loaded aside (sys.modules keeps the changed one)."""
    import importlib.machinery
    import importlib.util

    parent = target["module"].rpartition(".")[0]
    try:
        search = importlib.import_module(parent).__path__
        spec = importlib.machinery.PathFinder.find_spec(target["module"], search)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, target["cls"])
    except Exception:  # noqa: BLE001 - no baseline: the change is blamed
        return None


def _entry_check(full, emit: Emitter, device: str, source: str | None):
    """Call the PP=1 model without `intermediate_tensors`; returns its output, the PP reference."""
    ids, positions = inputs(full, device)
    start = time.monotonic()
    try:
        out = full.forward(ids, positions)
        emit("entry-without-intermediate-tensors", "pass", pp=1, duration_s=time.monotonic() - start)
        return out
    except Exception as exc:  # noqa: BLE001
        emit("entry-without-intermediate-tensors", "fail", pp=1, duration_s=time.monotonic() - start,
             error=excerpt("PP=1 forward(input_ids, positions)", exc, source))
    try:
        return full.forward(ids, positions, intermediate_tensors=None)
    except Exception:  # noqa: BLE001 - the PP checks then report the missing reference
        return None


def inputs(stage, device: str):
    import torch

    vocab = stage.cfg.model_config.get_vocab_size()
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, min(vocab, 128), (TOKENS,), generator=gen).to(device)
    return ids, torch.arange(TOKENS, device=device)


@dataclass
class Pipeline:
    """What one chained run rank 0 -> N-1 saw; `error` says where it stopped, if it did."""

    size: int
    stages: list = field(default_factory=list)
    pairs: list[tuple[int, list[str], list[str]]] = field(default_factory=list)
    received: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)
    error: str = ""
    duration_s: float = 0.0
    factory_s: float = 0.0


def run_pipeline(config_dir: str, device: str, size: int, source: str | None) -> Pipeline:
    import torch
    from vllm.sequence import IntermediateTensors

    run = Pipeline(size)
    start = time.monotonic()
    step = "build"
    try:
        for rank in range(size):
            step = f"build rank {rank} of {size}"
            run.stages.append(smoke_stage.build(config_dir, device, rank, size))
        ids, positions = inputs(run.stages[0], device)
        sent = None
        for rank, stage in enumerate(run.stages):
            received = None
            if rank:
                step = f"rank {rank} make_empty_intermediate_tensors"
                allocated = time.monotonic()
                buffer = smoke_stage.empty_buffer(stage, torch.float32, device)
                run.pairs.append((rank, sorted(buffer.tensors), sorted(sent.tensors)))
                step = f"rank {rank} receive (fill every allocated key from rank {rank - 1}'s output)"
                for key, tensor in buffer.tensors.items():
                    tensor[:TOKENS].copy_(sent[key][:TOKENS])
                received = buffer[:TOKENS]
                run.factory_s += time.monotonic() - allocated
                run.received[rank] = received
            step = f"rank {rank} forward"
            out = stage.forward(ids, positions, intermediate_tensors=received)
            if rank < size - 1 and not isinstance(out, IntermediateTensors):
                raise TypeError(f"rank {rank} of {size} returned {type(out).__name__}, not IntermediateTensors")
            run.outputs[rank] = sent = out
    except Exception as exc:  # noqa: BLE001
        run.error = excerpt(step, exc, source)
    run.duration_s = time.monotonic() - start
    return run


def _pp_checks(config_dir: str, device: str, size: int, reference, emit: Emitter, source: str | None,
               full=None) -> None:
    run = run_pipeline(config_dir, device, size, source)
    _factory_keys(run, emit)
    _keys_read(run, emit, device, source)
    _chain(run, reference, emit)
    _weights_load(run, full, emit, source)
    _tied_embeddings(config_dir, device, size, emit, source)


def checkpoint_weights(model) -> list[tuple[str, object]]:
    """The PP=1 model's weights under its own (full-model) names, as a checkpoint would hold them:
    the parameters that load one to one. Fused ones (a `packed_modules_mapping` target, MoE
    experts) need their shards and are left out; the rest reach every branch that looks names up."""
    packed = set(getattr(model, "packed_modules_mapping", None) or {})
    return [
        (name, param.detach().clone())
        for name, param in model.named_parameters()
        if not packed.intersection(name.split(".")) and ".experts." not in name
    ]


def _weights_load(run: Pipeline, full, emit: Emitter, source: str | None) -> None:
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.models import utils

    if full is None or len(run.stages) < run.size:
        reason = run.error.splitlines()[0] if run.error else "no PP=1 model"
        emit("weights-load", "skip", pp=run.size, reason="not reached: " + reason)
        return
    weights = checkpoint_weights(full.model)
    start = time.monotonic()
    for stage in run.stages:
        # vLLM caches each model's missing layers by id(model); here many models live and die in
        # one process, so a new model can inherit a dead one's id and its stale answer.
        getattr(utils, "_model_to_pp_missing_layer_names", {}).clear()
        try:
            with set_current_vllm_config(stage.cfg), smoke_stage.pp_rank(stage.rank, stage.size):
                stage.model.load_weights(iter(weights))
        except Exception as exc:  # noqa: BLE001
            emit("weights-load", "fail", pp=run.size, duration_s=time.monotonic() - start,
                 error=excerpt(f"rank {stage.rank} of {run.size} load_weights (the full model's "
                               f"{len(weights)} weights)", exc, source))
            return
    emit("weights-load", "pass", pp=run.size, duration_s=time.monotonic() - start,
         reason=f"every rank loaded the full model's {len(weights)} one-to-one weights")


def _tied_embeddings(config_dir: str, device: str, size: int, emit: Emitter, source: str | None) -> None:
    """Built from the target's config with `tie_word_embeddings` set: where the PP=1 model's
    output head shares its weight with an input embedding, the last of `size` ranks must build
    and share it too."""
    tied = config_dir + "-tied"
    if not os.path.exists(tied):
        os.makedirs(tied)
        with open(os.path.join(config_dir, "config.json")) as handle:
            values = json.load(handle)
        with open(os.path.join(tied, "config.json"), "w") as handle:
            json.dump({**values, "tie_word_embeddings": True}, handle, indent=1)
    start = time.monotonic()
    step = "build the PP=1 model with tie_word_embeddings=true"
    try:
        if not _shares(smoke_stage.build(tied, device, 0, 1).model):
            emit("tied-embeddings", "n/a", pp=size, duration_s=time.monotonic() - start,
                 reason="not applicable: the PP=1 model does not tie its output head to an input embedding")
            return
        step = f"build rank {size - 1} of {size} with tie_word_embeddings=true"
        last = smoke_stage.build(tied, device, size - 1, size).model
    except Exception as exc:  # noqa: BLE001
        emit("tied-embeddings", "fail", pp=size, duration_s=time.monotonic() - start,
             error=excerpt(step, exc, source))
        return
    if _shares(last):
        emit("tied-embeddings", "pass", pp=size, duration_s=time.monotonic() - start,
             reason=f"rank {size - 1} of {size}: lm_head shares storage with a real input embedding")
    else:
        emit("tied-embeddings", "fail", pp=size, duration_s=time.monotonic() - start,
             error=f"rank {size - 1} of {size}: lm_head does not share storage with an input embedding, "
                   "while the PP=1 model's does")


def _shares(model) -> bool:
    """Whether the model's `lm_head` weight is the storage of one of its real input embeddings."""
    from vllm.model_executor.layers.vocab_parallel_embedding import ParallelLMHead, VocabParallelEmbedding

    heads = [m for m in model.modules() if isinstance(m, ParallelLMHead)]
    embeddings = [m for m in model.modules() if isinstance(m, VocabParallelEmbedding)
                  and not isinstance(m, ParallelLMHead)]
    pointers = {e.weight.data_ptr() for e in embeddings if hasattr(e, "weight")}
    named = getattr(model, "lm_head", None)
    if named is not None and isinstance(named, VocabParallelEmbedding) and not isinstance(named, ParallelLMHead):
        return True  # the head is the embedding itself (`lm_head = embed_tokens`)
    return any(hasattr(h, "weight") and h.weight.data_ptr() in pointers for h in heads)


def _factory_keys(run: Pipeline, emit: Emitter) -> None:
    bad = [(r, a, s) for r, a, s in run.pairs if a != s]
    _, allocated, sent = (bad or run.pairs or [(0, [], [])])[0]
    keys = {"allocated": allocated, "sent": sent}
    if bad:
        lines = [f"rank {r}: make_empty_intermediate_tensors allocates {a}, rank {r - 1} sent {s}"
                 f" (sent, not allocated: {sorted(set(s) - set(a))}; allocated, not sent: {sorted(set(a) - set(s))})"
                 for r, a, s in bad]
        emit("factory-keys", "fail", pp=run.size, keys=keys, error="\n".join(lines), duration_s=run.factory_s)
    elif len(run.pairs) == run.size - 1:
        emit("factory-keys", "pass", pp=run.size, keys=keys, duration_s=run.factory_s)
    else:
        emit("factory-keys", "skip", pp=run.size, keys=keys, reason="not reached: " + run.error.splitlines()[0])


def _keys_read(run: Pipeline, emit: Emitter, device: str, source: str | None) -> None:
    if run.error:
        emit("keys-read", "skip", pp=run.size, reason="not reached: " + run.error.splitlines()[0])
        return
    import torch
    from vllm.sequence import IntermediateTensors

    start = time.monotonic()
    ids, positions = inputs(run.stages[0], device)
    unread, changes = [], []
    try:
        for rank, received in run.received.items():
            for key in sorted(received.tensors):
                zeroed = IntermediateTensors(
                    {k: torch.zeros_like(v) if k == key else v for k, v in received.tensors.items()}
                )
                out = run.stages[rank].forward(ids, positions, intermediate_tensors=zeroed)
                change = max_diff(out, run.outputs[rank])
                changes.append(f"rank {rank} '{key}': {change:.2e}")
                if change <= READ_TOL:
                    unread.append(f"rank {rank}: {key}")
    except Exception as exc:  # noqa: BLE001
        emit("keys-read", "fail", pp=run.size, error=excerpt(f"rank {rank} forward with '{key}' zeroed", exc, source),
             duration_s=time.monotonic() - start)
        return
    keys = {"received": sorted({k for r in run.received.values() for k in r.tensors}), "unread": unread}
    emit("keys-read", "fail" if unread else "pass", pp=run.size, keys=keys, duration_s=time.monotonic() - start,
         reason="output change when zeroed: " + ", ".join(changes),
         error=f"received but not read (zeroing it changes nothing): {unread}" if unread else "")


def _chain(run: Pipeline, reference, emit: Emitter) -> None:
    import torch

    last = run.outputs.get(run.size - 1)
    keys = {"sent": sorted(run.outputs[0].tensors)} if 0 in run.outputs and run.size > 1 else {}
    if run.error:
        emit("chain-equals-pp1", "fail", pp=run.size, keys=keys, error=run.error, duration_s=run.duration_s)
    elif reference is None:
        emit("chain-equals-pp1", "skip", pp=run.size, keys=keys, duration_s=run.duration_s,
             reason="no PP=1 reference: the PP=1 model's forward failed")
    else:
        diff = max_diff(last, reference)
        same = torch.allclose(last.float(), reference.float(), atol=ATOL, rtol=RTOL)
        emit("chain-equals-pp1", "pass" if same else "fail", pp=run.size, keys=keys, duration_s=run.duration_s,
             reason=f"max |PP chain - PP=1| = {diff:.2e}",
             error="" if same else f"the PP={run.size} chain differs from the PP=1 output by {diff:.2e}")


def max_diff(a, b) -> float:
    from vllm.sequence import IntermediateTensors

    if isinstance(a, IntermediateTensors):
        return max((max_diff(v, b.tensors[k]) for k, v in a.tensors.items() if k in b.tensors), default=0.0)
    return (a.float() - b.float()).abs().max().item()

