"""``%pi totals``, ``compare``, ``ledger``, ``whatif`` and ``export``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
        from ...core.file.paths import sessions_root

        source = Path(opts.source).expanduser() if opts.source else None
        root = source if source is not None and source.is_dir() else sessions_root()
        return UsageTotalsView(totals, root=root)

    def _cmd_compare(self, args: list[str]) -> Any:
        from ...analysis.compare import compare_branches
        from ...core import Session

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
        from ...analysis.compaction.ledger import compaction_ledger

        return compaction_ledger(" ".join(args) if args else self.current_session())

    def _cmd_whatif(self, args: list[str]) -> Any:
        """The cut at the leaf under other settings; the first column is what ``%pi
        compact`` will do (the same plan: settings, window, fitting and summarizer kind).
        Each column's offline summary is scored (what it kept of the span), beside
        observation masking and, with ``--model``, the configured model's summary (Pi's
        prompt) at the current cut: a request, so only when asked."""
        from ...analysis.compaction.ledger import what_if
        from ...core import ExtractiveSummarizer
        from ...errors import PinbError

        parser = command_parser("%pi whatif")
        parser.add_argument("--keep", type=int, nargs="+", default=[], metavar="N")
        parser.add_argument("--reserve", type=int, nargs="+", default=[], metavar="N")
        parser.add_argument("--summarize", action="store_true", help="offline summaries (default)")
        parser.add_argument(
            "--no-score", action="store_true", help="tokens only: no summary, nothing scored"
        )
        parser.add_argument(
            "--model",
            action="store_true",
            help="score the configured model's summary too (Pi's prompt; one request)",
        )
        parser.add_argument("--offline", action="store_true", help="as %%pi compact --offline")
        parser.add_argument("--leaf", help="replay at this entry (a compaction's parent)")
        opts = parser.parse_args(args)
        session = self.current_session()
        leaf = self._entry_id(session, opts.leaf) if opts.leaf else None
        if self.engine == "pi":
            return self._pi_what_if(session, leaf, opts)
        note = "the settings %pi compact uses, fitted to the window as it fits them"
        try:
            model, settings, window, source = self._compaction_inputs(session, opts.offline)
        except PinbError as exc:  # no model: %pi compact needs --offline here
            model, settings, window, source = self._compaction_inputs(session, True)
            note += f"; no model to summarize with ({exc}), so as %pi compact --offline"
        kind = "offline-extractive"
        summarizer = self._summarizer(model, settings) if model is not None else None
        if summarizer is not None:
            kind = getattr(summarizer, "name", None) or kind
        scored = not opts.no_score
        asked = opts.model and scored and kind != ExtractiveSummarizer.name
        if scored and kind != ExtractiveSummarizer.name and not opts.model:
            note += f"; {kind}'s own summary is not scored (a request): add --model"
        elif opts.model and not asked:
            note += "; --model: no model to ask" if scored else "; --model: nothing is scored"
        return what_if(
            session,
            leaf,
            keep_recent_tokens=opts.keep,
            reserve_tokens=opts.reserve,
            summarizer=ExtractiveSummarizer() if opts.summarize or scored else None,
            context_window=window,
            window_source=source,
            current=settings,
            current_note=note,
            compact_summarizer=kind,
            score=scored,
            # The summary %pi compact would write (the model's, Pi's prompt): a request to
            # the model, so only when asked for.
            model=summarizer if asked else None,
        )

    def _pi_what_if(self, session: Any, leaf: str | None, opts: Any) -> Any:
        """With the Pi engine ``%pi compact`` is Pi's: its settings as they are, its window,
        its plan (no fitting of pinb's), its own model writing the summary."""
        from ...analysis.compaction.ledger import what_if
        from ...core import ExtractiveSummarizer

        process = self.pi_engine.process
        info = (process.state.get("model") if process is not None else None) or {}
        window, source = info.get("contextWindow"), "Pi's model"
        if self.context_window or not isinstance(window, int) or window <= 0:
            window, source = self._window(session)
        settings, _ = self._view_settings()  # Pi's own, as a Pi cell's footer shows them
        scored = not opts.no_score
        return what_if(
            session,
            leaf,
            keep_recent_tokens=opts.keep,
            reserve_tokens=opts.reserve,
            summarizer=ExtractiveSummarizer() if opts.summarize or scored else None,
            score=scored,
            context_window=window,
            window_source=source,
            current=settings,
            current_note="Pi's own settings as they are: the engine is pi, and Pi compacts"
            + (
                "; --model: Pi's model writes Pi's summaries, not scored here" if opts.model else ""
            ),
            fit=False,
            compact_summarizer="Pi's model",
        )

    def _cmd_export(self, args: list[str]) -> None:
        """Write the current branch as HTML, Markdown or a notebook: where ``-o`` says (a file,
        or a folder to name one in), else into ``exports/`` beside the notebook (the kernel's
        folder, which JupyterLab sets to the notebook's)."""
        from ...analysis.export import default_export_path, shown_path, write_export

        parser = command_parser("%pi export")
        parser.add_argument("format", choices=("html", "md", "ipynb"))
        parser.add_argument("path", nargs="?", help="the file to write (same as -o)")
        parser.add_argument("-o", "--output", help="the file, or a folder, to write to")
        parser.add_argument("--tree", action="store_true", help="every branch, not the path")
        opts = parser.parse_args(args)
        if opts.path and opts.output:
            raise UsageError("%pi export: give the file once (PATH or -o PATH)")
        session = self.current_session()
        wanted = opts.output or opts.path
        folder = self._cwd()  # the notebook's folder in JupyterLab
        if wanted:
            chosen = Path(wanted).expanduser()
            target = (
                default_export_path(session, opts.format, chosen) if chosen.is_dir() else chosen
            )
        else:
            target = default_export_path(session, opts.format, folder / "exports")
        write_export(session, opts.format, target, whole_tree=opts.tree, make_folder=not wanted)
        where = "" if wanted else " (exports/ beside the notebook; -o PATH to choose)"
        print(f"wrote {shown_path(target, folder)}{where}")
