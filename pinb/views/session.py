"""``session_mimebundle``: how a ``Session`` shows itself — a one-line text and an HTML summary."""

from __future__ import annotations

from typing import Any

from ..core import Session
from ..render.html import mimebundle, muted, table, title, wrap
from ..render.tree.graph import plural
from .accounting import account, usage_html
from .tree import TreeView, tree_table_html

__all__ = ["session_html", "session_mimebundle"]

#: Rows of the tree table in a session's own display (``TreeView`` draws the picture).
SESSION_TREE_ROWS = 40


def session_html(session: Session, tree: TreeView | None = None) -> str:
    """Name, ids, file, counts, the context's token account and the tree, all escaped.

    Sanitizer-safe markup only (the tree is a table here; ``TreeView(session)`` shows the
    picture).
    """
    tree = tree if tree is not None else TreeView(session, max_rows=SESSION_TREE_ROWS, png=False)
    context = session.build_context()
    usage = account(context, session=session)
    problems = session.problems
    facts: list[tuple[str, Any]] = [
        ("id", session.id),
        ("cwd", session.cwd),
        ("file", str(session.path) if session.path else "(in memory)"),
        ("entries", f"{len(session.entries):,}"),
        ("tree", tree.summary()),
        (
            "leaf",
            session.leaf_id if session.leaf_id is not None else "none (before the first entry)",
        ),
        ("context", f"{plural(usage.messages, 'message')}"),
    ]
    if session.parent_session:
        facts.append(("parent session", session.parent_session))
    if session.archived:
        facts.append(
            (
                "archived",
                f"{plural(len(session.archived), 'branch', 'branches')} (session.archived)",
            )
        )
    if problems:
        facts.append(("problems", f"{len(problems)} (see session.problems)"))
    body = (
        title(session.name or "Pi session")
        + table(["", ""], facts, wrap_columns=(1,))
        + usage_html(usage)
    )
    if tree.layout.rows:
        body += tree_table_html(tree.layout, tree.cells)
    else:
        body += muted("No entries yet: the tree grows with the first message.")
    return wrap(body, "pinb-session")


def session_mimebundle(
    session: Session, include: Any = None, exclude: Any = None
) -> dict[str, str]:
    """The display of a session: ``repr`` as text plus :func:`session_html`."""
    return mimebundle(repr(session), html=session_html(session), include=include, exclude=exclude)
