"""Export a session branch or its whole tree to a file: standalone HTML, Markdown, or a notebook.

The writers that render a session are :mod:`pinb.render.export`; this module chooses the
output file (in ``exports/``, a short name from the session, never over another) and writes
it in one step, so a failure leaves the old file whole and the session file itself is never
touched.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..core import Session
from ..core.context.build import UNSET
from ..core.file.atomic import replace_file
from ..core.file.paths import file_stem
from ..core.format.entries import MISSING
from ..core.js.jsontext import json_text
from ..errors import SessionFileError, UsageError
from ..render.export import export_html, export_ipynb, export_markdown
from ..render.export.shown import as_text
from ..render.markdown import clean

__all__ = [
    "default_export_path",
    "export_html",
    "export_ipynb",
    "export_markdown",
    "shown_path",
    "write_export",
]

_SUFFIXES = {"html": ".html", "md": ".md", "ipynb": ".ipynb"}


def write_export(
    session: Session | str | os.PathLike[str],
    fmt: str,
    out: str | os.PathLike[str] | None = None,
    *,
    leaf: Any = UNSET,
    whole_tree: bool = False,
    make_folder: bool = False,
) -> str:
    """Render ``session`` as ``"html"``, ``"md"`` or ``"ipynb"``; write it to ``out`` if given.

    Returns the rendered text. The session file itself is only read. ``make_folder``
    makes ``out``'s folder when missing (the ``exports`` folder of
    :func:`default_export_path`), only once the text is rendered, so a failed export
    leaves no empty folder behind.
    """
    if not isinstance(session, Session):
        session = Session.open(session)
        if session.loaded is not None and session.loaded.blank:
            # Pi would start a new session in it; exporting it would invent an id and a cwd.
            raise SessionFileError(
                "empty file: no session header, nothing to export", path=session.path
            )
    leaf = UNSET if leaf is None or leaf is MISSING else leaf
    if fmt == "html":
        text = export_html(session, leaf=leaf, whole_tree=whole_tree)
    elif fmt == "md":
        text = export_markdown(session, leaf=leaf, whole_tree=whole_tree)
    elif fmt == "ipynb":
        notebook = export_ipynb(session, leaf=leaf, whole_tree=whole_tree)
        text = clean(json_text(notebook, indent=1) + "\n")
    else:
        raise UsageError(f"unknown export format {fmt!r}; use html, md or ipynb")
    if out is not None:
        if session.path is not None and _same_file(session.path, out):
            raise UsageError(f"{out}: is the session being exported; choose another output file")
        if make_folder:
            _make_folder(Path(out).parent)
        elif not Path(out).parent.is_dir():
            raise UsageError(
                f"{out}: its folder {Path(out).parent} does not exist; make it, or choose "
                "another with -o"
            )
        # Never truncate the old file first: a failure leaves it as it was.
        replace_file(out, text.encode("utf-8"))
    return text


def default_export_path(
    session: Session, fmt: str, folder: str | os.PathLike[str] = "exports"
) -> Path:
    """A new file in ``folder`` with a short name from the session (only the name: pass
    ``make_folder=True`` to :func:`write_export` to make a missing folder).

    The name is the session's name (Pi's ``session_info``) as a slug, else its id's first
    8 characters: ``exports/fix-the-login-bug.html``, ``exports/01a2503c.html``. Exports
    gather in a folder of their own rather than among the notebooks, and an existing file
    is never overwritten: ``name-2.html``, ``name-3.html``… instead.

    Parameters
    ----------
    session:
        The session exported.
    fmt:
        ``"html"``, ``"md"`` or ``"ipynb"``.
    folder:
        Where the file goes; the default is ``exports`` in the current folder.
    """
    if fmt not in _SUFFIXES:
        raise UsageError(f"unknown export format {fmt!r}; use html, md or ipynb")
    base = file_stem(as_text(session.name), 60) if session.name else ""
    if not base:
        # The file's stem is a long timestamp; the id's first 8 characters tell sessions apart.
        base = file_stem(session.id[:8], 8) or "session"
    folder = Path(folder)
    target = folder / f"{base}{_SUFFIXES[fmt]}"
    number = 1
    while target.exists():
        number += 1
        target = folder / f"{base}-{number}{_SUFFIXES[fmt]}"
    return target


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(
            f"{folder}: cannot make the export folder ({error.strerror or error}); "
            "choose another with -o"
        ) from error


def shown_path(path: str | os.PathLike[str], cwd: str | os.PathLike[str] = ".") -> str:
    """``path`` as a message names it: relative to ``cwd`` when inside it, else absolute."""
    full, base = Path(path).resolve(), Path(cwd).resolve()
    return str(full.relative_to(base)) if full.is_relative_to(base) else str(full)


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
