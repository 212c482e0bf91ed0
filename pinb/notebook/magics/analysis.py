"""``%pi totals``, ``compare``, ``ledger``, ``whatif`` and ``export``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...core import ExtractiveSummarizer, Session
from ...errors import UsageError
from .settings import MagicsBase, command_parser

__all__ = ["AnalysisCommands"]


class AnalysisCommands(MagicsBase):
    """Commands over many entries or sessions (pinb.analysis)."""

    def _cmd_totals(self, args: list[str]) -> Any:
        from ...analysis.totals import usage_totals
        from ...views.totals import UsageTotalsView

        parser = command_parser("%pi totals")
        parser.add_argument("by", nargs="?", default="session")
        parser.add_argument("source", nargs="?", help="a folder, file or glob; default all")
        parser.add_argument("--no-dedupe", action="store_true")
        opts = parser.parse_args(args)
        totals = usage_totals(opts.source, opts.by, dedupe=not opts.no_dedupe, progress=False)
        from ...core.paths import sessions_root

        source = Path(opts.source).expanduser() if opts.source else None
        root = source if source is not None and source.is_dir() else sessions_root()
        return UsageTotalsView(totals, root=root)

    def _cmd_compare(self, args: list[str]) -> Any:
        from ...analysis.compare import compare_branches

        parser = command_parser("%pi compare")
        parser.add_argument("a")
        parser.add_argument("b", nargs="?")
        parser.add_argument("--other", help="the session file B belongs to (a fork)")
        opts = parser.parse_args(args)
        session = self.current_session()
        other = Session.open(opts.other) if opts.other else None
        a = self._entry_id(session, opts.a)
        b = self._entry_id(other or session, opts.b) if opts.b else None
        return compare_branches(session, a, b, other=other)

    def _cmd_ledger(self, args: list[str]) -> Any:
        from ...analysis.ledger import compaction_ledger

        return compaction_ledger(" ".join(args) if args else self.current_session())

    def _cmd_whatif(self, args: list[str]) -> Any:
        from ...analysis.ledger import what_if

        parser = command_parser("%pi whatif")
        parser.add_argument("--keep", type=int, nargs="+", default=[], metavar="N")
        parser.add_argument("--reserve", type=int, nargs="+", default=[], metavar="N")
        parser.add_argument("--summarize", action="store_true", help="offline summaries too")
        opts = parser.parse_args(args)
        session = self.current_session()
        window, _ = self._window(session)
        return what_if(
            session,
            keep_recent_tokens=opts.keep,
            reserve_tokens=opts.reserve,
            summarizer=ExtractiveSummarizer() if opts.summarize else None,
            context_window=window,
        )

    def _cmd_export(self, args: list[str]) -> None:
        from ...analysis.export import default_export_path, write_export

        if len(args) not in (1, 2) or args[0] not in ("html", "md", "ipynb"):
            raise UsageError("usage: %pi export html|md|ipynb [PATH]")
        session = self.current_session()
        target = (
            Path(args[1]).expanduser()
            if len(args) == 2
            else default_export_path(session, args[0], self._cwd())
        )
        write_export(session, args[0], target)
        print(f"wrote {target}")
