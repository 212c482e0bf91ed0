"""``session_mimebundle``: how a ``Session`` shows itself — a one-line text and an HTML summary."""

from __future__ import annotations

from typing import Any

from ..core import Session, estimate_context_tokens
from ..render.html import escape, mimebundle, table, wrap
from .tree import TreeView, legend_html

__all__ = ["session_html", "session_mimebundle"]


def session_html(session: Session, tree: TreeView | None = None) -> str:
    """Name, ids, file, counts, context size and the tree picture, all escaped."""
    tree = tree if tree is not None else TreeView(session)
    context = session.build_context()
    estimate = estimate_context_tokens(context.messages)
    problems = session.problems
    facts: list[tuple[str, Any]] = [
        ("id", session.id),
        ("cwd", session.cwd),
        ("file", str(session.path) if session.path else "(in memory)"),
        ("entries", f"{len(session.entries):,}"),
        ("branches", f"{tree.graph.branch_count:,}"),
        ("leaf", session.leaf_id),
        ("context", f"{len(context.messages):,} messages, ~{estimate.tokens:,} tokens"),
    ]
    if session.parent_session:
        facts.append(("parent session", session.parent_session))
    if problems:
        facts.append(("problems", f"{len(problems)} (see session.problems)"))
    title = escape(session.name or "Pi session")
    body = (
        f"<h3>{title}</h3>"
        + table(["", ""], facts, wrap_columns=(1,))
        + legend_html()
        + f'<div style="max-height:480px;overflow:auto">{tree.to_svg()}</div>'
    )
    return wrap(body, "pinb-session")


def session_mimebundle(
    session: Session, include: Any = None, exclude: Any = None
) -> dict[str, str]:
    """The display of a session: ``repr`` as text plus :func:`session_html`."""
    return mimebundle(repr(session), html=session_html(session), include=include, exclude=exclude)
