"""chars/4 against reported usage: how far pinb's estimate is from what replies were sent.

Each reply with usage is a point: the prompt it reports (:func:`prompt_tokens_of_usage`)
against the chars/4 estimate of the context at its parent, the context it was sent,
accounted as every view does it (``estimated_tokens`` of
:func:`~pinb.core.context.accounting.context_usage`). See :class:`CalibrationRow` for what is
honest to conclude from the points.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.context.accounting import context_usage
from ...core.context.build import SessionContext, extend_context
from ...core.context.tokens import estimate_tokens
from ...core.format.entries import Entry
from ...core.format.tree import TreeNode
from ...core.session import Session
from ...display import Displayable
from ...render.tree.graph import node_key
from ..sources import SessionSources, Skipped, iter_sessions

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Calibration",
    "CalibrationPoint",
    "CalibrationRow",
    "calibration_row",
    "parent_estimates",
    "prompt_tokens_of_usage",
    "reported_prompt",
    "usage_calibration",
]


def prompt_tokens_of_usage(usage: Any) -> int:
    """The prompt a reply was sent, as reported: ``input + cacheRead + cacheWrite``.

    Pi's providers report fresh input, cache reads and cache writes apart (the OpenAI
    adapter subtracts cached tokens from ``input``), so the sum is the whole prompt.
    Missing or non-numeric parts count 0.
    """
    if not isinstance(usage, dict):
        return 0
    total = 0
    for key in ("input", "cacheRead", "cacheWrite"):
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            total += int(value)
    return total


def reported_prompt(entry: Entry) -> int:
    """The prompt tokens of an assistant reply whose usage counts (0 when it has none).

    Failed and aborted replies are left out, as Pi leaves them out of its estimates.
    """
    message = entry.message
    if message is None or message.get("role") != "assistant":
        return 0
    if message.get("stopReason") in ("error", "aborted"):
        return 0
    return prompt_tokens_of_usage(message.get("usage"))


def _plain_total(messages: Sequence[Any], pi: Any) -> int | None:
    """chars/4 of messages with no system message among them, else ``None``.

    Without system messages ``context_usage(...).estimated_tokens`` is this sum; with
    them it counts the replayed prompt once, so those contexts are accounted in full.
    """
    total = 0
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "system":
            return None
        total += estimate_tokens(message, pi=pi)
    return total


def parent_estimates(session: Session, replies: Sequence[Entry]) -> dict[int, int]:
    """``id(reply)`` → ``context_usage(build_context(parent)).estimated_tokens``.

    One walk down the tree extends each context by its child (as an append does) instead
    of building every reply's context from the root, so a long session costs one pass.
    Files with repeated ids, loops, or a parent the tree and the walk read differently
    take the plain route for the replies the walk did not reach.
    """
    wanted = {id(p) for p in (session.get(r.parent_id) for r in replies) if p is not None}
    at: dict[int, int] = {}
    pi = session.pi
    if len(session.index.by_id) == len(session.entries):
        stack: list[tuple[TreeNode, Entry | None, SessionContext | None, int | None]]
        stack = [(root, None, None, None) for root in reversed(session.tree())]
        seen: set[int] = set()
        while stack:
            node, parent, context, total = stack.pop()
            entry = node.entry
            if id(entry) in seen:
                continue
            seen.add(id(entry))
            grown = False
            if (
                context is not None
                and parent is not None
                and session.get(entry.parent_id) is parent
            ):
                before = len(context.messages)
                grown = extend_context(context, entry)
                if grown and total is not None:
                    added = _plain_total(context.messages[before:], pi)
                    total = None if added is None else total + added
            if context is None or not grown:
                context = session.build_context(entry.id)
                total = _plain_total(context.messages, pi)
            if id(entry) in wanted:
                at[id(entry)] = (
                    total if total is not None else context_usage(context).estimated_tokens
                )
            children = node.children
            for i in range(len(children) - 1, -1, -1):
                own = context if i == 0 else context.copy()
                stack.append((children[i], entry, own, total))
    result: dict[int, int] = {}
    for reply in replies:
        parent = session.get(reply.parent_id)
        if parent is None:
            continue
        found = at.get(id(parent))
        if found is None:
            found = context_usage(session.build_context(parent.id)).estimated_tokens
        result[id(reply)] = found
    return result


@dataclass(frozen=True)
class CalibrationPoint:
    """One reply: the prompt it reported and chars/4 of the context it was sent."""

    entry_id: str
    reported: int
    estimated: int


@dataclass(frozen=True)
class CalibrationRow:
    """chars/4 against reported usage for one session.

    The reported prompt also holds what the session does not store (the system prompt and
    tool definitions, unless Pi 1.x's system messages are in it), so it is the sum of a
    fixed part and the context: ``ratio`` (reported / estimated) mixes the two, ``offset``
    (reported - estimated) is that fixed part only if chars/4 were exact. A least-squares
    line ``reported = slope * estimated + intercept`` separates them: ``slope`` is real
    tokens per chars/4 token (above 1 when chars/4 underestimates, as with code),
    ``intercept`` the fixed part. The fit needs two distinct estimates.
    """

    session_id: str
    session_path: str | None
    points: tuple[CalibrationPoint, ...]
    replies_without_usage: int

    @property
    def n(self) -> int:
        return len(self.points)

    @property
    def median_ratio(self) -> float | None:
        ratios = [p.reported / p.estimated for p in self.points if p.estimated > 0]
        return statistics.median(ratios) if ratios else None

    @property
    def mean_offset(self) -> float | None:
        if not self.points:
            return None
        return statistics.fmean(p.reported - p.estimated for p in self.points)

    def fit(self) -> tuple[float, float] | None:
        """``(slope, intercept)`` of the least-squares line, or ``None`` without two estimates."""
        if len({p.estimated for p in self.points}) < 2:
            return None
        line = statistics.linear_regression(
            [p.estimated for p in self.points], [p.reported for p in self.points]
        )
        return line.slope, line.intercept

    def to_dict(self) -> dict[str, Any]:
        fit = self.fit()
        return {
            "session_id": self.session_id,
            "session_path": self.session_path,
            "n": self.n,
            "replies_without_usage": self.replies_without_usage,
            "median_ratio": self.median_ratio,
            "mean_offset": self.mean_offset,
            "slope": fit[0] if fit else None,
            "intercept": fit[1] if fit else None,
        }


def calibration_row(session: Session) -> CalibrationRow:
    """:class:`CalibrationRow` of one session: every reply with usage, every branch."""
    replies = [e for e in session.entries if e.role == "assistant"]
    counted = [e for e in replies if reported_prompt(e) > 0]
    estimates = parent_estimates(session, counted)
    points = [
        CalibrationPoint(node_key(e.id), reported_prompt(e), estimates[id(e)])
        for e in counted
        if id(e) in estimates
    ]
    without = len(replies) - len(points)
    return CalibrationRow(
        session_id=session.id,
        session_path=str(session.path) if session.path is not None else None,
        points=tuple(points),
        replies_without_usage=without,
    )


@dataclass
class Calibration(Displayable):
    """:class:`CalibrationRow` per session, with a view and frames."""

    rows: list[CalibrationRow] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": [r.to_dict() for r in self.rows],
            "skipped": [asdict(s) for s in self.skipped],
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per session: ``n``, ``median_ratio``, ``mean_offset``, ``slope``, ``intercept``."""
        import pandas as pd

        return pd.DataFrame([r.to_dict() for r in self.rows])

    def points_frame(self) -> pd.DataFrame:
        """One row per reply: ``session_id``, ``entry_id``, ``reported``, ``estimated``."""
        import pandas as pd

        rows = [{"session_id": r.session_id, **asdict(p)} for r in self.rows for p in r.points]
        return pd.DataFrame(rows, columns=["session_id", "entry_id", "reported", "estimated"])

    def __repr__(self) -> str:
        return f"<Calibration {len(self.rows)} sessions, {sum(r.n for r in self.rows)} replies>"


def usage_calibration(source: SessionSources) -> Calibration:
    """How chars/4 compares with reported usage, per session (see :class:`CalibrationRow`).

    Each reply with usage (failed and aborted replies aside) is a point: its reported
    prompt (:func:`prompt_tokens_of_usage`) against the chars/4 estimate of the context at
    its parent, the context it was sent (:func:`~pinb.core.context.accounting.context_usage`).
    """
    calibration = Calibration()
    for session in iter_sessions(source, calibration.skipped):
        calibration.rows.append(calibration_row(session))
    return calibration
