"""The ``bash`` tool: run a command in its own process group, with timeout, cancel and output tail."""

from __future__ import annotations

import atexit
import contextlib
import copy
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pinb.core.describe import NO_OUTPUT
from pinb.core.js.wire import js_number

from ..tool import ToolContext, ToolResult
from .paths import ToolInputError, is_cancelled, optional_number, required_str, tool_cwd
from .truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_tail

__all__ = ["BASH_LOG_LIMIT", "BashTool", "remove_kept_logs"]

#: Most bytes a ``pi-bash-*.log`` holds. Output past it (``yes`` writes 400 MB/s) is not
#: kept: the log is deleted when the call ends and the notice says so.
BASH_LOG_LIMIT = 16 * 1024 * 1024
#: Logs kept for the model to read later in this process; deleted when the process exits.
_KEPT_LOGS: set[Path] = set()


def remove_kept_logs() -> int:
    """Delete the full-output logs this process kept (also run at exit); how many went."""
    removed = 0
    for path in list(_KEPT_LOGS):
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
        _KEPT_LOGS.discard(path)
    return removed


atexit.register(remove_kept_logs)

#: How long output is still collected after the shell exits (background jobs may hold the pipe).
_EXIT_GRACE_SECONDS = 1.0
_POLL_SECONDS = 0.05
_READ_SIZE = 65536


@dataclass
class _Output:
    """Combined stdout+stderr: a rolling tail in memory, everything in a temp file once large."""

    temp_dir: Path | None
    chunks: deque[bytes] = field(default_factory=deque)
    kept: int = 0
    total_bytes: int = 0
    newlines: int = 0
    last_byte: int | None = None
    line_bytes: int = 0  # bytes since the last "\n"
    previous_line_bytes: int = 0  # length of the line that the last "\n" ended
    temp_path: Path | None = None
    temp_file: IO[bytes] | None = None
    logged: int = 0  # bytes written to the temp file
    log_full: bool = False  # output passed BASH_LOG_LIMIT: the log is dropped at the end

    def add(self, data: bytes) -> None:
        self.total_bytes += len(data)
        count = data.count(b"\n")
        if count:
            self.newlines += count
            last = data.rfind(b"\n")
            if count == 1:
                self.previous_line_bytes = self.line_bytes + last
            else:
                self.previous_line_bytes = last - data.rfind(b"\n", 0, last) - 1
            self.line_bytes = len(data) - last - 1
        else:
            self.line_bytes += len(data)
        self.last_byte = data[-1]
        if self.temp_file is None and self.total_bytes > DEFAULT_MAX_BYTES:
            self._open_temp()
        if self.temp_file is not None:
            self._log(data)
        self.chunks.append(data)
        self.kept += len(data)
        # Keep at least twice the byte limit, so the cut tail starts with a whole line.
        while len(self.chunks) > 1 and self.kept - len(self.chunks[0]) >= 2 * DEFAULT_MAX_BYTES:
            self.kept -= len(self.chunks.popleft())

    def _open_temp(self) -> None:
        handle, name = tempfile.mkstemp(prefix="pi-bash-", suffix=".log", dir=self.temp_dir)
        self.temp_path = Path(name)
        self.temp_file = os.fdopen(handle, "wb")
        for chunk in self.chunks:
            self._log(chunk)

    def _log(self, data: bytes) -> None:
        if self.log_full or self.temp_file is None:
            return
        if self.logged + len(data) > BASH_LOG_LIMIT:
            self.log_full = True  # stop filling the disk; the file goes when the call ends
            return
        self.temp_file.write(data)
        self.logged += len(data)

    def finish(self) -> tuple[str, dict[str, Any] | None]:
        """The output text (tail, with Pi's notice when cut) and the details to store."""
        text = b"".join(self.chunks).decode("utf-8", "replace")
        truncation = truncate_tail(text)
        if not truncation.truncated:
            self._close()
            self._drop_log()
            return truncation.content, None
        if self.temp_file is None:
            self._open_temp()  # cut by lines only: everything is still in memory
        self._close()
        if self.log_full:
            self._drop_log()
        elif self.temp_path is not None:
            _KEPT_LOGS.add(self.temp_path)
        total_lines = self.newlines + (1 if self.last_byte not in (None, 0x0A) else 0)
        details_truncation = truncation.to_details()
        details_truncation["totalLines"] = total_lines
        details_truncation["totalBytes"] = self.total_bytes
        end = total_lines
        start = end - truncation.output_lines + 1
        where = (
            f"Full output: {self.temp_path}"
            if self.temp_path is not None
            else f"Full output not kept: {format_size(self.total_bytes)} is more than the "
            f"{format_size(BASH_LOG_LIMIT)} a log holds"
        )
        if truncation.last_line_partial:
            line_size = self.line_bytes if self.last_byte != 0x0A else self.previous_line_bytes
            notice = (
                f"[Showing last {format_size(truncation.output_bytes)} of line {end} "
                f"(line is {format_size(line_size)}). {where}]"
            )
        elif truncation.truncated_by == "lines":
            notice = f"[Showing lines {start}-{end} of {total_lines}. {where}]"
        else:
            notice = (
                f"[Showing lines {start}-{end} of {total_lines} ({format_size(DEFAULT_MAX_BYTES)} "
                f"limit). {where}]"
            )
        details: dict[str, Any] = {"truncation": details_truncation}
        if self.temp_path is not None:
            details["fullOutputPath"] = str(self.temp_path)
        return f"{truncation.content}\n\n{notice}", details

    def _close(self) -> None:
        if self.temp_file is not None:
            self.temp_file.close()
            self.temp_file = None

    def _drop_log(self) -> None:
        """Delete a log nothing will name (output that fit, or too much to keep)."""
        if self.temp_path is not None:
            with contextlib.suppress(OSError):
                self.temp_path.unlink()
            self.temp_path = None


def _find_shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # Once the shell is reaped its pid may be reused: only a live group is killed.
    if process.returncode is not None:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "Bash command to execute"},
        "timeout": {
            "type": "number",
            "description": "Timeout in seconds (optional; no timeout by default)",
        },
    },
    "required": ["command"],
}


class BashTool:
    """Run a shell command for the model, as Pi's ``bash`` tool does.

    The command runs with ``bash -c`` in the working directory, in a process group of its
    own, with stdin closed and stdout and stderr interleaved. The result text is the last
    2000 lines / 50 KiB of output; when more was produced the whole output is kept in a
    temp file (``pi-bash-*.log``) named in the notice and in ``details``
    (``{"truncation": ..., "fullOutputPath": ...}``), for the model to read later; such
    logs are deleted when the process exits. Output past `BASH_LOG_LIMIT` is not kept:
    writing stops there, the log is deleted when the call ends, and the notice says
    ``Full output not kept``. No output gives ``(no output)``.

    A non-zero exit is an error result ending in ``Command exited with code <n>`` (a
    command killed by a signal counts as ``128 + signal``, as a shell reports it). On
    timeout or cancellation the whole process group is killed and the error result holds
    the output so far and ``Command timed out after <t> seconds`` or ``Command aborted``.

    Parameters
    ----------
    cwd:
        Pin the tool to this folder; by default it works in the run's ``context.cwd``.
    temp_dir:
        Where full output of long commands is kept (default: the system temp folder).
    default_timeout:
        Seconds allowed when the model gives no ``timeout`` (default: no limit, as Pi).
    shell:
        The shell to run (default: ``bash`` on the ``PATH``, else ``/bin/sh``).
    """

    name = "bash"
    description = (
        "Execute a bash command in the current working directory and return its combined "
        f"stdout and stderr. Output is cut to the last {DEFAULT_MAX_LINES} lines or "
        f"{DEFAULT_MAX_BYTES // 1024}KB, whichever comes first; the full output is then saved to "
        "a temp file named at the end of the result. Stdin is closed, so interactive commands "
        "fail instead of waiting. Optionally give a timeout in seconds."
    )

    def __init__(
        self,
        cwd: str | os.PathLike[str] | None = None,
        *,
        temp_dir: str | os.PathLike[str] | None = None,
        default_timeout: float | None = None,
        shell: str | None = None,
    ) -> None:
        self.parameters: dict[str, Any] = copy.deepcopy(_PARAMETERS)
        self.cwd = Path(cwd) if cwd is not None else None
        self.temp_dir = Path(temp_dir) if temp_dir is not None else None
        self.default_timeout = default_timeout
        self.shell = shell

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Run ``arguments["command"]`` and return its output; see the class docstring."""
        try:
            command = required_str(arguments, "command")
            timeout = optional_number(arguments, "timeout")
        except ToolInputError as exc:
            return ToolResult.error(str(exc))
        if timeout is None:
            timeout = self.default_timeout
        if timeout is not None and timeout <= 0:
            timeout = None
        cwd = tool_cwd(self.cwd, context.cwd)
        if not cwd.is_dir():
            return ToolResult.error(
                f"Working directory does not exist: {cwd}\nCannot execute bash commands."
            )
        if is_cancelled(context.cancel):
            return ToolResult.error("Command aborted")

        process = subprocess.Popen(
            [self.shell or _find_shell(), "-c", command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            bufsize=0,
        )
        remove_callback = None
        if context.cancel is not None and hasattr(context.cancel, "add_callback"):
            remove_callback = context.cancel.add_callback(lambda: _kill_group(process))
        output = _Output(self.temp_dir)
        try:
            timed_out, aborted = self._collect(process, output, timeout, context.cancel)
        finally:
            if callable(remove_callback):
                remove_callback()
            if process.stdout is not None:
                process.stdout.close()
        code = process.wait()
        text, details = output.finish()

        if aborted or timed_out:
            status = (
                "Command aborted"
                if aborted
                else f"Command timed out after {js_number(timeout or 0)} seconds"
            )
            return ToolResult.error(f"{text}\n\n{status}" if text else status)
        text = text or NO_OUTPUT
        if code != 0:
            code = 128 - code if code < 0 else code
            return ToolResult.error(f"{text}\n\nCommand exited with code {code}")
        return ToolResult.text(text, details=details)

    @staticmethod
    def _collect(
        process: subprocess.Popen[bytes], output: _Output, timeout: float | None, cancel: Any
    ) -> tuple[bool, bool]:
        """Read output until the shell has exited and the pipe is closed; kill on timeout/cancel.

        A background job may keep the pipe open after the shell exits: reading then stops
        `_EXIT_GRACE_SECONDS` later and the job is left running, as in Pi.
        """
        assert process.stdout is not None
        fd = process.stdout.fileno()
        deadline = time.monotonic() + timeout if timeout is not None else None
        timed_out = aborted = eof = False
        exited_at: float | None = None
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                now = time.monotonic()
                if exited_at is None and process.poll() is not None:
                    exited_at = now
                if not aborted and is_cancelled(cancel):
                    aborted = True
                    _kill_group(process)
                if not (timed_out or aborted) and deadline is not None and now >= deadline:
                    timed_out = True
                    _kill_group(process)
                if exited_at is not None and (eof or now - exited_at > _EXIT_GRACE_SECONDS):
                    break
                if eof:  # the pipe is closed; the shell is exiting or runs on without output
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(_POLL_SECONDS)
                elif selector.select(_POLL_SECONDS):
                    data = os.read(fd, _READ_SIZE)
                    if data:
                        output.add(data)
                    else:
                        eof = True
                        selector.unregister(fd)
        # The cancel callback may have killed the group before the loop noticed the token.
        return timed_out, aborted or (not timed_out and is_cancelled(cancel))
