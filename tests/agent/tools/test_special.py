"""Tools that cannot hang: FIFOs, devices, /proc, huge and sparse files, runaway output."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pinb.agent.batch import run_abandonable
from pinb.agent.tool import ToolContext, ToolResult
from pinb.agent.tools import BashTool, EditTool, FindTool, GrepTool, LsTool, ReadTool, WriteTool
from pinb.agent.tools import bash as bash_module
from pinb.agent.tools import read as read_module
from pinb.llm import CancelToken

#: Every call here must come back well within this (a blocking one never would).
DEADLINE = 10.0


def bounded(call: Callable[[], ToolResult], deadline: float = DEADLINE) -> ToolResult:
    """Run a tool call on a daemon thread; fail (not hang) when it does not return."""
    box: list[Any] = []
    worker = threading.Thread(target=lambda: box.append(call()), daemon=True)
    worker.start()
    worker.join(deadline)
    assert box, f"the call did not return within {deadline} s"
    return box[0]  # type: ignore[no-any-return]


def text(result: ToolResult) -> str:
    return "\n".join(str(b.get("text", "")) for b in result.content)


@pytest.fixture
def fifo(workdir: Path) -> Path:
    path = workdir / "pipe"
    os.mkfifo(path)
    return path


def test_read_refuses_a_fifo_and_a_device(context: ToolContext, fifo: Path) -> None:
    result = bounded(lambda: ReadTool().execute({"path": "pipe"}, context))
    assert result.is_error and "is a FIFO (named pipe), not a regular file" in text(result)
    zero = bounded(lambda: ReadTool().execute({"path": "/dev/zero"}, context))
    assert zero.is_error and "a character device" in text(zero)


def test_grep_and_find_pass_fifos_by(context: ToolContext, workdir: Path, fifo: Path) -> None:
    (workdir / "notes.txt").write_text("needle here\n")
    os.mkfifo(workdir / ".gitignore")  # find and grep read .gitignore files
    found = bounded(lambda: GrepTool().execute({"pattern": "needle"}, context))
    assert text(found) == "notes.txt:1: needle here"
    direct = bounded(lambda: GrepTool().execute({"pattern": "x", "path": "pipe"}, context))
    assert text(direct) == "No matches found"
    listed = bounded(lambda: FindTool().execute({"pattern": "*"}, context))
    assert "notes.txt" in text(listed) and "pipe" in text(listed)
    shown = bounded(lambda: LsTool().execute({}, context))
    assert "pipe" in text(shown)


def test_grep_in_proc_returns(context: ToolContext) -> None:
    result = bounded(
        lambda: GrepTool().execute({"pattern": "^Name:", "path": "/proc/self/status"}, context)
    )
    assert text(result).startswith("status:1: Name:")


def test_edit_and_write_refuse_a_fifo(context: ToolContext, fifo: Path) -> None:
    edit = bounded(
        lambda: EditTool().execute({"path": "pipe", "oldText": "a", "newText": "b"}, context)
    )
    write = bounded(lambda: WriteTool().execute({"path": "pipe", "content": "x"}, context))
    assert edit.is_error and "it is a FIFO (named pipe)" in text(edit)
    assert write.is_error and "it is a FIFO (named pipe)" in text(write)


def test_read_of_proc_works_without_a_size(context: ToolContext) -> None:
    result = bounded(lambda: ReadTool().execute({"path": "/proc/self/status"}, context))
    assert not result.is_error and text(result).startswith("Name:")


def test_a_2_gb_sparse_file_is_read_in_bounded_memory(context: ToolContext, workdir: Path) -> None:
    big = workdir / "sparse.bin.txt"
    with open(big, "wb") as handle:
        handle.write(b"first line\nsecond line\n")
        handle.truncate(2 * 1024**3)  # the rest: a hole of zero bytes, no newline
    tracemalloc.start()
    try:
        started = time.monotonic()
        head = bounded(lambda: ReadTool().execute({"path": str(big), "limit": 2}, context))
        whole = bounded(lambda: ReadTool().execute({"path": str(big)}, context))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert text(head) == (
        "first line\nsecond line\n\n"
        "[More lines in file (only its first 512.0MB were counted). Use offset=3 to continue.]"
    )
    # the third "line" is the 2 GB hole: Pi's notice for a first line over the limit
    third = ReadTool().execute({"path": str(big), "offset": 3}, context)
    assert "[Line 3 is more than 512.0MB, exceeds 50.0KB limit." in text(third)
    assert text(whole).startswith("first line\nsecond line\n")
    assert peak < 20 * 1024 * 1024, peak  # never the whole file
    assert time.monotonic() - started < DEADLINE


@pytest.mark.parametrize(
    ("offset", "limit"),
    [(None, None), (1, 10), (1500, None), (2500, 3000), (5000, 1), (9001, None)],
)
def test_streamed_reads_say_what_whole_reads_say(
    context: ToolContext, workdir: Path, monkeypatch: pytest.MonkeyPatch, offset, limit
) -> None:
    rows = "".join(f"row {n} " + "x" * (n % 70) + "\n" for n in range(9000))
    (workdir / "rows.txt").write_text(rows + "tail without newline")
    arguments = {"path": "rows.txt", "offset": offset, "limit": limit}
    whole = ReadTool().execute(arguments, context)
    monkeypatch.setattr(read_module, "WHOLE_READ_LIMIT", 0)
    streamed = ReadTool().execute(arguments, context)
    assert (text(streamed), streamed.is_error) == (text(whole), whole.is_error)


def test_runaway_output_leaves_no_log_and_a_kept_log_goes_at_exit(
    context: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bash_module, "BASH_LOG_LIMIT", 1024 * 1024)
    spill = tmp_path / "spill"
    spill.mkdir()
    tool = BashTool(temp_dir=spill)
    runaway = bounded(lambda: tool.execute({"command": "yes", "timeout": 1}, context))
    assert "Full output not kept" in text(runaway) and "more than the 1.0MB" in text(runaway)
    assert list(spill.iterdir()) == []  # deleted when the call ended
    kept = tool.execute({"command": "seq 1 3000"}, context)
    log = Path(kept.details["fullOutputPath"])
    assert log.exists() and log.stat().st_size < 1024 * 1024
    assert bash_module.remove_kept_logs() >= 1 and not log.exists()


def test_a_tool_stuck_in_a_system_call_is_abandoned_after_a_stop() -> None:
    release = threading.Event()

    def stuck(arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        release.wait(30)  # a read no token reaches
        return ToolResult.text("late")

    token = CancelToken()

    async def main() -> tuple[ToolResult, float]:
        asyncio.get_running_loop().call_later(0.2, token.cancel)
        started = time.monotonic()
        result = await run_abandonable(stuck, {}, ToolContext(cwd=Path(".")), token, grace=0.5)
        return result, time.monotonic() - started

    result, took = asyncio.run(asyncio.wait_for(main(), DEADLINE))
    release.set()
    assert result.is_error and text(result) == "Operation aborted"
    assert 0.6 < took < 30  # the grace period waited; < 30: not the stuck read's
