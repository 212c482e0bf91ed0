"""The display protocol: data never imports what displays it.

pinb's results (a :class:`~pinb.core.Session`, a compaction report, a branch comparison,
a ledger, search hits, …) carry data only. How each is shown lives in :mod:`pinb.views`,
which registers one renderer per type here, by the type's dotted name. The first time a
value is displayed, this module loads :mod:`pinb.views` by name (the pattern of IPython's
``for_type_by_name`` and of rich's ``__rich_console__``), so the data layers below never
import the views, and ``import pinb.core`` stays light.

A renderer gives some of ``text`` (plain text), ``html`` and ``bundle`` (a whole
``_repr_mimebundle_`` dict, for views that add SVG or PNG); :class:`Displayable` puts
``_repr_mimebundle_``, ``to_text`` and ``to_html`` on a class from them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "VIEWS_MODULE",
    "Displayable",
    "Renderer",
    "mimebundle_of",
    "register",
    "renderer_for",
    "to_html",
    "to_text",
]

#: The package that fills the registry; loaded by name on the first display.
VIEWS_MODULE = "pinb.views"


@dataclass(frozen=True)
class Renderer:
    """How one type is shown: any of plain text, HTML, or a whole mimebundle."""

    text: Callable[[Any], str] | None = None
    html: Callable[[Any], str] | None = None
    bundle: Callable[[Any, Any, Any], dict[str, Any]] | None = None


_RENDERERS: dict[str, Renderer] = {}
_loaded = False


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register(
    type_name: str,
    *,
    text: Callable[[Any], str] | None = None,
    html: Callable[[Any], str] | None = None,
    bundle: Callable[[Any, Any, Any], dict[str, Any]] | None = None,
) -> None:
    """Register how values of the type named ``type_name`` (``"module.QualName"``) are shown.

    Registering a name again replaces its renderer (the last registration wins).
    """
    if text is None and html is None and bundle is None:
        raise ValueError(f"register({type_name!r}): give text, html or bundle")
    _RENDERERS[type_name] = Renderer(text=text, html=html, bundle=bundle)


def renderer_for(value: Any) -> Renderer:
    """The renderer of ``value``'s type or its nearest base; loads the views the first time.

    Raises
    ------
    LookupError
        No renderer is registered for the type or any of its bases.
    """
    global _loaded
    if not _loaded:
        importlib.import_module(VIEWS_MODULE)  # registers every view (pinb.views.registry)
        _loaded = True
    for cls in type(value).__mro__:
        renderer = _RENDERERS.get(_name(cls))
        if renderer is not None:
            return renderer
    raise LookupError(f"no renderer registered for {_name(type(value))}")


def to_text(value: Any) -> str:
    """``value`` as plain text (its renderer's text, else the bundle's ``text/plain``)."""
    renderer = renderer_for(value)
    if renderer.text is not None:
        return renderer.text(value)
    if renderer.bundle is not None:
        return str(renderer.bundle(value, None, None).get("text/plain", ""))
    return repr(value)


def to_html(value: Any) -> str:
    """``value`` as HTML (escaped, sanitizer-safe: the views' promise)."""
    renderer = renderer_for(value)
    if renderer.html is not None:
        return renderer.html(value)
    if renderer.bundle is not None:
        return str(renderer.bundle(value, ("text/html",), None).get("text/html", ""))
    raise LookupError(f"no HTML registered for {_name(type(value))}")


def mimebundle_of(value: Any, include: Any = None, exclude: Any = None) -> dict[str, Any]:
    """The ``_repr_mimebundle_`` dict of ``value``, honouring IPython's include/exclude."""
    renderer = renderer_for(value)
    if renderer.bundle is not None:
        return renderer.bundle(value, include, exclude)
    bundle: dict[str, Any] = {
        "text/plain": renderer.text(value) if renderer.text is not None else repr(value)
    }
    if renderer.html is not None and _wanted("text/html", include, exclude):
        bundle["text/html"] = renderer.html(value)
    return {k: v for k, v in bundle.items() if _wanted(k, include, exclude)}


def _wanted(mime: str, include: Any, exclude: Any) -> bool:
    return (not include or mime in include) and not (exclude and mime in exclude)


class Displayable:
    """Mixin: ``_repr_mimebundle_``, ``to_text`` and ``to_html`` from the registry."""

    __slots__ = ()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return mimebundle_of(self, include, exclude)

    def to_text(self) -> str:
        """Plain text, as the registered view draws it."""
        return to_text(self)

    def to_html(self) -> str:
        """Escaped HTML, as the registered view draws it."""
        return to_html(self)
