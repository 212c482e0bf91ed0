"""``%pi compactions`` and ``%pi uncompact``: what each compaction kept, and giving back what it lost."""

from __future__ import annotations

from typing import Any

from .settings import MagicsBase, command_parser

__all__ = ["CompactionsCommands"]


class CompactionsCommands(MagicsBase):
    """Retention of compactions (:mod:`pinb.analysis.retention.report`)."""

    def _cmd_compactions(self, args: list[str]) -> Any:
        """``%pi compactions [PATH] [--id ID] [--rows N]``: a :class:`RetentionView` of every
        compaction of the current session (or of the file ``PATH``), or of one (``--id``),
        with what pinb kept in each summary and gave back after it."""
        from ...analysis.retention.report import retention_report, session_retention
        from ...views.compaction.retention import RetentionView

        parser = command_parser("%pi compactions")
        parser.add_argument("path", nargs="?", help="a session file (default: the current one)")
        parser.add_argument("--id", help="one compaction entry (an id or a prefix of one)")
        parser.add_argument("--rows", type=int, default=200, help="facts shown per section")
        opts = parser.parse_args(args)
        session = self._open(opts.path) if opts.path else self.current_session()
        if opts.id:
            entry = self._entry_id(session, opts.id)
            report = retention_report(session, entry)
            return RetentionView(report, max_rows=opts.rows, session=session)
        return RetentionView(session_retention(session), max_rows=opts.rows, session=session)

    def _cmd_uncompact(self, args: list[str]) -> Any:
        """``%pi uncompact [--id ID] [--kinds KINDS] [--budget TOKENS] [--dry-run] [--json]``:
        give back what a compaction of the current session lost, as one cited message the
        next turn reads (either engine: the Pi engine reads it from the file)."""
        import json

        from ...core.compaction.lost import DEFAULT_GIVE_BACK_KINDS, parse_kinds
        from ...core.compaction.uncompact import UNCOMPACT_BUDGET, uncompact
        from ...errors import UsageError

        parser = command_parser("%pi uncompact")
        parser.add_argument("--id", help="a compaction on the current path (default: the latest)")
        parser.add_argument(
            "--kinds", help="comma-separated kinds (default: files,commands,errors,instructions)"
        )
        parser.add_argument("--budget", type=int, default=UNCOMPACT_BUDGET)
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--json", action="store_true")
        opts = parser.parse_args(args)
        try:
            kinds = parse_kinds(opts.kinds, DEFAULT_GIVE_BACK_KINDS)
        except ValueError as exc:
            raise UsageError(f"%pi uncompact --kinds: {exc}") from exc
        session = self.current_session()
        compaction = self._entry_id(session, opts.id) if opts.id else None
        given = uncompact(
            session,
            compaction,
            kinds=kinds,
            budget=opts.budget,
            dry_run=opts.dry_run,
            writer="%pi uncompact",
        )
        if opts.json:
            print(json.dumps(given.to_dict(), ensure_ascii=False, indent=1))
            return None
        return given
