"""Pi's extension dialogs (select, confirm, input, editor) as widgets in the running cell.

A cell that waits on Pi blocks the kernel, so a widget's click would only arrive after
the cell ended; ``jupyter_ui_poll`` lets the cell process front-end events while it
waits. Someone can answer only in a kernel that a notebook server started for a front end
(it sets ``JPY_SESSION_NAME``; nbclient, papermill and scripts do not) with ipywidgets and
jupyter_ui_poll installed; otherwise :func:`live_dialogs` returns ``None`` and the engine
answers with Pi's cancel response. ``PINB_PI_DIALOGS=widgets`` or ``=cancel`` decides
instead (a front end that starts kernels without a server).
Titles and messages come from an extension, so they are shown as text (``Label``,
``Textarea``), never as HTML.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

__all__ = ["DIALOGS_ENV", "Dialog", "live_dialogs"]

#: ``widgets``, ``cancel`` or ``auto`` (the default: widgets when a notebook server runs).
DIALOGS_ENV = "PINB_PI_DIALOGS"


class Dialog:
    """One extension dialog request as a box of widgets; :attr:`answer` is set by a click.

    ``answer`` holds the fields of Pi's ``extension_ui_response``: ``confirmed``,
    ``value`` or ``cancelled``.
    """

    def __init__(self, request: dict[str, Any]) -> None:
        import ipywidgets as w

        self.request = request
        self.answer: dict[str, Any] | None = None
        method = request.get("method")
        title = str(request.get("title") or "Pi asks")
        rows: list[Any] = [w.Label(value=f"Pi's extension asks: {title}")]
        if request.get("message"):
            rows.append(w.Label(value=str(request["message"])))
        buttons: list[Any] = []
        self.field: Any = None
        if method == "confirm":
            buttons = [
                self._button("Yes", {"confirmed": True}),
                self._button("No", {"confirmed": False}),
            ]
        elif method == "select":
            options = [str(o) for o in request.get("options") or []]
            buttons = [self._button(o, {"value": o}) for o in options]
        else:  # input, editor
            if method == "editor":
                self.field = w.Textarea(value=str(request.get("prefill") or ""), rows=8)
            else:
                self.field = w.Text(placeholder=str(request.get("placeholder") or ""))
            rows.append(self.field)
            send = w.Button(description="Send", button_style="primary")
            send.on_click(lambda _b: self._set({"value": self.field.value}))
            buttons = [send]
        buttons.append(self._button("Cancel", {"cancelled": True}))
        self.buttons = buttons
        rows.append(w.HBox(buttons))
        self.box = w.VBox(rows)

    def _button(self, label: str, answer: dict[str, Any]) -> Any:
        import ipywidgets as w

        button = w.Button(description=label)
        button.on_click(lambda _b: self._set(answer))
        return button

    def _set(self, answer: dict[str, Any]) -> None:
        if self.answer is None:
            self.answer = dict(answer)


def live_dialogs(
    display: Callable[..., Any] | None = None,
) -> Callable[[dict[str, Any]], dict[str, Any]] | None:
    """A dialog handler for the current kernel, or ``None`` without a live front end."""
    choice = os.environ.get(DIALOGS_ENV, "auto")
    if choice == "cancel" or (choice == "auto" and not os.environ.get("JPY_SESSION_NAME")):
        return None
    try:
        from IPython import get_ipython

        shell = get_ipython()
        if getattr(shell, "kernel", None) is None:
            return None
        import ipywidgets  # noqa: F401
        from jupyter_ui_poll import ui_events
    except ImportError:
        return None
    if display is None:
        from IPython.display import display as shown

        show: Callable[..., Any] = shown
    else:
        show = display

    def ask(request: dict[str, Any]) -> dict[str, Any]:
        dialog = Dialog(request)
        show(dialog.box)
        timeout = request.get("timeout")
        deadline = time.monotonic() + float(timeout) / 1000 if timeout else None
        try:
            with ui_events() as poll:
                while dialog.answer is None:
                    poll(10)
                    if deadline is not None and time.monotonic() > deadline:
                        # Pi resolved it itself at its timeout; a late answer is ignored.
                        dialog.answer = {"cancelled": True, "note": "timed out"}
                    time.sleep(0.02)
        finally:
            dialog.box.close()
        return dialog.answer

    return ask
