"""The bash tool with real subprocesses: output, exit codes, truncation, timeout and cancel."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from pinb.agent.tool import ToolContext, ToolResult
from pinb.agent.tools import BashTool
from pinb.llm import CancelToken


@pytest.fixture
def spill(tmp_path: Path) -> Path:
    """Where full outputs of long commands go, instead of the system temp folder."""
    folder = tmp_path / "spill"
    folder.mkdir()
    return folder


def run(
    context: ToolContext, command: str, spill: Path | None = None, **extra: object
) -> ToolResult:
    return BashTool(temp_dir=spill).execute({"command": command, **extra}, context)


def text(result: ToolResult) -> str:
    assert len(result.content) == 1 and result.content[0]["type"] == "text"
    return str(result.content[0]["text"])


def gone(pid: int) -> bool:
    """Whether a process has ended (exited, or a zombie waiting for its reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"


def wait_until_gone(pid: int, seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if gone(pid):
            return True
        time.sleep(0.02)
    return gone(pid)


def test_stdout_and_stderr_interleave_in_the_working_directory(
    workdir: Path, context: ToolContext
) -> None:
    result = run(context, "echo one; echo two >&2; echo three; pwd")
    assert not result.is_error and result.details is None
    assert text(result) == f"one\ntwo\nthree\n{workdir}\n"


def test_no_output_says_so(context: ToolContext) -> None:
    assert text(run(context, "true")) == "(no output)"


def test_nonzero_exit_is_an_error_ending_with_the_code(context: ToolContext) -> None:
    result = run(context, "echo partial; exit 3")
    assert result.is_error and result.details == {}
    assert text(result).startswith("partial\n")
    assert text(result).endswith("\n\nCommand exited with code 3")
    assert text(run(context, "exit 1")) == "(no output)\n\nCommand exited with code 1"


def test_death_by_signal_reports_the_shell_style_code(context: ToolContext) -> None:
    assert text(run(context, "kill -9 $$")).endswith("Command exited with code 137")


def test_unicode_and_invalid_bytes(context: ToolContext) -> None:
    assert text(run(context, "printf 'héllo 😀\\n'")) == "héllo 😀\n"
    assert text(run(context, "printf 'a\\377b'")) == "a\ufffdb"


def test_stdin_is_closed(context: ToolContext) -> None:
    started = time.monotonic()
    assert text(run(context, "cat; echo done")) == "done\n"
    assert time.monotonic() - started < 2


def test_many_lines_keep_the_tail_and_the_full_output_on_disk(
    context: ToolContext, spill: Path
) -> None:
    result = run(context, "seq 1 3000", spill)
    body, notice = text(result).rsplit("\n\n", 1)
    assert body.splitlines()[0] == "1001" and body.splitlines()[-1] == "3000"
    full = Path(result.details["fullOutputPath"])
    assert full.parent == spill and full.name.startswith("pi-bash-") and full.suffix == ".log"
    assert notice == f"[Showing lines 1001-3000 of 3000. Full output: {full}]"
    assert full.read_text() == "".join(f"{n}\n" for n in range(1, 3001))
    truncation = result.details["truncation"]
    assert truncation["truncatedBy"] == "lines" and truncation["outputLines"] == 2000
    assert truncation["totalLines"] == 3000
    json.dumps(result.details)


def test_large_output_keeps_the_last_50_kib(context: ToolContext, spill: Path) -> None:
    # 30000 lines of 51 bytes (1.5 MB): far more than the in-memory tail ever holds.
    result = run(context, "seq -f 'row%05g-" + "x" * 41 + "' 1 30000", spill)
    body, notice = text(result).rsplit("\n\n", 1)
    lines = body.splitlines()
    assert lines[-1] == "row30000-" + "x" * 41 and len(lines) == 1003  # 50 + 51 * 1002 <= 51200
    full = Path(result.details["fullOutputPath"])
    assert notice == f"[Showing lines 28998-30000 of 30000 (50.0KB limit). Full output: {full}]"
    assert full.stat().st_size == 30000 * 51
    assert full.read_text().splitlines()[0] == "row00001-" + "x" * 41
    truncation = result.details["truncation"]
    assert truncation["totalBytes"] == 30000 * 51 and truncation["truncatedBy"] == "bytes"


def test_one_huge_line_shows_its_end(context: ToolContext, spill: Path) -> None:
    result = run(context, "head -c 60000 /dev/zero | tr '\\0' a; echo", spill)
    body, notice = text(result).rsplit("\n\n", 1)
    assert body == "a" * 51200
    full = result.details["fullOutputPath"]
    assert notice == f"[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: {full}]"
    assert result.details["truncation"]["lastLinePartial"] is True


def test_timeout_kills_the_group_and_keeps_the_output(context: ToolContext, workdir: Path) -> None:
    started = time.monotonic()
    result = run(context, "echo started; sleep 30 & echo $! > bg.pid; sleep 30", timeout=1)
    assert time.monotonic() - started < 5
    assert result.is_error and result.details == {}
    assert text(result) == "started\n\n\nCommand timed out after 1 seconds"
    assert wait_until_gone(int((workdir / "bg.pid").read_text()))


def test_timeout_as_a_string_and_fraction(context: ToolContext) -> None:
    assert text(run(context, "sleep 5", timeout="0.5")) == "Command timed out after 0.5 seconds"


def test_zero_timeout_means_no_limit(context: ToolContext) -> None:
    assert text(run(context, "sleep 0.2; echo ok", timeout=0)) == "ok\n"


def test_default_timeout_of_the_tool(context: ToolContext) -> None:
    tool = BashTool(default_timeout=0.5)
    assert (
        text(tool.execute({"command": "sleep 5"}, context)) == "Command timed out after 0.5 seconds"
    )


def test_cancel_from_another_thread_aborts_and_kills_the_group(workdir: Path) -> None:
    token = CancelToken()
    context = ToolContext(cwd=workdir, cancel=token)
    timer = threading.Timer(0.5, token.cancel)
    timer.start()
    started = time.monotonic()
    try:
        result = run(context, "echo before; sleep 30 & echo $! > bg.pid; sleep 30")
    finally:
        timer.cancel()
    assert time.monotonic() - started < 5
    assert result.is_error and text(result) == "before\n\n\nCommand aborted"
    assert wait_until_gone(int((workdir / "bg.pid").read_text()))


def test_an_already_cancelled_run_does_not_start(workdir: Path) -> None:
    token = CancelToken()
    token.cancel()
    result = run(ToolContext(cwd=workdir, cancel=token), "touch ran")
    assert result.is_error and text(result) == "Command aborted"
    assert not (workdir / "ran").exists()


def test_a_background_job_holding_the_pipe_does_not_hang_the_call(context: ToolContext) -> None:
    started = time.monotonic()
    result = run(context, "sleep 3 & echo quick")
    assert text(result) == "quick\n"
    assert time.monotonic() - started < 2.5


def test_errors_before_running(tmp_path: Path, context: ToolContext) -> None:
    missing = ToolContext(cwd=tmp_path / "nowhere")
    result = run(missing, "echo hi")
    assert result.is_error and text(result).startswith(
        f"Working directory does not exist: {tmp_path / 'nowhere'}"
    )
    assert text(BashTool().execute({}, context)) == "Missing required argument 'command'."
    assert (
        text(run(context, "true", timeout="soon"))
        == "Argument 'timeout' must be a number, got 'soon'."
    )


def test_environment_is_inherited(context: ToolContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PINB_TOOL_PROBE", "visible")
    assert text(run(context, "echo $PINB_TOOL_PROBE")) == "visible\n"
    assert os.environ["PINB_TOOL_PROBE"] == "visible"


def test_a_shell_that_closes_its_output_still_times_out(context: ToolContext) -> None:
    started = time.monotonic()
    result = run(context, "echo bye; exec >&- 2>&-; sleep 30", timeout=1)
    assert time.monotonic() - started < 5
    assert text(result) == "bye\n\n\nCommand timed out after 1 seconds"
