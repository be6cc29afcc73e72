"""Build tiny vLLM models as pipeline stages in one process, and run their forwards.

One process plays every stage: vLLM's PP group is swapped for a proxy that reports rank r of N
while a stage is built and while it runs. Workarounds that make real vLLM model code run here
(see the pp-smoke spike, RESULTS.md section 3):
- every CustomOp goes to its torch-native path on CPU (the stock wheel has no CPU kernels);
- attention is plain causal SDPA: with no attention metadata vLLM's layer returns an
  uninitialised buffer, so this check covers the PP plumbing, not vLLM's attention kernels;
- the dummy loader draws each weight from its global parameter name (vLLM's gives every tensor
  the same tiny values, so a wrong residual would hardly change the output); every PP layout
  gets the same weights, set before `process_weights_after_loading` as a checkpoint's would be
  (a CPU-kernel build prepacks linear weights there);
- one VllmConfig per model instance (attention layers register by name in it).
"""

from __future__ import annotations

import contextlib
import zlib
from dataclasses import dataclass

MAX_TOKENS = 64
WEIGHT_SCALE = 0.05


class FakePPGroup:
    """vLLM's PP group as rank `rank` of `size` sees it; everything else is the real group."""

    def __init__(self, real, rank: int, size: int) -> None:
        self._real = real
        self.rank_in_group = rank
        self.world_size = size
        self.is_first_rank = rank == 0
        self.is_last_rank = rank == size - 1

    def __getattr__(self, name):
        return getattr(self._real, name)


@contextlib.contextmanager
def pp_rank(rank: int, size: int):
    from vllm.distributed import parallel_state

    real = parallel_state._PP
    parallel_state._PP = FakePPGroup(real, rank, size) if size > 1 else real
    try:
        yield
    finally:
        parallel_state._PP = real


def patch_runtime(device: str) -> None:
    """Process-wide patches, once: SDPA attention, name-keyed dummy weights, and no-op
    accelerator calls on a CPU-only torch. Then the objects made so far (vLLM's, torch's: millions)
    are frozen out of the cyclic collector: vLLM's loader runs a full collection after every model it
    loads, dozens a run, and each took 0.4 s walking them (two thirds of a contract run)."""
    import gc

    import torch
    from vllm.model_executor.layers.attention import attention
    from vllm.model_executor.model_loader.dummy_loader import DummyModelLoader

    attention.Attention.forward = _sdpa_forward
    DummyModelLoader.load_weights = lambda self, model, model_config: _draw_weights(model)
    if device == "cpu" and not torch.accelerator.is_available():
        torch.accelerator.empty_cache = lambda *a, **k: None
        torch.accelerator.synchronize = lambda *a, **k: None
    gc.collect()
    gc.freeze()


def _sdpa_forward(self, query, key, value, output_shape=None, output_dtype=None):
    import torch
    import torch.nn.functional as F

    n = query.shape[0]
    heads, kv_heads, dim = self.num_heads, self.num_kv_heads, self.head_size
    dim_v = getattr(self, "head_size_v", dim)
    q = query.view(n, heads, dim).transpose(0, 1)
    k = key.view(n, kv_heads, dim).transpose(0, 1)
    v = value.view(n, kv_heads, dim_v).transpose(0, 1)
    if heads != kv_heads:
        k = k.repeat_interleave(heads // kv_heads, dim=0)
        v = v.repeat_interleave(heads // kv_heads, dim=0)
    i = torch.arange(n, device=query.device)
    mask = i[:, None] >= i[None, :]
    window = getattr(self, "sliding_window", None)
    if window:
        mask &= (i[:, None] - i[None, :]) < window
    scale = getattr(self.impl, "scale", dim**-0.5)
    out = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask, scale=scale)
    return out.transpose(0, 1).reshape(n, heads * dim_v).to(query.dtype)


_DIST_READY = False


def init_distributed(cfg, device: str) -> None:
    """A world of size 1 (gloo on CPU, nccl on CUDA), once per process."""
    global _DIST_READY
    if _DIST_READY:
        return
    from vllm.config import set_current_vllm_config
    from vllm.distributed.parallel_state import (
        ensure_model_parallel_initialized,
        init_distributed_environment,
    )
    from vllm.utils.network_utils import get_open_port

    with set_current_vllm_config(cfg):
        init_distributed_environment(
            world_size=1,
            rank=0,
            distributed_init_method=f"tcp://127.0.0.1:{get_open_port()}",
            local_rank=0,
            backend="gloo" if device == "cpu" else "nccl",
        )
        ensure_model_parallel_initialized(1, 1)
    _DIST_READY = True


@dataclass
class Stage:
    """Rank `rank` of a `size`-stage pipeline (size 1: the whole model)."""

    cfg: object
    model: object
    rank: int
    size: int

    def forward(self, ids, positions, **kwargs):
        with self.running(ids.shape[0]):
            return self.model(input_ids=ids, positions=positions, **kwargs)

    @contextlib.contextmanager
    def running(self, tokens: int):
        """What a runner sets around a step of this rank: no grad, its config, a forward context
        for `tokens` tokens, its PP rank."""
        import torch
        from vllm.config import set_current_vllm_config
        from vllm.forward_context import set_forward_context

        with (
            torch.no_grad(),
            set_current_vllm_config(self.cfg),
            set_forward_context(None, self.cfg, num_tokens=tokens),
            pp_rank(self.rank, self.size),
        ):
            yield


def build(config_dir: str, device: str, rank: int, size: int) -> Stage:
    from vllm.config import set_current_vllm_config
    from vllm.model_executor.model_loader import get_model

    cfg = engine_config(config_dir, device)
    init_distributed(cfg, device)
    with set_current_vllm_config(cfg), pp_rank(rank, size):
        model = get_model(vllm_config=cfg)
    model.eval()
    return Stage(cfg, model, rank, size)


def engine_config(config_dir: str, device: str, **extra):
    """A fresh VllmConfig for the tiny model in `config_dir` (`extra`: more EngineArgs)."""
    from vllm.engine.arg_utils import EngineArgs

    return EngineArgs(
        model=config_dir,
        load_format="dummy",
        enforce_eager=True,
        max_model_len=MAX_TOKENS,
        max_num_batched_tokens=MAX_TOKENS,
        max_num_seqs=4,
        skip_tokenizer_init=True,
        dtype="float32",
        seed=0,
        compilation_config={"custom_ops": ["none"]} if device == "cpu" else {},
        **extra,
    ).create_engine_config()


def _draw_weights(model) -> None:
    import torch

    with torch.no_grad():
        for name, param in model.named_parameters():
            if not torch.is_floating_point(param):
                continue
            gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
            if "norm" in name and param.dim() == 1:
                values = 1.0 + 0.1 * torch.randn(param.shape, generator=gen)
            else:
                values = WEIGHT_SCALE * torch.randn(param.shape, generator=gen)
            param.copy_(values.to(param.device, param.dtype))


def empty_buffer(stage: Stage, dtype, device: str):
    """What a non-first rank's runner allocates at start-up: the model's own factory's buffers."""
    import torch

    return stage.model.make_empty_intermediate_tensors(
        batch_size=MAX_TOKENS, dtype=dtype, device=torch.device(device)
    )
