"""Pi's extension dialogs (select, confirm, input, editor) asked in the running cell.

A cell waiting on Pi blocks the kernel: a widget's click reaches the kernel only after
the cell has ended (ipykernel 7 dispatches comm messages during *async* cells only, and
jupyter_ui_poll's polling no longer reaches them). What a blocked cell can still ask
through is the kernel's stdin channel, the box ``input()`` shows in JupyterLab, Notebook
and VS Code, and the prompt of a terminal IPython. So a dialog is one ``input()``:

- a kernel whose front end answers stdin requests asks there;
- nbclient and papermill (``allow_stdin`` off), a script with no terminal, and a test
  shell cannot be asked: Pi gets its cancel answer and the cell a note saying so.

``PINB_PI_DIALOGS=cancel`` never asks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["DIALOGS_ENV", "ask_in_cell", "dialog_prompt", "read_answer"]

#: ``cancel`` answers every dialog with Pi's cancel; anything else asks when someone can answer.
DIALOGS_ENV = "PINB_PI_DIALOGS"
_NO_ONE = "cancelled: no live notebook front end to answer it in"


def dialog_prompt(request: dict[str, Any]) -> str:
    """The question one dialog request puts (extension text, shown as plain text)."""
    method = request.get("method")
    title = " ".join(str(request.get("title") or "Pi asks").split())
    head = f"Pi's extension asks: {title}"
    if request.get("message"):
        head += f" ({' '.join(str(request['message']).split())})"
    if method == "confirm":
        return head + " [y/n, Enter to cancel]: "
    if method == "select":
        options = [str(o) for o in request.get("options") or []]
        listed = "  ".join(f"{i}) {o}" for i, o in enumerate(options, 1))
        return f"{head}\n{listed}\nnumber, Enter to cancel: "
    if method == "editor" and request.get("prefill"):
        return (
            f"{head}\ntext so far: {request['prefill']!r}\nnew text (one line), Enter to keep it: "
        )
    placeholder = f" [{request['placeholder']}]" if request.get("placeholder") else ""
    return f"{head}{placeholder}, Enter to cancel: "


def read_answer(request: dict[str, Any], text: str) -> dict[str, Any]:
    """The ``extension_ui_response`` fields for what the user typed."""
    method = request.get("method")
    typed = text.strip()
    if method == "confirm":
        if typed.lower() in ("y", "yes"):
            return {"confirmed": True}
        if typed.lower() in ("n", "no"):
            return {"confirmed": False}
        return {"cancelled": True}
    if method == "select":
        options = [str(o) for o in request.get("options") or []]
        if typed.isdigit() and 1 <= int(typed) <= len(options):
            return {"value": options[int(typed) - 1]}
        if typed in options:
            return {"value": typed}
        return {"cancelled": True}
    if method == "editor" and not text:
        return {"value": str(request.get("prefill") or "")}
    return {"value": text} if text else {"cancelled": True}


def ask_in_cell(ask: Callable[[str], str] = input) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A dialog handler asking through ``ask`` (``input``); Pi's cancel when no one can answer."""

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        if os.environ.get(DIALOGS_ENV) == "cancel" or not _someone_can_answer():
            return {"cancelled": True, "note": _NO_ONE}
        try:
            text = ask(dialog_prompt(request))
        except (EOFError, OSError) as exc:
            # nbclient's kernel: StdinNotImplementedError; a captured or closed stdin: these.
            return {"cancelled": True, "note": f"{_NO_ONE} ({type(exc).__name__})"}
        except Exception as exc:
            if type(exc).__name__ == "StdinNotImplementedError":
                return {"cancelled": True, "note": _NO_ONE}
            raise
        return read_answer(request, text)

    return handler


def _someone_can_answer() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return sys.stdin is not None and sys.stdin.isatty()
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is not None:
        return bool(getattr(kernel, "_allow_stdin", True))  # nbclient turns it off
    return sys.stdin is not None and sys.stdin.isatty()
