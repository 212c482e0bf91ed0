"""``%pi memory ...`` and ``%pi rm``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ...errors import PinbError, UsageError
from .settings import MagicsBase

__all__ = ["MemoryCommands"]


class MemoryCommands(MagicsBase):
    """Long-term memory and removing sessions."""

    def _cmd_memory(self, args: list[str]) -> Any:
        from ...cli.memory import memory_command
        from ...memory import MemoryStore, project_id
        from ...views import MemoryView

        if not args or args == ["list"]:
            return MemoryView(MemoryStore(), project_id(self._cwd()))
        if args[0] == "observe":
            if args[1:] not in (["on"], ["off"]):
                raise UsageError("usage: %pi memory observe on|off")
            self._observe = args[1] == "on"
            print(
                "memory observation "
                + (
                    "on: notes are proposed before compactions and after runs"
                    if self._observe
                    else "off"
                )
            )
            return None
        code = memory_command(["--cwd", str(self._cwd()), *args])
        if code:
            raise PinbError(f"%pi memory {' '.join(args)} failed")
        return None

    def _cmd_rm(self, args: list[str]) -> None:
        from ...memory import remove_session

        if len(args) != 1:
            raise UsageError("usage: %pi rm FILE")
        target = Path(args[0]).expanduser()
        current = self.session.path if self.session is not None else None
        if current is not None and target.exists() and current.exists():
            if os.path.samefile(target, current):
                raise UsageError(
                    f"%pi rm: {target} is this notebook's current session; "
                    "%pi new (or %pi open another) first"
                )
        print(remove_session(target).summary())
