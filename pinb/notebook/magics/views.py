"""``%pi tree``, ``explore``, ``context``, ``chart`` and ``tokens``: views of the current session."""

from __future__ import annotations

from typing import Any

from .settings import MagicsBase, command_parser

__all__ = ["ViewCommands"]


class ViewCommands(MagicsBase):
    """Commands that show the current session."""

    def _cmd_tree(self, args: list[str]) -> Any:
        from ...views import TreeView

        return TreeView(self.current_session())

    def _cmd_explore(self, args: list[str]) -> Any:
        """The explorer widget; its branch summaries use the model in use, if any."""
        from ...errors import PinbError
        from ...views import SessionExplorer

        session = self.current_session()
        try:
            model = self.current_model()
        except PinbError:  # no model configured: the explorer summarizes offline, and says so
            model = None
        summarizer = None if model is None else self._summarizer(model, self._fitted(model))
        window, source = self._window(session, model)
        return SessionExplorer(
            session,
            summarizer=summarizer,
            context_window=window,
            window_source=source,
            settings=self._account_settings(model),
        )

    def _cmd_context(self, args: list[str]) -> Any:
        from ...core import UNSET
        from ...views import ContextPathView

        parser = command_parser("%pi context")
        parser.add_argument("--leaf")
        opts = parser.parse_args(args)
        session = self.current_session()
        leaf = self._entry_id(session, opts.leaf) if opts.leaf else UNSET
        window, source = self._window(session)
        settings, fit = self._view_settings()  # the Pi engine's threshold is Pi's own
        return ContextPathView(
            session,
            leaf,
            context_window=window,
            window_source=source,
            settings=settings,
            fit=fit,
        )

    def _cmd_chart(self, args: list[str]) -> Any:
        """``%pi chart [--leaf ID]``: the context over the path's requests, drawn (the window
        and threshold the views use, every compaction's drop and what set it off)."""
        from ...core import UNSET
        from ...views import ContextChartView

        parser = command_parser("%pi chart")
        parser.add_argument("--leaf", help="draw the path to this entry (default: the leaf)")
        opts = parser.parse_args(args)
        session = self.current_session()
        leaf = self._entry_id(session, opts.leaf) if opts.leaf else UNSET
        window, source = self._window(session)
        settings, fit = self._view_settings()  # the Pi engine's threshold is Pi's own
        return ContextChartView(
            session, leaf, context_window=window, window_source=source, settings=settings, fit=fit
        )

    def _cmd_tokens(self, args: list[str]) -> Any:
        from ...core.context.accounting import context_usage
        from ...views import ContextBreakdown

        session = self.current_session()
        if self.engine != "pi":
            return ContextBreakdown(session, usage=self._context_usage(session))
        window, source = self._window(session)
        settings, _ = self._view_settings()
        usage = context_usage(
            session.current_context(),
            window=window,
            window_source=source,
            settings=settings,
            fit=False,
        )
        return ContextBreakdown(session, usage=usage)
