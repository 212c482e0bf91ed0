"""``%pi model``, ``thinking`` and ``tools``: what the next run uses."""

from __future__ import annotations

from ...agent.tools import all_tools
from ...errors import UsageError
from ...llm import THINKING_LEVELS, display_url
from ..models import choose_model, discover_local_servers, discovery_report
from .settings import MagicsBase, command_parser

__all__ = ["ModelCommands"]


class ModelCommands(MagicsBase):
    """Commands that choose the model, thinking level and tools."""

    def _cmd_model(self, args: list[str]) -> None:
        parser = command_parser("%pi model")
        parser.add_argument("spec", nargs="?")
        parser.add_argument("--base-url")
        parser.add_argument("--discover", action="store_true")
        opts = parser.parse_args(args)
        if opts.discover:  # on request only: asks the usual local ports, picks nothing
            print(discovery_report(discover_local_servers(base_urls=self.base_urls)))
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
        )

    def _cmd_thinking(self, args: list[str]) -> None:
        if len(args) != 1 or args[0] not in THINKING_LEVELS:
            raise UsageError(f"usage: %pi thinking {'|'.join(THINKING_LEVELS)}")
        self.thinking = args[0]
        print(f"thinking level for the next runs: {self.thinking}")

    def _cmd_tools(self, args: list[str]) -> None:
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
