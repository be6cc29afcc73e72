"""Temp git repositories for the git and sweep tests: the demo example tree committed, git isolated."""

from __future__ import annotations

import os
from pathlib import Path

import git as gitpython

from contractfix.demo import copy_example
from contractfix.gitops import Identity, init_repo

OWNER = Identity("Repo Owner", "owner@example.invalid")
HUMAN = Identity("Human Reviewer", "human@example.invalid")
TINY_LLAMA = "vllm/model_executor/models/tiny_llama.py"
STEP_LITE = "vllm/model_executor/models/step_lite.py"
GEMMA_LITE = "vllm/model_executor/models/gemma_lite.py"
ENTRY_DEFAULT = "intermediate_tensors: IntermediateTensors | None = None,"


def example_repo(path: Path) -> gitpython.Repo:
    """The demo example tree (two violations: StepLiteModel PP001, GemmaLiteModel PP002), one commit."""
    copy_example(path)
    return init_repo(path, OWNER, "Example vLLM-style models")


def commit_change(repo: gitpython.Repo, rel: str, old: str, new: str, who: Identity = HUMAN) -> str:
    """Replace `old` by `new` (once) in file `rel`, commit on the current branch; the new sha."""
    path = Path(repo.working_tree_dir) / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    repo.git.add(rel)
    repo.git.commit("-m", f"edit {rel}", env=who.env())
    return repo.head.commit.hexsha


def add_violation(repo: gitpython.Repo) -> str:
    """Commit a new PP002 violation: TinyLlamaForCausalLM.forward loses its `= None`."""
    return commit_change(repo, TINY_LLAMA, ENTRY_DEFAULT, "intermediate_tensors: IntermediateTensors | None,")


def add_unfixable(repo: gitpython.Repo) -> str:
    """Commit a key read on non-first ranks that nobody sends (PP001, no automatic fix)."""
    read = '            residual = intermediate_tensors["residual"]\n'
    return commit_change(repo, TINY_LLAMA, read, read + '            scale = intermediate_tensors["scale"]\n')


def show(repo: gitpython.Repo, ref: str, rel: str) -> str:
    return repo.git.show(f"{ref}:{rel}", strip_newline_in_stdout=False)


def checkout_state(repo: gitpython.Repo) -> dict[str, bytes | str]:
    """Everything of the user's checkout: every file outside .git, the index, HEAD and its branch tip."""
    root = Path(repo.working_tree_dir)
    state: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            path = Path(folder) / name
            state[path.relative_to(root).as_posix()] = path.read_bytes()
    state[".git/index"] = (root / ".git/index").read_bytes()
    state[".git/HEAD"] = (root / ".git/HEAD").read_bytes()
    state["HEAD"] = repo.git.rev_parse("HEAD")
    state["status"] = repo.git.status("--porcelain", "--untracked-files=all", env={"GIT_OPTIONAL_LOCKS": "0"})
    return state
