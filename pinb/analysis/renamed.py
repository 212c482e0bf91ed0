"""Old public names of the analysis modules, still importable with a ``DeprecationWarning``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["renamed"]


def renamed(module: str, namespace: dict[str, Any], old: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that answers each old name in ``old`` with its new value
    from ``namespace`` (the module's ``globals()``), warning the caller once per use."""

    def __getattr__(name: str) -> Any:
        new = old.get(name)
        if new is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} is now {new}; import {new} instead", DeprecationWarning, stacklevel=2
        )
        return namespace[new]

    return __getattr__
