"""Every way a user reads a session file, as named operations for the fuzz tests.

Each operation takes a session file and does what one command, export or view does with it
(the CLI in-process through ``pinb.cli.main``, the exports, the core calls, every view's
display bundle, every picture format, the widget). :func:`run_all` runs them and returns
what went wrong: an exception, an "internal error" line, or a file that reading changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CLI_COMMANDS", "OPERATIONS", "Failure", "run_all"]

#: The CLI commands that read a file (``FILE`` stands for it).
CLI_COMMANDS: list[list[str]] = [
    ["tree", "FILE"],
    ["tree", "FILE", "--rows", "0"],
    ["context", "FILE"],
    ["context", "FILE", "--llm"],
    ["context", "FILE", "--json"],
    ["context", "FILE", "--llm", "--json"],
    ["tokens", "FILE"],
    ["tokens", "FILE", "--json"],
    ["compact", "FILE", "--plan"],
    ["compact", "FILE", "--plan", "--json"],
    ["export", "FILE", "--md", "-o", "-"],
    ["export", "FILE", "--html", "-o", "-"],
    ["export", "FILE", "--ipynb", "-o", "-"],
    ["export", "FILE", "--html", "--tree", "-o", "-"],
    ["export", "FILE", "--md", "--tree", "-o", "-"],
    ["search", "the", "FILE"],
    ["ls", "--all"],
]


@dataclass
class Failure:
    """One operation that failed on one file."""

    path: Path
    operation: str
    error: str
    where: str

    def __str__(self) -> str:
        return f"{self.path.name}: {self.operation}: {self.error} at {self.where}"


def _cli(argv: list[str]) -> Callable[[Path], None]:
    def run(path: Path) -> None:
        from pinb.cli import main

        out, err = io.StringIO(), io.StringIO()
        args = [str(path) if a == "FILE" else a for a in argv]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exc:
                code = exc.code  # argparse: never for these commands
        text = err.getvalue()
        if code == 3 or "internal error" in text or "Traceback" in text:
            raise AssertionError(f"exit {code}: {text.strip()[-400:]}")

    return run


def _open(path: Path) -> Any:
    from pinb.core import Session

    return Session.open(path, strict=False)


def _core(path: Path) -> None:
    from pinb.core import convert_to_llm, estimate_context_tokens

    session = _open(path)
    repr(session)
    for problem in session.problems:
        str(problem)
        repr(problem)
    context = session.build_context()
    context.to_wire()
    estimate_context_tokens(convert_to_llm(context.messages))
    session.tree()
    for entry in session.entries[:50]:
        repr(entry)
        if isinstance(entry.id, str):
            session.build_context(entry.id)


def _views(path: Path) -> None:
    from pinb.core.file.listing import read_session_info
    from pinb.views import (
        CompactionView,
        ContextBreakdown,
        ContextPathView,
        EntryView,
        SessionListView,
        TreeView,
        session_mimebundle,
    )

    session = _open(path)
    views: list[Any] = [ContextPathView(session), ContextBreakdown(session)]
    views += [CompactionView(e, session) for e in session.entries if e.type == "compaction"][:5]
    views += [EntryView(e, session) for e in session.entries[:40]]
    for view in views:
        view._repr_mimebundle_()
        repr(view)
    session_mimebundle(session)
    session._repr_mimebundle_()
    TreeView(session)._repr_mimebundle_()
    listing = [read_session_info(path)]  # the session list: name, first message, dates
    SessionListView(listing)._repr_mimebundle_()


def _pictures(path: Path) -> None:
    from pinb.render import build_graph, row_layout, tree_picture_svg, tree_text
    from pinb.render.tree.raster import tree_png_pillow

    session = _open(path)
    layout = row_layout(build_graph(session), collapse=False)
    tree_picture_svg(layout)
    tree_text(layout)
    tree_png_pillow(layout, scale=1.0)


def _matplotlib(path: Path) -> None:
    from matplotlib.figure import Figure

    from pinb.render import build_graph, draw_tree, row_layout

    layout = row_layout(build_graph(_open(path)), collapse=False)
    figure = Figure()
    draw_tree(layout, figure.add_subplot())
    figure.savefig(io.BytesIO(), format="png")


def _widget(path: Path) -> None:
    from pinb.views import SessionExplorer

    session = _open(path)
    explorer = SessionExplorer(session)
    try:
        explorer._repr_mimebundle_()
        for entry in session.entries[:10]:
            if isinstance(entry.id, str):
                explorer.select(entry.id)
        explorer.search("the")
        explorer.to_text()
    finally:
        explorer.close()


def _frames(path: Path) -> None:
    from pinb.analysis.frames import (
        compactions_frame,
        entries_frame,
        messages_frame,
        sessions_frame,
        tool_calls_frame,
    )

    for make in (entries_frame, messages_frame, tool_calls_frame, compactions_frame):
        make(path)
    sessions_frame([path])


#: name -> operation on one file.
OPERATIONS: dict[str, Callable[[Path], None]] = {
    **{"pinb " + " ".join(a for a in argv if a != "FILE"): _cli(argv) for argv in CLI_COMMANDS},
    "core": _core,
    "views": _views,
    "pictures": _pictures,
    "matplotlib": _matplotlib,
    "widget": _widget,
    "frames": _frames,
}


def _where(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/pinb/" in f.filename]
    if not frames:
        return "?"
    last = frames[-1]
    return f"{Path(last.filename).name}:{last.lineno} {last.name}"


def run_all(
    paths: list[Path], operations: dict[str, Callable[[Path], None]] | None = None
) -> list[Failure]:
    """Run every operation on every file; what failed, and files that reading changed."""
    failures: list[Failure] = []
    for path in paths:
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        listing = sorted(os.listdir(path.parent))
        for name, operation in (operations or OPERATIONS).items():
            try:
                operation(path)
            except Exception as exc:
                failures.append(
                    Failure(path, name, f"{type(exc).__name__}: {exc}"[:300], _where(exc))
                )
        if hashlib.sha256(path.read_bytes()).hexdigest() != before:
            failures.append(Failure(path, "read", "the file changed", "-"))
        if sorted(os.listdir(path.parent)) != listing:
            failures.append(Failure(path, "read", "files appeared or went beside it", "-"))
    return failures
