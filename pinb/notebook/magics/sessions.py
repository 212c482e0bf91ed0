"""``%pi new``, ``open``, ``resume``, ``session``, ``sessions``, ``compact``, ``goto``, ``fork``, ``label``, ``name``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import UsageError
from .settings import MagicsBase, command_parser

if TYPE_CHECKING:  # the commands import what they use (see .settings)
    from ...core import Session

__all__ = ["SessionCommands"]


class SessionCommands(MagicsBase):
    """Commands that open, move or change the session."""

    def _cmd_session(self, args: list[str]) -> Session:
        """The current session object (it renders itself; ``.path`` is its file)."""
        session = self.current_session()
        self._window(session)  # it shows the window it runs with here
        return session

    def _cmd_new(self, args: list[str]) -> None:
        parser = command_parser("%pi new")
        parser.add_argument("--cwd")
        opts = parser.parse_args(args)
        from ...core import Session

        cwd = Path(opts.cwd).expanduser() if opts.cwd else self._cwd()
        self.session = Session.create(cwd, self.sessions_dir or None)
        path = self.session.require_path()
        # The file's name, not its folder: `%pi session` gives the path, and a saved
        # notebook output should not carry the author's (or a temporary) folder.
        print(f"new session {self.session.id}: {path.name}, written at its first reply")

    def _cmd_open(self, args: list[str]) -> None:
        from ...core.describe import plural

        if len(args) != 1:
            raise UsageError("usage: %pi open PATH")
        self.session = self._open(args[0])
        print(
            f"opened {self.session.path} ({plural(len(self.session.entries), 'entry')}, "
            f"leaf {self.session.leaf_id})"
        )

    def _cmd_resume(self, args: list[str]) -> None:
        from ...core.describe import plural
        from ...core.file.listing import most_recent_session

        if args:
            raise UsageError("usage: %pi resume (then %pi open PATH for another session)")
        folder, cwd = self._sessions_folder()
        recent = most_recent_session(folder, cwd=str(cwd) if self.sessions_dir else None)
        if recent is None:
            current = self.session
            kept = (
                f"still in session {current.id}"
                if current is not None
                else "the next %%pi cell starts a new one"
            )
            print(f"no session to resume for {cwd} (in {folder.name}/): {kept}")
            return
        self.session = self._open(recent)
        print(
            f"resumed {recent.name} ({plural(len(self.session.entries), 'entry')}, "
            f"leaf {self.session.leaf_id})"
        )

    def _cmd_sessions(self, args: list[str]) -> Any:
        from ...views import SessionListView

        parser = command_parser("%pi sessions")
        parser.add_argument("--all", action="store_true")
        parser.add_argument("--search")
        opts = parser.parse_args(args)
        from ...core.file.listing import list_all_sessions, list_sessions
        from ..progress import NotebookProgress

        folder, _ = self._sessions_folder()  # the current session's, as resume uses
        if opts.search:
            from ...analysis.searching.index import search

            return search(opts.search, None if opts.all else folder, progress=NotebookProgress())
        infos = (
            list_all_sessions(text=False, progress=NotebookProgress())
            if opts.all
            else list_sessions(folder, text=False)
        )
        return SessionListView(infos)

    def _cmd_compact(self, args: list[str]) -> Any:
        """``%pi compact [--offline] [--mask] [--no-keep-facts] [INSTRUCTIONS]``: compact now, by the settings'
        strategy (``--mask``: old tool results masked first, a summary only when that
        cannot get under the threshold)."""
        from ...agent.compact import mask_or_compact
        from ...core import ExtractiveSummarizer
        from ...core.compaction.masking import MaskReport
        from ...errors import NothingToCompactError
        from ...views import CompactionView, MaskingView

        offline = "--offline" in args
        mask = True if "--mask" in args else None
        keep_facts = "--no-keep-facts" not in args
        flags = ("--offline", "--mask", "--no-keep-facts")
        instructions = " ".join(a for a in args if a not in flags) or None
        session = self.current_session()
        if self.engine == "pi":
            # Only --mask reaches here with the Pi engine: pinb masks, Pi summarizes; with
            # Pi's settings as they are and its threshold, as the footer of a Pi cell.
            settings, _ = self._view_settings()
            window, _ = self._window(session)
            try:
                report = mask_or_compact(
                    session, None, settings=settings, context_window=window, mask=True
                )
            except NothingToCompactError as exc:
                raise NothingToCompactError(
                    f"{exc}; %pi compact (without --mask) has your Pi summarize"
                ) from None
            return MaskingView(report)  # type: ignore[arg-type]
        # Offline compaction writes no request, but plans for the window every view shows
        # all the same (else a small window keeps everything: "nothing to compact").
        model, settings, window, source = self._compaction_inputs(session, offline)
        if not keep_facts:
            from dataclasses import replace

            settings = replace(settings, keep_facts=False)
        summarizer = ExtractiveSummarizer() if model is None else self._summarizer(model, settings)
        # The one plan, which `%pi whatif` shows as its "current settings" column.
        report = mask_or_compact(
            session, summarizer, instructions, settings, context_window=window, mask=mask
        )
        if isinstance(report, MaskReport):
            return MaskingView(report)
        return CompactionView(report, session, context_window=window, window_source=source)

    def _cmd_goto(self, args: list[str]) -> Any:
        from ...core import ExtractiveSummarizer, navigate

        parser = command_parser("%pi goto")
        parser.add_argument("id")
        parser.add_argument("--summarize", nargs="*", default=None, metavar="INSTRUCTIONS")
        parser.add_argument("--offline", action="store_true")
        parser.add_argument("--label")
        opts = parser.parse_args(args)
        session = self.current_session()
        target = self._entry_id(session, opts.id)
        summarizer = None
        if opts.summarize is not None:
            model = None if opts.offline else self.current_model()
            summarizer = (
                ExtractiveSummarizer()
                if model is None
                else self._summarizer(model, self._settings())
            )
        report = navigate(
            session,
            target,
            summarize=opts.summarize is not None,
            summarizer=summarizer,
            instructions=" ".join(opts.summarize or []) or None,
            label=opts.label,
            context_window=self._model.info.context_window if self._model is not None else None,
        )
        print(f"leaf {report.old_leaf_id} → {report.new_leaf_id}")
        if report.summary_entry is not None:
            print(
                f"branch summary {report.summary_entry.id} covers {len(report.summarized_ids)} entries"
            )
        if report.editor_text is not None:
            print("text of the selected message, to send again:\n" + report.editor_text)
        return None

    def _cmd_fork(self, args: list[str]) -> None:
        from ...core.describe import plural
        from ...core.forks import clone_session, fork_at

        parser = command_parser("%pi fork")
        parser.add_argument("id", nargs="?")
        switch = parser.add_mutually_exclusive_group()
        switch.add_argument("--switch", dest="stay", action="store_false", default=False)
        switch.add_argument("--stay", dest="stay", action="store_true")
        opts = parser.parse_args(args)
        session = self.current_session()
        if opts.id:
            target = self._entry_id(session, opts.id)
            # The explorer's fork button follows the same rule (core.forks.fork_kind).
            new, text = fork_at(session, target)
            made = (
                f"forked the path before {target} into {new.require_path().name}"
                if text is not None
                else f"copied the path up to {target} into {new.require_path().name}"
            )
        else:
            new, text = clone_session(session), None
            made = f"cloned the branch into {new.require_path().name}"
        if opts.stay:
            print(f"{made}; still in session {session.id} (%pi open {new.path} to go there)")
        else:
            self.session = new
            print(
                f"{made}; now in the fork, session {new.id} "
                f"({plural(len(new.entries), 'entry')}); --stay keeps the original"
            )
        if text:
            print(f"the message to send again:\n{text}")

    def _cmd_label(self, args: list[str]) -> None:
        if not args:
            raise UsageError("usage: %pi label ID TEXT")
        session = self.current_session()
        target = self._entry_id(session, args[0])
        text = " ".join(args[1:]) or None
        session.set_label(target, text)
        print(f"labelled {target}: {text}" if text else f"cleared the label of {target}")

    def _cmd_name(self, args: list[str]) -> None:
        if not args:
            raise UsageError("usage: %pi name TEXT")
        session = self.current_session()
        session.set_name(" ".join(args))
        print(f"named session {session.id}: {session.name}")
