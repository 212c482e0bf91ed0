"""The user's own Pi as a subprocess: ``pi --mode rpc``, its framing, commands and lifecycle.

Pi's RPC mode (``docs/rpc.md`` in ``@earendil-works/pi-coding-agent``) reads JSON commands
on stdin and writes responses, session events and extension UI requests on stdout, one
JSON object per LF-terminated record. :class:`PiProcess` owns one such process:

- framing by :func:`split_records` (LF only, a preceding CR stripped: U+2028 and U+2029
  are valid inside JSON strings, so no text-mode line reader is used);
- stdout read continuously on a thread, so Pi never stalls on a full pipe; responses are
  routed to the command that carries their ``id``, everything else to :attr:`records`;
- stderr kept (the last lines) for error messages, and each line shown once;
- closed by closing stdin, then SIGTERM, then SIGKILL, and always waited for (no zombies).

How its events become the agent's events is :mod:`pinb.agent.pi_events`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import PinbError

__all__ = [
    "INSTALL_HINT",
    "PI_COMMAND_ENV",
    "PiCommandError",
    "PiEngineError",
    "PiExitedError",
    "PiHandshakeError",
    "PiNotFoundError",
    "PiProcess",
    "package_version",
    "resolve_pi_command",
    "split_records",
]

#: The environment variable naming the Pi command line (``node /path/to/pi/dist/cli.js``).
PI_COMMAND_ENV = "PINB_PI_COMMAND"
INSTALL_HINT = (
    "install it with `npm install -g @earendil-works/pi-coding-agent` (or name it in "
    f"${PI_COMMAND_ENV} / %config PiMagics.pi_command); `--engine pinb` needs nothing"
)
_STDERR_LINES = 200
_EXITED = object()  # what the reader queues when stdout ends


class PiEngineError(PinbError):
    """The user's Pi could not be used as an engine (root of the errors below)."""


class PiNotFoundError(PiEngineError):
    """No Pi command: says how to install one, and that the built-in engine needs nothing."""


class PiHandshakeError(PiEngineError):
    """Pi started but did not answer as Pi 1.x's RPC mode does (names the version found)."""


class PiExitedError(PiEngineError):
    """The Pi process ended while a command or a run was waiting for it.

    Attributes
    ----------
    returncode:
        Its exit status (negative: the signal that ended it), when known.
    stderr:
        The last lines it wrote to stderr.
    """

    def __init__(self, message: str, returncode: int | None, stderr: str) -> None:
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(message + (f"; Pi's last words on stderr:\n{stderr}" if stderr else ""))


class PiCommandError(PiEngineError):
    """Pi answered a command with ``success: false`` (the message is Pi's own ``error``)."""

    def __init__(self, command: str, error: str) -> None:
        self.command = command
        super().__init__(error)


def resolve_pi_command(configured: str = "", env: Mapping[str, str] | None = None) -> list[str]:
    """The argv prefix that runs the user's Pi.

    ``$PINB_PI_COMMAND`` (a command line) when set, else ``configured``
    (``%config PiMagics.pi_command``), else ``pi`` on ``PATH``.

    Raises
    ------
    PiNotFoundError
        None of them names a runnable command.
    """
    environ = os.environ if env is None else env
    for where, line in (
        (f"${PI_COMMAND_ENV}", environ.get(PI_COMMAND_ENV, "")),
        ("pi_command", configured),
    ):
        if line.strip():
            argv = shlex.split(line)
            program = shutil.which(argv[0], path=environ.get("PATH"))
            if program is None:
                raise PiNotFoundError(
                    f"{where} names {argv[0]!r}, which is not a program; " + INSTALL_HINT
                )
            return [program, *argv[1:]]
    program = shutil.which("pi", path=environ.get("PATH"))
    if program is None:
        raise PiNotFoundError("Pi is not installed (no `pi` on PATH): " + INSTALL_HINT)
    return [program]


def split_records(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Split ``buffer`` into complete records and the unfinished rest, as Pi's docs require.

    Records end at LF only; a CR right before the LF is dropped. UTF-8 bytes of U+2028 /
    U+2029 (``E2 80 A8`` / ``E2 80 A9``) are ordinary bytes here.
    """
    *complete, rest = buffer.split(b"\n")
    return [r[:-1] if r.endswith(b"\r") else r for r in complete], rest


class PiProcess:
    """One ``pi --mode rpc`` process on one session file.

    Parameters
    ----------
    command:
        The argv prefix (:func:`resolve_pi_command`).
    session_file:
        The session file (``--session``); Pi creates it when it does not exist yet.
    cwd:
        The folder Pi and its tools run in (the session's cwd).
    model:
        ``provider/id`` for ``--model``; ``None``: Pi's own default.
    thinking:
        Pi thinking level for ``--thinking``.
    env:
        Pi's environment; default the kernel's (``PI_CODING_AGENT_DIR``, keys) as it is.
    extra_args:
        More CLI arguments (``--no-extensions``, ``--tools read,write`` …).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        session_file: str | os.PathLike[str],
        cwd: str | os.PathLike[str],
        model: str | None = None,
        thinking: str | None = None,
        env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.program = list(command)
        self.session_file = Path(session_file)
        self.cwd = Path(cwd)
        self.model = model
        self.thinking = thinking
        self.env = dict(os.environ if env is None else env)
        self.extra_args = list(extra_args)
        #: Records that are not responses (session events, extension UI requests), in order.
        self.records: queue.Queue[Any] = queue.Queue()
        #: Stdout lines that were not JSON objects (counted, never silently dropped).
        self.bad_records: list[bytes] = []
        #: What ``get_state`` answered at start-up, and what ``--version`` printed.
        self.state: dict[str, Any] = {}
        self.version = "unknown"
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._stderr_seen = 0
        self._stderr_count = 0
        self._pending: dict[str, queue.Queue[Any]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._process: subprocess.Popen[bytes] | None = None
        self._threads: list[threading.Thread] = []

    # -- lifecycle ------------------------------------------------------------------------

    def argv(self) -> list[str]:
        """The full command line the process runs with."""
        argv = [*self.program, "--mode", "rpc", "--session", str(self.session_file)]
        if self.model:
            argv += ["--model", self.model]
        if self.thinking:
            argv += ["--thinking", self.thinking]
        return argv + self.extra_args

    def start(self, *, timeout: float = 60.0) -> PiProcess:
        """Start Pi and check that it speaks Pi 1.x's RPC protocol (``get_state``).

        Raises
        ------
        PiNotFoundError
            The command cannot be run.
        PiHandshakeError
            Pi exited or answered ``get_state`` otherwise than Pi 1.x does.
        """
        checker = self._start_version_check()
        try:
            self._process = subprocess.Popen(
                self.argv(),
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # Its own process group: a terminal's Ctrl-C reaches the kernel only,
                # which turns it into Pi's `abort` instead of killing Pi.
                start_new_session=True,
            )
        except OSError as exc:
            _version_of(checker)
            raise PiNotFoundError(
                f"cannot run {self.program[0]!r} ({exc}): " + INSTALL_HINT
            ) from exc
        process = self._process
        for target in (self._read_stdout, self._read_stderr):
            thread = threading.Thread(
                target=target, args=(process,), daemon=True, name="pinb-pi-rpc"
            )
            thread.start()
            self._threads.append(thread)
        state: Any = None
        failure: Exception | None = None
        try:
            state = self.request("get_state", timeout=timeout)
        except (PiExitedError, PiCommandError, TimeoutError) as exc:
            failure = exc
        self.version = _version_of(checker)
        major = _major(self.version)
        # An unknown version (a wrapper printing something else) is given the benefit of
        # the doubt when the handshake itself is Pi 1.x's.
        if (major is None or major >= 1) and failure is None and _is_state(state):
            self.state = state
            return self
        self.close(timeout=1.0)  # it is not a Pi that listens: do not wait long
        where = f"{' '.join(self.program)} (version {self.version})"
        if major is not None and major < 1:
            raise PiHandshakeError(
                f"{where} is older than Pi 1.x, which pinb's Pi engine needs; " + INSTALL_HINT
            )
        if isinstance(failure, PiExitedError):
            # Pi's own start-up error (an unknown model, a bad flag), shown once as Pi said it.
            raise PiExitedError(
                f"Pi stopped at start-up: {where}", failure.returncode, failure.stderr
            ) from None
        why = str(failure) if failure is not None else "get_state answered without a session file"
        raise PiHandshakeError(
            f"{where} did not answer Pi 1.x's RPC handshake ({why})"
        ) from failure

    def _start_version_check(self) -> subprocess.Popen[str] | str | None:
        # The package.json beside the CLI script says it at no cost; only a command that
        # hides its script (a wrapper) needs `--version`, run beside the RPC process.
        known = package_version(self.program)
        if known is not None:
            return known
        try:
            return subprocess.Popen(
                [*self.program, "--version"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=self.env,
                cwd=self.cwd,
            )
        except OSError:
            return None

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        return self._process.poll() if self._process is not None else None

    def close(self, *, timeout: float = 5.0) -> None:
        """Ask Pi to finish (stdin closed), then SIGTERM, then SIGKILL; always reap it."""
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()
        for stop in (None, process.terminate, process.kill):
            if stop is not None:
                with contextlib.suppress(OSError):
                    stop()
            try:
                process.wait(timeout=timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        for thread in self._threads:
            thread.join(timeout=1)
        self._threads.clear()
        for stream in (process.stdout, process.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> PiProcess:
        return self.start() if self._process is None else self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- commands -------------------------------------------------------------------------

    def send(self, record: Mapping[str, Any]) -> None:
        """Write one record (a command or an ``extension_ui_response``)."""
        process = self._process
        if process is None or process.stdin is None:
            raise self._exited("Pi is not running")
        # ASCII-only JSON: no raw U+2028 or lone surrogate can reach Pi's parser.
        data = json.dumps(record, ensure_ascii=True).encode("ascii") + b"\n"
        try:
            with self._write_lock:
                process.stdin.write(data)
                process.stdin.flush()
        except (OSError, ValueError) as exc:
            raise self._exited(f"could not write to Pi ({exc})") from exc

    def command(self, kind: str, **fields: Any) -> str:
        """Send a command with a fresh ``id`` and return that id (:meth:`wait` for it)."""
        ident = f"pinb-{next(self._ids)}"
        with self._lock:
            self._pending[ident] = queue.Queue(maxsize=1)
        try:
            self.send({"id": ident, "type": kind, **fields})
        except PiExitedError:
            with self._lock:
                self._pending.pop(ident, None)
            raise
        return ident

    def answered(self, ident: str) -> bool:
        """Whether the response to command ``ident`` has arrived (:meth:`wait` returns at once)."""
        with self._lock:
            box = self._pending.get(ident)
        return box is not None and not box.empty()

    def wait(self, ident: str, *, timeout: float | None = 60.0) -> Any:
        """The ``data`` of the response to command ``ident``.

        Raises
        ------
        PiCommandError
            Pi answered ``success: false`` (its own error message).
        PiExitedError
            Pi ended before it answered.
        TimeoutError
            No answer within ``timeout`` seconds.
        """
        with self._lock:
            box = self._pending.get(ident)
        if box is None:
            raise KeyError(ident)
        try:
            response = box.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"Pi did not answer command {ident} within {timeout} s") from None
        finally:
            with self._lock:
                self._pending.pop(ident, None)
        if response is _EXITED:
            raise self._exited("Pi exited before it answered")
        if not response.get("success"):
            raise PiCommandError(str(response.get("command")), str(response.get("error")))
        return response.get("data")

    def request(self, kind: str, *, timeout: float | None = 60.0, **fields: Any) -> Any:
        """Send a command and wait for its response's ``data``."""
        return self.wait(self.command(kind, **fields), timeout=timeout)

    # -- reading --------------------------------------------------------------------------

    def _read_stdout(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        fd = process.stdout.fileno()
        rest = b""
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                records, rest = split_records(rest + chunk)
                for raw in records:
                    self._dispatch(raw)
        except OSError:
            pass
        if rest.strip():
            self._dispatch(rest)
        with self._lock:
            boxes = list(self._pending.values())
        for box in boxes:
            with contextlib.suppress(queue.Full):
                box.put_nowait(_EXITED)
        self.records.put(_EXITED)

    def _dispatch(self, raw: bytes) -> None:
        if not raw.strip():
            return
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self.bad_records.append(raw[:500])
            return
        if not isinstance(record, dict):
            self.bad_records.append(raw[:500])
            return
        if record.get("type") == "response":
            with self._lock:
                box = self._pending.get(str(record.get("id")))
            if box is not None:
                with contextlib.suppress(queue.Full):
                    box.put_nowait(record)
                return
        self.records.put(record)

    def _read_stderr(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            with self._lock:
                self._stderr.append(line.decode("utf-8", "replace").rstrip("\r\n"))
                self._stderr_count += 1

    def next_record(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next event or UI request; ``None`` when Pi's stdout has ended.

        Raises ``queue.Empty`` after ``timeout`` seconds without one.
        """
        record = self.records.get(timeout=timeout)
        if record is _EXITED:
            self.records.put(_EXITED)  # every later reader sees the end too
            return None
        result: dict[str, Any] = record
        return result

    def stderr_tail(self, lines: int = 15) -> str:
        """Pi's last ``lines`` stderr lines."""
        with self._lock:
            return "\n".join(list(self._stderr)[-lines:])

    def new_stderr(self) -> str:
        """Stderr lines not shown yet (each line is shown once)."""
        with self._lock:
            unseen = self._stderr_count - self._stderr_seen
            self._stderr_seen = self._stderr_count
            return "\n".join(list(self._stderr)[-unseen:]) if unseen > 0 else ""

    def _exited(self, what: str) -> PiExitedError:
        process = self._process
        code: int | None = None
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = process.wait(timeout=2)
        for thread in self._threads[1:]:  # let the stderr reader take Pi's last words
            thread.join(timeout=1)
        how = f" (exit status {code})" if code is not None else ""
        self._stderr_seen = self._stderr_count
        return PiExitedError(what + how, code, self.stderr_tail())


def _is_state(state: Any) -> bool:
    return isinstance(state, dict) and "sessionFile" in state


def package_version(program: Sequence[str]) -> str | None:
    """The version in the ``package.json`` of the Pi package whose CLI ``program`` runs.

    ``pi`` on PATH is a link into the npm package; ``node …/dist/cli.js`` names it.
    ``None`` when no argument leads to a ``*pi-coding-agent`` package.
    """
    for arg in program[:3]:
        path = Path(arg)
        if not path.is_file():
            continue
        for folder in list(path.resolve().parents)[:6]:
            manifest = folder / "package.json"
            if manifest.is_file():
                try:
                    data = json.loads(manifest.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    break
                if str(data.get("name", "")).endswith("pi-coding-agent") and data.get("version"):
                    return str(data["version"])
                break
    return None


def _version_of(checker: subprocess.Popen[str] | str | None) -> str:
    """What a ``--version`` process printed (its last line), reaped; ``unknown`` if nothing."""
    if isinstance(checker, str):
        return checker
    if checker is None:
        return "unknown"
    try:
        out, err = checker.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        checker.kill()
        checker.communicate()
        return "unknown"
    lines = (out.strip() or err.strip()).splitlines()
    return lines[-1].strip() if lines else "unknown"


def _major(version: str) -> int | None:
    """The major number of the first ``X.Y`` in ``version`` (``1.6.0``, ``v0.58.3``, ``pi 1.6``)."""
    found = re.search(r"(\d+)\.\d+", version)
    return int(found.group(1)) if found else None
