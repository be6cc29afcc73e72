"""`contractfix smoke`: prove a fix on real vLLM, at the highest tier this machine can run.

- static: each changed file compiles, the contract check is clean, the diff is only the fixes;
- contract: a one-process fake pipeline (PP 2 and 3) of real vLLM model code on CPU or CUDA;
- engine: `vllm.LLM` with PP=2 against PP=1, token by token (>= 2 GPUs or CPU kernels).

The vLLM side runs in a subprocess (`harness/`); this package never imports vLLM or torch.
"""

from .api import run_smoke
from .errors import SetupError, UsageError
from .records import CheckRecord, SmokeReport, Status
from .tiers import Tier
from .venv import managed_env, setup

__all__ = [
    "CheckRecord",
    "SetupError",
    "SmokeReport",
    "Status",
    "Tier",
    "UsageError",
    "managed_env",
    "run_smoke",
    "setup",
]
