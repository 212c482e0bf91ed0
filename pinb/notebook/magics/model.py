"""``%pi model``, ``thinking`` and ``tools``: what the next run uses."""

from __future__ import annotations

from pathlib import Path

from ...errors import UsageError
from .settings import MagicsBase, command_parser

__all__ = ["ModelCommands"]


def _kept(backup: Path | None) -> str:
    return f"; the file as it was is {backup.name} beside it" if backup is not None else ""


class ModelCommands(MagicsBase):
    """Commands that choose the model, thinking level and tools."""

    def _cmd_model(self, args: list[str]) -> None:
        from ...llm import display_url
        from ..models import choose_model, discover_local_servers, discovery_report

        parser = command_parser("%pi model")
        parser.add_argument("spec", nargs="?")
        parser.add_argument("--base-url")
        parser.add_argument("--discover", action="store_true")
        parser.add_argument("--save", action="store_true")
        parser.add_argument("--window", type=int)
        parser.add_argument("--max-out", type=int)
        parser.add_argument("--fit-pi", action="store_true")
        opts = parser.parse_args(args)
        if opts.discover:  # on request only: asks the usual local ports, picks nothing
            print(discovery_report(discover_local_servers(base_urls=self.base_urls)))
            return
        if opts.save:
            self._save_model(opts.spec, opts.base_url, opts.window, opts.max_out)
            opts.base_url = None  # models.json has it now: chosen below like any other
        if opts.fit_pi:
            self._fit_pi(opts.spec)
            return
        spec = opts.spec or self._model_spec or self.model or None
        if opts.base_url:
            provider = (spec or "").partition("/")[0]
            if not spec or not provider:
                raise UsageError("usage: %pi model provider/model --base-url URL")
            self.base_urls[provider] = opts.base_url
        if opts.spec or opts.base_url:
            self._model = choose_model(spec, base_urls=self.base_urls)
            self.model = self._model_spec = spec or ""
        model = self.current_model()
        info = model.info
        where = getattr(model, "base_url", None)
        print(
            f"{info.provider}/{info.id} · window {info.context_window:,} ({info.window_origin})"
            " · max out "
            f"{info.max_tokens:,}" + (f" · {display_url(where)}" if where else "")
            + (f" · {info.note}" if info.note else "")
        )

    def _save_model(
        self, spec: str | None, base_url: str | None, window: int | None, max_out: int | None
    ) -> None:
        """``%pi model provider/model --save --base-url URL --window N``: one models.json entry
        both engines accept."""
        from ...llm.config.pi_config import save_model

        if not spec or not base_url or not window:
            raise UsageError(
                "usage: %pi model provider/model --save --base-url URL --window TOKENS "
                "[--max-out TOKENS]"
            )
        try:
            # Under Pi's lock, merged into the file as it is now; the old one kept as .bak.
            edited = save_model(spec, base_url, window=window, max_tokens=max_out, backup=True)
        except ValueError as exc:
            raise UsageError(f"%pi model --save: {exc}") from exc
        if not edited.changed:
            print(f"{spec} is already in {edited.path} as given (window {window:,}): unchanged")
            return
        self.pi_engine.close()  # Pi reads models.json when it starts
        print(
            f"saved {spec} in {edited.path} (window {window:,}; api and apiKey as Pi 1.6 needs "
            f"them): both engines use it{_kept(edited.backup)}"
        )

    def _fit_pi(self, spec: str | None) -> None:
        """``%pi model --fit-pi``: Pi's compaction settings for a small window, in its
        settings.json, for the model Pi runs (or ``spec``)."""
        from ...llm.config.pi_config import fit_pi_compaction, pi_small_window

        process = self.pi_engine.process
        info = (process.state.get("model") if process is not None else None) or {}
        if spec is None and info:
            spec, window = f"{info.get('provider')}/{info.get('id')}", info.get("contextWindow")
        else:
            model = self.current_model(spec)
            spec, window = model.info.spec, model.info.context_window
        if not isinstance(window, int) or window <= 0:
            raise UsageError(f"%pi model --fit-pi: the window of {spec} is unknown")
        if pi_small_window(spec, window, self._settings()) is None:
            print(f"Pi's compaction settings already fit {spec}'s {window:,}-token window")
            return
        edited = fit_pi_compaction(spec, window, backup=True)
        self.pi_engine.close()  # Pi reads its settings when it starts
        fitted = self._settings().for_model(*spec.split("/", 1))
        print(
            f"wrote Pi's compaction settings for {spec} into {edited.path}: Pi compacts above "
            f"{window - fitted.reserve_tokens:,} tokens and keeps "
            f"{fitted.keep_recent_tokens:,} (the next Pi cell starts Pi with them)"
            + _kept(edited.backup)
        )

    def _cmd_thinking(self, args: list[str]) -> None:
        from ...llm import THINKING_LEVELS

        if len(args) != 1 or args[0] not in THINKING_LEVELS:
            raise UsageError(f"usage: %pi thinking {'|'.join(THINKING_LEVELS)}")
        self.thinking = args[0]
        print(f"thinking level for the next runs: {self.thinking}")

    def _cmd_tools(self, args: list[str]) -> None:
        from ...agent.tools import all_tools

        enabled = list(self.tools)
        known = {t.name for t in all_tools()} | {
            "python",
            "memory_save",
            "memory_recall",
            "memory_forget",
        }
        for arg in args:
            name = arg[1:]
            if arg[:1] not in "+-" or name not in known:
                raise UsageError(
                    f"%pi tools: use +name or -name with one of {', '.join(sorted(known))}"
                )
            if arg[0] == "+" and name not in enabled:
                enabled.append(name)
            elif arg[0] == "-" and name in enabled:
                enabled.remove(name)
        self.tools = enabled
        print("tools: " + (", ".join(enabled) or "(none)"))
