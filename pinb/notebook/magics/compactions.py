"""``%pi compactions``: what each compaction of a session kept of the span it replaced."""

from __future__ import annotations

from typing import Any

from .settings import MagicsBase, command_parser

__all__ = ["CompactionsCommands"]


class CompactionsCommands(MagicsBase):
    """Retention of compactions (:mod:`pinb.analysis.retention.report`)."""

    def _cmd_compactions(self, args: list[str]) -> Any:
        """``%pi compactions [PATH] [--id ID] [--rows N]``: a :class:`RetentionView` of every
        compaction of the current session (or of the file ``PATH``), or of one (``--id``)."""
        from ...analysis.retention.report import retention_report, session_retention
        from ...views.retention import RetentionView

        parser = command_parser("%pi compactions")
        parser.add_argument("path", nargs="?", help="a session file (default: the current one)")
        parser.add_argument("--id", help="one compaction entry (an id or a prefix of one)")
        parser.add_argument("--rows", type=int, default=200, help="facts shown per section")
        opts = parser.parse_args(args)
        session = self._open(opts.path) if opts.path else self.current_session()
        if opts.id:
            entry = self._entry_id(session, opts.id)
            return RetentionView(retention_report(session, entry), max_rows=opts.rows)
        return RetentionView(session_retention(session), max_rows=opts.rows)
