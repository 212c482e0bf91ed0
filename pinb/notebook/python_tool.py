"""The opt-in ``python`` tool: run code in the user's live kernel namespace (``%pi tools +python``)."""

from __future__ import annotations

import ast
import contextlib
import io
import traceback
from typing import Any

from ..agent.tool import ToolContext, ToolResult
from ..core.describe import NO_OUTPUT

__all__ = ["PythonTool"]

_LIMIT = 20_000


class PythonTool:
    """Execute Python in the notebook's namespace and return what it printed and its value.

    Off by default: the model then shares the user's variables (and can change them).
    """

    name = "python"
    description = (
        "Run Python code in the user's live Jupyter kernel. Variables persist between calls "
        "and are shared with the user's notebook. Returns printed output and the value of "
        "the last expression."
    )

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "Python code to run"}},
            "required": ["code"],
        }

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        code = arguments.get("code")
        if not isinstance(code, str):
            return ToolResult.error("Argument 'code' must be a string.")
        namespace = self.shell.user_ns
        out = io.StringIO()
        value: Any = None
        try:
            tree = ast.parse(code, "<pi python tool>")
            last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            if last is not None:
                tree.body.pop()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                exec(compile(tree, "<pi python tool>", "exec"), namespace)
                if last is not None:
                    expression = ast.Expression(last.value)
                    value = eval(compile(expression, "<pi python tool>", "eval"), namespace)
        except Exception:
            text = out.getvalue() + traceback.format_exc(limit=-3)
            return ToolResult.error(text[-_LIMIT:])
        text = out.getvalue()
        if value is not None:
            text += ("" if not text or text.endswith("\n") else "\n") + repr(value)
        if len(text) > _LIMIT:
            text = text[:_LIMIT] + f"\n[... {len(text) - _LIMIT} more characters]"
        return ToolResult.text(text or NO_OUTPUT)
