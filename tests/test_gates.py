"""The lint and type gates of .ci/run use tools that the README's test set-up installs (the `test`
extra): CI runs on a machine where a tool installed by hand would hide a missing install step."""

from __future__ import annotations

import re
import sys

from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

GATES = ("ruff", "mypy")


def test_ci_runs_the_gates_with_tools_the_test_extra_installs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    run = set(re.findall(r"^python3 -m (\S+)", ci, re.MULTILINE))
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    installed = {re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0].lower() for requirement in extra}
    for tool in GATES:
        assert tool in run, f".ci/run does not run {tool}"
        assert tool in installed, f"the test extra does not install {tool}"
