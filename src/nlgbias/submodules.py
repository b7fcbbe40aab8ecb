"""Submodules on first use: ``import nlgbias`` then ``nlgbias.scorers.regard.RegardScorer`` works.

Each package sets ``__getattr__ = lazy_submodules(__name__)``, so a documented dotted path resolves
after a plain ``import nlgbias`` without importing every module (and torch) up front.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Callable


def submodule(package: str, name: str) -> ModuleType:
    """The submodule ``package.name``, imported now; ``AttributeError`` if there is none.

    >>> submodule("nlgbias", "keys").__name__
    'nlgbias.keys'
    """
    if not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}") is not None:
        return importlib.import_module(f"{package}.{name}")
    raise AttributeError(f"module {package!r} has no attribute {name!r}")


def lazy_submodules(package: str) -> Callable[[str], ModuleType]:
    """A module ``__getattr__`` for ``package``: an unknown attribute is looked up as a submodule."""

    def __getattr__(name: str) -> ModuleType:
        return submodule(package, name)

    return __getattr__


__all__ = ["lazy_submodules", "submodule"]
