"""Package re-exports imported on first use (PEP 562's module `__getattr__`).

A package whose `__init__` re-exported every submodule's names made importing any one of its light
submodules (an enum of reasons, a constant) import all of its heavy siblings too, and every
command paid for that at start-up. A package using `lazy_exports` keeps its names and its
`from package import Name` spelling; a name's module is imported when the name is first read.
Type checkers read the package's `if TYPE_CHECKING:` imports instead, so names stay checked.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: each name of `exports` (module -> names) from its module."""
    module_of = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # read once: later reads skip __getattr__
        return value

    return __getattr__
