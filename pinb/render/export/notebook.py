"""A session as a Jupyter notebook: a Markdown cell per message, a code cell per tool call.

A tool call's cell holds its arguments as a comment and a JSON literal, with the call's
result as the cell's output, so running the notebook never repeats what the agent did.
"""

from __future__ import annotations

from typing import Any

from ...core import Session
from ...core.context.build import UNSET
from ...core.describe import message_text
from ...core.js.jsontext import SHOWN_DEPTH, json_text, value_text
from ..markdown import code, literal_line
from .markdown_file import message_markdown
from .shown import as_text, blocks, entry_time, safe_image, select_items, session_title

__all__ = ["export_ipynb"]


def _source(text: str) -> list[str]:
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + [lines[-1]]


def _result_outputs(message: dict[str, Any] | None) -> list[dict[str, Any]]:
    if message is None:
        return []
    outputs: list[dict[str, Any]] = []
    text = message_text(message)
    if text:
        name = "stderr" if message.get("isError") else "stdout"
        outputs.append({"output_type": "stream", "name": name, "text": _source(text)})
    for block in blocks(message.get("content")):
        if block.get("type") == "image":
            mime, data = block.get("mimeType"), block.get("data")
            if safe_image(mime, data):
                outputs.append(
                    {"output_type": "display_data", "data": {mime: data}, "metadata": {}}
                )
    return outputs


def export_ipynb(
    session: Session, *, leaf: Any = UNSET, whole_tree: bool = False
) -> dict[str, Any]:
    """An nbformat 4 notebook (plain JSON dict): a Markdown cell per message, and a code cell
    per tool call with its result as the cell's output.

    A tool call's cell holds a comment naming the tool and its arguments as a JSON
    literal, so running the notebook never repeats what the agent did.
    """
    _, items, _ = select_items(session, leaf, whole_tree)
    results: dict[str, dict[str, Any]] = {}
    for item in items:
        message = item.entry.message
        if message and message.get("role") == "toolResult":
            results.setdefault(value_text(message.get("toolCallId")), message)
    cells: list[dict[str, Any]] = []

    def markdown(text: str) -> None:
        cells.append(
            {
                "cell_type": "markdown",
                "id": f"c{len(cells)}",
                "metadata": {},
                "source": _source(text),
            }
        )

    markdown(
        f"# {literal_line(session_title(session))}\n\nsession {code(as_text(session.id))} · "
        f"cwd {code(as_text(session.cwd))}"
    )
    paired: set[str] = set()
    for item in items:
        entry = item.entry
        message = entry.message
        if message and message.get("role") == "toolResult":
            if value_text(message.get("toolCallId")) in paired:
                continue  # shown as the output of its call
        if entry.type not in ("message", "custom_message", "compaction", "branch_summary"):
            continue
        role = entry.role or entry.type
        text_parts = [
            p for p in message_markdown(entry) if not p.startswith("**Tool call**")
        ]  # tool calls become code cells below
        markdown(
            f"**{literal_line(as_text(role))}** · {entry_time(entry)}\n\n" + "\n\n".join(text_parts)
        )
        for block in blocks((message or {}).get("content")):
            if block.get("type") != "toolCall":
                continue
            call_id = value_text(block.get("id"))
            args = json_text(block.get("arguments"), indent=1, max_depth=SHOWN_DEPTH, default=str)
            result = results.get(call_id)
            if result is not None:
                paired.add(call_id)
            cells.append(
                {
                    "cell_type": "code",
                    "id": f"c{len(cells)}",
                    "metadata": {"pinb": {"tool": block.get("name"), "toolCallId": call_id}},
                    "execution_count": None,
                    # One comment line: a name holding a line break must not start code.
                    "source": _source(
                        f"# tool call: {' '.join(as_text(block.get('name')).split())}\n{args}"
                    ),
                    "outputs": _result_outputs(result),
                }
            )
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {
            "language_info": {"name": "python"},
            "pinb": {"session": session.id, "cwd": session.cwd, "wholeTree": whole_tree},
        },
        "cells": cells,
    }
