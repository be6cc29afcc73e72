"""Make a changed model file the module that runs: import it under the installed module's name.

A meta-path finder placed first on `sys.meta_path` answers for the overridden dotted names with
the given files; everything else still comes from the installed vLLM. Relative imports inside the
file resolve against the installed package, as they would in the checkout.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

ENV = "CONTRACTFIX_SMOKE_OVERRIDES"
"""JSON {module: file} read by the sitecustomize shim, for processes vLLM spawns itself."""


class OverrideFinder(importlib.abc.MetaPathFinder):
    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)

    def find_spec(self, fullname, path=None, target=None):
        file = self.files.get(fullname)
        if file is None:
            return None
        search = [os.path.dirname(file)] if os.path.basename(file) == "__init__.py" else None
        return importlib.util.spec_from_file_location(fullname, file, submodule_search_locations=search)


def install(files: dict[str, str]) -> OverrideFinder:
    """Route imports of `files`' modules to the files; call before anything imports them."""
    finder = OverrideFinder(files)
    sys.meta_path.insert(0, finder)
    return finder


def uninstall(finder: OverrideFinder) -> None:
    """Undo `install` and forget the modules it loaded, so the next import starts afresh."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for name in list(sys.modules):
        if any(name == m or name.startswith(m + ".") for m in finder.files):
            del sys.modules[name]
