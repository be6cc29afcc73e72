"""What a failed engine run says, in one line: the root exception and the model line it came from.

A real `vllm.LLM` run reports a worker's failure wrapped, often twice: the executor's
`RuntimeError: Worker failed with error '...'` around torch dynamo's "Observed exception ...
Dynamo found no exception handler ..." around the model's own `KeyError('residual')`, with the
model's frame under "from user code:". A worker's own traceback may also be in the run's output,
its lines prefixed by vLLM's logger. The contract tier names the model's exception and line
(`KeyError: 'residual'`, `llama.py:423`); this does the same for the engine tier, from text.
"""

from __future__ import annotations

import ast
import os
import re

DYNAMO = re.compile(r"raised exception (?:Observed)?(\w+)\((.*)\)\s*$", re.M)
"""dynamo's "Developer debug context: raised exception KeyError('residual')"."""
FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)\n(?:\s*(\S.*)\n)?', re.M)
EXCEPTION = re.compile(r"^(\w+(?:\.\w+)*(?:Error|Exception|Exit|Interrupt)): (.*)$", re.M)
LOG_PREFIX = re.compile(r"^(?:\(\w+(?: pid=\d+)?\) )?(?:(?:ERROR|WARNING|INFO|DEBUG) \S+ \S+ \[[^\]]*\] )?", re.M)
WRAPPERS = ("RuntimeError", "Unsupported", "torch._dynamo.exc.Unsupported", "Exception")
"""Exceptions that wrap the model's own: a root is another one when there is another one."""
MODELS = os.sep.join(("model_executor", "models", ""))


def explain(error: str, output: str, path: str | None) -> str:
    """`error` ('step: Type: message' from the harness), made to name the root exception and the
    last frame in `path` (the changed file; else the last one in vLLM's models package). `output`:
    what the run printed (a worker's traceback, when vLLM logged one). Unchanged when no root is
    found."""
    text = LOG_PREFIX.sub("", output) + "\n" + error
    root = _root(error) or _root(text)
    if root is None:
        return error
    step = error.split(": ", 1)[0] if ": " in error.split("\n", 1)[0] else "engine"
    line = f"{step}: {root}"
    frame = _frame(text, path)
    if frame:
        line += f"\n  at {frame}"
    return line


def _root(text: str) -> str | None:
    found = DYNAMO.search(text)
    if found:
        name, args = found.groups()
        return f"{name}: {_message(name, args)}"
    raised = [m for m in EXCEPTION.finditer(text) if m.group(1).rsplit(".", 1)[-1] not in WRAPPERS]
    return f"{raised[0].group(1)}: {raised[0].group(2)}" if raised else None


def _message(name: str, args: str) -> str:
    """What str() of the exception gives: a KeyError shows its key's repr, others their message."""
    if name == "KeyError":
        return args
    try:
        value = ast.literal_eval(args)
    except (ValueError, SyntaxError):
        return args
    return value if isinstance(value, str) else args


def _frame(text: str, path: str | None) -> str | None:
    frames = [m for m in FRAME.finditer(text)]
    real = os.path.realpath(path) if path else None
    own = [m for m in frames if (real and os.path.realpath(m.group(1)) == real) or (not real and MODELS in m.group(1))]
    if not own:
        return None
    file, line, func, code = own[-1].groups()
    return f"{file}:{line} in {func}: {(code or '').strip()}"
