"""``ContextBreakdown``: the context's estimated tokens by role and by tool, as bars and tables."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..core import Session, SessionContext, estimate_tokens
from ..core.context.accounting import ContextUsage, estimated_by_role
from ..core.context.build import UNSET
from ..core.js.jsontext import value_text
from ..render.html import div, escape, gauge, heading, mimebundle, muted, style, table, title, wrap
from ..render.tree.graph import kind_name, plural, tool_tokens

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["ContextBreakdown", "RoleTokens", "ToolTokens"]


@dataclass(frozen=True)
class RoleTokens:
    """Messages and estimated tokens of one role."""

    role: str
    messages: int
    tokens: int


@dataclass(frozen=True)
class ToolTokens:
    """Calls and results of one tool and the tokens each side costs."""

    tool: str
    calls: int
    call_tokens: int
    results: int
    result_tokens: int

    @property
    def tokens(self) -> int:
        return self.call_tokens + self.result_tokens


class ContextBreakdown:
    """Where the context's tokens go: by message role and by tool (calls plus results).

    Parameters
    ----------
    source:
        A session (its context at ``leaf_id``), a :class:`~pinb.core.SessionContext`, or a
        list of agent messages.
    leaf_id:
        For a session: the leaf to look from (default: the session's).

    Examples
    --------
    >>> b = ContextBreakdown([{"role": "user", "content": "abcdefgh", "timestamp": 1}])
    >>> b.by_role[0]
    RoleTokens(role='user', messages=1, tokens=2)
    """

    def __init__(
        self,
        source: Session | SessionContext | Sequence[Any],
        leaf_id: Any = UNSET,
        *,
        usage: ContextUsage | None = None,
    ):
        #: The context's size by Pi's measure, shown above the breakdown when given (the
        #: same account as the cell footer and ``%pi context``).
        self.usage = usage
        context: SessionContext | None = None
        if isinstance(source, Session):
            context = source.build_context(leaf_id)
        elif isinstance(source, SessionContext):
            context = source
        messages: Sequence[Any] = (
            context.messages if context is not None else list(cast("Sequence[Any]", source))
        )
        pi = context.pi if context is not None else None
        role_messages: Counter[str] = Counter()
        role_tokens: Counter[str] = Counter()
        calls: Counter[str] = Counter()
        call_tokens: Counter[str] = Counter()
        results: Counter[str] = Counter()
        result_tokens: Counter[str] = Counter()
        for message in messages:
            if not isinstance(message, dict):
                continue
            role = value_text(message.get("role", "?"))
            role_messages[role] += 1
            role_tokens[role] += estimate_tokens(message, pi=pi)
            for tool, side, tokens in tool_tokens(message):
                if side == "call":
                    calls[tool] += 1
                    call_tokens[tool] += tokens
                else:
                    results[tool] += 1
                    result_tokens[tool] += tokens
        if context is not None:
            # The core's account: Pi 1.x counts the system prompt once, replayed.
            role_tokens = Counter(estimated_by_role(context))
        self.by_role = sorted(
            (RoleTokens(r, role_messages[r], role_tokens[r]) for r in role_messages),
            key=lambda row: (-row.tokens, row.role),
        )
        tools = set(calls) | set(results)
        self.by_tool = sorted(
            (ToolTokens(t, calls[t], call_tokens[t], results[t], result_tokens[t]) for t in tools),
            key=lambda row: (-row.tokens, row.tool),
        )
        self.total = sum(row.tokens for row in self.by_role)
        self.message_count = sum(row.messages for row in self.by_role)

    def to_text(self) -> str:
        top = ", ".join(f"{row.role} {row.tokens:,}" for row in self.by_role[:4])
        text = (
            f"<ContextBreakdown {self.total:,} tokens (chars/4 estimate) in "
            f"{plural(self.message_count, 'message')}: {top}>"
        )
        if self.usage is not None:
            text = f"context: {self.usage.describe()}\n{text}"
        return text

    __repr__ = to_text

    def to_html(self) -> str:
        def share(tokens: int) -> str:
            return f"{tokens / self.total:.1%}" if self.total else "—"

        def bar(tokens: int) -> str:
            value = tokens / self.total if self.total else 0.0
            return f"<span{style('gauge')}>{gauge(value, 20)}</span>"

        role_rows = [
            (kind_name(r.role), r.messages, r.tokens, share(r.tokens), bar(r.tokens))
            for r in self.by_role
        ]
        tool_rows = [
            (t.tool, t.calls, t.call_tokens, t.results, t.result_tokens, t.tokens, share(t.tokens))
            for t in self.by_tool
        ]
        parts = [
            title(
                f"Context tokens · {self.total:,} (chars/4 estimate) in "
                f"{plural(self.message_count, 'message')}"
            ),
            *([div(escape(f"context: {self.usage.describe()}"))] if self.usage else []),
            heading("By role"),
            table(
                ["role", "messages", "tokens (chars/4)", "share", ""],
                role_rows,
                numeric=(1, 2, 3),
                raw_columns=(4,),
            ),
        ]
        if self.by_tool:
            parts += [
                heading("By tool (calls + results)"),
                table(
                    ["tool", "calls", "call tokens", "results", "result tokens", "total", "share"],
                    tool_rows,
                    numeric=(1, 2, 3, 4, 5, 6),
                ),
            ]
        else:
            parts.append(muted("no tool calls in this context"))
        return wrap("".join(parts), "pinb-breakdown")

    def figure(self, ax: Axes | None = None, *, by: str = "role") -> Figure:
        """Bar chart by ``"role"`` or ``"tool"`` as a matplotlib ``Figure``."""
        from ..render.figure import draw_token_bars

        if by == "tool":
            rows = [(t.tool, t.tokens) for t in self.by_tool]
            return draw_token_bars(rows, ax, title="tokens by tool", colors={})
        return draw_token_bars(
            [(r.role, r.tokens) for r in self.by_role], ax, title="tokens by role"
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return mimebundle(self.to_text(), html=self.to_html(), include=include, exclude=exclude)
