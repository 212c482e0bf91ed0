"""The user's own Pi as a subprocess: ``pi --mode rpc``, its commands and lifecycle, bounded.

Pi's RPC mode (``docs/rpc.md`` in ``@earendil-works/pi-coding-agent``) reads JSON commands
on stdin and writes responses, session events and extension UI requests on stdout, one
JSON object per LF-terminated record. :class:`PiProcess` owns one such process and treats
it as a network peer: its output is read by :class:`~pinb.agent.pi.framing.PiOutput`
(linear framing under a size cap, any nesting depth, stderr and stray lines kept bounded,
readers that stop when Pi does or when closed); responses are routed to the command that
carries their ``id``, everything else to :attr:`PiProcess.records`. It is closed by
closing stdin, then SIGTERM, then SIGKILL to Pi's own process group, and always reaped;
a Ctrl-C at any stage of :meth:`PiProcess.start` reaps what was started. Every text from
Pi that pinb shows (stderr, Pi's errors, notes) goes through the ``redact`` function given.

How its events become the agent's events is :mod:`pinb.agent.pi.events`.
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
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...errors import PinbError
from .framing import (
    DEFAULT_MAX_RECORD_BYTES,
    ENDED,
    PiOutput,
    close_quietly,
    has_exited,
    split_records,
)

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "INSTALL_HINT",
    "PI_COMMAND_ENV",
    "PiCommandError",
    "PiEngineError",
    "PiExitedError",
    "PiHandshakeError",
    "PiNodeTooOldError",
    "PiNotFoundError",
    "PiProcess",
    "check_node",
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


class PiEngineError(PinbError):
    """The user's Pi could not be used as an engine (root of the errors below)."""


class PiNotFoundError(PiEngineError):
    """No Pi command: says how to install one, and that the built-in engine needs nothing."""


class PiNodeTooOldError(PiEngineError):
    """The Node that would run Pi is older than Pi's ``package.json`` asks for (its
    ``engines.node``): says which Node was found, which is needed and where to get it."""


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
    max_record_bytes:
        The largest stdout record read (default 64 MiB, see
        :data:`~pinb.agent.pi.framing.DEFAULT_MAX_RECORD_BYTES`); a longer one is skipped
        without being buffered, with a note (:meth:`take_notes`), and a command whose
        answer it was fails with :class:`PiCommandError`.
    redact:
        Applied to every text from Pi before pinb shows it (stderr lines, Pi's error
        messages, notes); :meth:`redact` calls it. ``None``: texts are shown as they are.
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
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.program = list(command)
        self.session_file = Path(session_file)
        self.cwd = Path(cwd)
        self.model = model
        self.thinking = thinking
        self.env = dict(os.environ if env is None else env)
        self.extra_args = list(extra_args)
        self.max_record_bytes = max_record_bytes
        self._redactor = redact
        #: What ``get_state`` answered at start-up, and what ``--version`` printed.
        self.state: dict[str, Any] = {}
        self.version = "unknown"
        self._output = PiOutput(max_record_bytes)
        self._write_lock = threading.Lock()
        self._torn = False
        self._ids = itertools.count(1)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def records(self) -> queue.Queue[Any]:
        """Records that are not responses (session events, extension UI requests), in order."""
        return self._output.records

    @property
    def bad_record_count(self) -> int:
        """How many stdout lines were not JSON objects (skipped, never silently)."""
        return self._output.bad_count

    @property
    def bad_records(self) -> list[bytes]:
        """The first 20 of those lines, each cut to 500 bytes."""
        return self._output.bad_samples

    @property
    def last_bad_record(self) -> bytes:
        """The last of those lines, cut to 200 bytes."""
        return self._output.last_bad

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

        A Ctrl-C at any stage (the start, the handshake, the ``--version`` check) kills
        and reaps every process started, then propagates.

        Raises
        ------
        PiNotFoundError
            The command cannot be run.
        PiHandshakeError
            Pi answered ``get_state`` otherwise than Pi 1.x does, or not at all.
        PiExitedError
            Pi stopped at start-up (its own error, e.g. an unknown model).
        PiNodeTooOldError
            The Node that would run Pi is older than Pi needs (nothing was started).
        """
        check_node(self.program, self.env)  # else Pi dies with a SyntaxError of Node's
        checker: subprocess.Popen[str] | str | None = None
        try:
            with _interrupts_deferred():
                checker = self._start_version_check()
                self._spawn()
            state: Any = None
            failure: Exception | None = None
            try:
                state = self.request("get_state", timeout=timeout)
            except (PiExitedError, PiCommandError, TimeoutError) as exc:
                failure = exc
            self.version = _version_of(checker)
            checker = None
            return self._accept(state, failure)
        except BaseException:
            _reap(checker)
            self._abandon()
            raise

    def _spawn(self) -> None:
        try:
            process = subprocess.Popen(
                self.argv(),
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # Unbuffered: a write cut short leaves nothing behind for close() to flush
                # into a pipe Pi no longer reads.
                bufsize=0,
                # Its own process group: a terminal's Ctrl-C reaches the kernel only,
                # which turns it into Pi's `abort` instead of killing Pi; and close() can
                # stop whatever Pi left running in that group.
                start_new_session=True,
            )
        except OSError as exc:
            raise PiNotFoundError(
                f"cannot run {self.program[0]!r} ({exc}): " + INSTALL_HINT
            ) from exc
        self._process = process
        self._output = PiOutput(self.max_record_bytes)
        self._output.read(process, lambda: _signal_group(process, signal.SIGKILL))

    def _accept(self, state: Any, failure: Exception | None) -> PiProcess:
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
                self.redact(f"{where} is older than Pi 1.x, which pinb's Pi engine needs; ")
                + INSTALL_HINT
            )
        if isinstance(failure, PiExitedError):
            # Pi's own start-up error (an unknown model, a bad flag), shown once as Pi said it.
            raise PiExitedError(
                self.redact(f"Pi stopped at start-up: {where}"), failure.returncode, failure.stderr
            ) from None
        why = str(failure) if failure is not None else "get_state answered without a session file"
        raise PiHandshakeError(
            self.redact(f"{where} did not answer Pi 1.x's RPC handshake ({why})")
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
        """Stop Pi and reap it, never blocking on a pipe another process holds.

        Stdin is closed (Pi's orderly shutdown); after ``timeout`` seconds Pi's process
        group gets SIGTERM, after ``timeout`` more SIGKILL, and whatever Pi left running
        in its group is killed with it. The readers stop and close our pipe ends. A
        Ctrl-C during the wait kills at once, then propagates.
        """
        process, self._process = self._process, None
        if process is not None:
            self._stop_process(process, grace=timeout)

    def kill(self) -> None:
        """Stop Pi at once: SIGKILL to its process group, reaped; :attr:`alive` is then false.

        What Pi wrote before stays readable (its stderr tail, its exit status); :meth:`close`
        still releases the rest.
        """
        process = self._process
        if process is not None:
            _signal_group(process, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)

    def _abandon(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            self._stop_process(process, grace=0)

    def _stop_process(self, process: subprocess.Popen[bytes], *, grace: float) -> None:
        try:
            close_quietly(process.stdin)
            if grace > 0 and not _exits_within(process, grace):
                _signal_group(process, signal.SIGTERM)
                _exits_within(process, grace)
        finally:
            # Also when Pi has exited: a job it started in its group (a tool's `cmd &`)
            # would outlive it holding our pipes. The group's id (Pi's pid) is not given
            # to another process while Pi is unreaped or the group has a member.
            _signal_group(process, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
            self._output.stop()

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
                fd = process.stdin.fileno()
                # A write cut short (a Ctrl-C inside it) left Pi half a line: end that
                # line first, so this record is read on its own.
                view = memoryview(b"\n" + data if self._torn else data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                    self._torn = bool(view)
        except (OSError, ValueError) as exc:
            raise self._exited(f"could not write to Pi ({exc})") from exc

    def command(self, kind: str, **fields: Any) -> str:
        """Send a command with a fresh ``id`` and return that id (:meth:`wait` for it)."""
        ident = f"pinb-{next(self._ids)}"
        if not self._output.expect(ident):  # no reader left to answer: fail now, not later
            raise self._exited("Pi is not running")
        try:
            self.send({"id": ident, "type": kind, **fields})
        except PiExitedError:
            self._output.forget(ident)
            raise
        return ident

    def answered(self, ident: str) -> bool:
        """Whether the response to command ``ident`` has arrived (:meth:`wait` returns at once)."""
        box = self._output.box(ident)
        return box is not None and not box.empty()

    def wait(self, ident: str, *, timeout: float | None = 60.0) -> Any:
        """The ``data`` of the response to command ``ident``.

        Raises
        ------
        PiCommandError
            Pi answered ``success: false`` (its own error message), or its answer was
            over ``max_record_bytes`` and skipped.
        PiExitedError
            Pi ended (or pinb stopped reading it) before it answered.
        TimeoutError
            No answer within ``timeout`` seconds.
        """
        box = self._output.box(ident)
        if box is None:
            raise KeyError(ident)
        try:
            response = box.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"Pi did not answer command {ident} within {timeout} s") from None
        finally:
            self._output.forget(ident)
        if response is ENDED:
            raise self._exited("Pi exited before it answered")
        if not response.get("success"):
            raise PiCommandError(
                str(response.get("command")), self.redact(str(response.get("error")))
            )
        return response.get("data")

    def request(self, kind: str, *, timeout: float | None = 60.0, **fields: Any) -> Any:
        """Send a command and wait for its response's ``data``."""
        return self.wait(self.command(kind, **fields), timeout=timeout)

    # -- reading --------------------------------------------------------------------------

    def next_record(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next event or UI request; ``None`` when Pi's stdout has ended.

        Raises ``queue.Empty`` after ``timeout`` seconds without one.
        """
        record = self.records.get(timeout=timeout)
        if record is ENDED:
            self.records.put(ENDED)  # every later reader sees the end too
            return None
        result: dict[str, Any] = record
        return result

    def redact(self, text: str) -> str:
        """``text`` from Pi as pinb may show it: through the ``redact`` function, if any.

        A redaction function that fails withholds the text rather than show it unredacted.
        """
        if self._redactor is None or not text:
            return text
        try:
            return self._redactor(text)
        except Exception as exc:
            return (
                f"[{len(text):,} characters withheld: the redaction failed ({type(exc).__name__})]"
            )

    def take_notes(self) -> list[str]:
        """Notes about Pi's output not shown yet (a skipped record, an unreadable one), redacted."""
        return [self.redact(note) for note in self._output.take_notes()]

    def stderr_tail(self, lines: int = 15) -> str:
        """Pi's last ``lines`` stderr lines (each cut to 4 KiB), redacted."""
        return self.redact("\n".join(self._output.stderr_lines(lines)))

    def new_stderr(self) -> str:
        """Stderr lines not shown yet (each line is shown once), redacted."""
        return self.redact("\n".join(self._output.new_stderr_lines()))

    def _exited(self, what: str) -> PiExitedError:
        process = self._process
        code: int | None = None
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = process.wait(timeout=2)
        self._output.settle_stderr()  # Pi's last words
        how = f" (exit status {code})" if code is not None else ""
        failure = self._output.failure
        self._output.new_stderr_lines()  # shown in this error: not again
        if failure is not None:
            how += f"; pinb's reader of Pi's output failed ({failure}), so Pi was stopped"
        return PiExitedError(self.redact(what + how), code, self.stderr_tail())


def _exits_within(process: subprocess.Popen[bytes], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not has_exited(process):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def _signal_group(process: subprocess.Popen[bytes], number: int) -> None:
    # start_new_session made Pi the leader of its own group: the group's id is Pi's pid.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, number)


@contextlib.contextmanager
def _interrupts_deferred() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) back for the block, then deliver it.

    ``Popen`` can be interrupted after the child exists and before it is returned, and
    nothing could reap that child then. Only the main thread gets Python's signals and
    may install a handler; elsewhere (or under a handler Python did not install) the
    block runs as it is.
    """
    previous = (
        signal.getsignal(signal.SIGINT)
        if threading.current_thread() is threading.main_thread()
        else None
    )
    if previous is None:
        yield
        return
    held: list[int] = []
    signal.signal(signal.SIGINT, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        signal.raise_signal(signal.SIGINT)


def _reap(checker: subprocess.Popen[str] | str | None) -> None:
    """Kill and reap a ``--version`` process still running."""
    if isinstance(checker, subprocess.Popen):
        with contextlib.suppress(OSError):
            checker.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            checker.wait(timeout=5)
        close_quietly(checker.stdout)
        close_quietly(checker.stderr)


def _is_state(state: Any) -> bool:
    return isinstance(state, dict) and "sessionFile" in state


def package_version(program: Sequence[str]) -> str | None:
    """The version in the ``package.json`` of the Pi package whose CLI ``program`` runs.

    ``pi`` on PATH is a link into the npm package; ``node …/dist/cli.js`` names it.
    ``None`` when no argument leads to a ``*pi-coding-agent`` package.
    """
    found = _pi_package(program)
    return str(found[2]["version"]) if found is not None and found[2].get("version") else None


def _pi_package(program: Sequence[str]) -> tuple[Path, Path, dict[str, Any]] | None:
    """``(script, package folder, package.json)`` of the Pi package ``program`` runs."""
    for arg in program[:3]:
        path = Path(arg)
        if not path.is_file():
            continue
        script = path.resolve()
        for folder in list(script.parents)[:6]:
            manifest = folder / "package.json"
            if manifest.is_file():
                try:
                    data = json.loads(manifest.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    break
                if isinstance(data, dict) and str(data.get("name", "")).endswith("pi-coding-agent"):
                    return script, folder, data
                break
    return None


def check_node(program: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    """Make sure the Node that ``program`` runs Pi with is as new as Pi's ``engines.node``.

    That Node is the first argument when it is a ``node`` (``node …/cli.js``), else the one
    the script's ``#!`` line names (``#!/usr/bin/env node``: the first ``node`` on ``PATH``).
    Nothing is checked when Pi's package, its requirement or that Node cannot be found.

    Raises
    ------
    PiNodeTooOldError
        In one line: the Node found and its version, the version Pi needs, and where to get
        one (a Node installed beside Pi that fits, when there is one).
    """
    environ = os.environ if env is None else env
    found = _pi_package(program)
    if found is None:
        return
    script, folder, manifest = found
    engines = manifest.get("engines")
    wanted = engines.get("node") if isinstance(engines, dict) else None
    minimums = _minimums(wanted) if isinstance(wanted, str) else None
    node = _node_of(program, environ)
    if not minimums or node is None:
        return
    version = _node_version(node, environ)
    if version is None or _fits(version, minimums):
        return
    pi = f"Pi {manifest.get('version', '')}".strip()
    said = f"{pi} needs Node {wanted}, but {node} is v{'.'.join(map(str, version))}"
    beside = _node_beside(folder, minimums, environ)
    if beside is not None:
        how = f"a Node that fits is installed beside Pi ({beside}); run Pi with it"
        line = shlex.join([str(beside), str(script)])
    else:
        lowest = min(minimums)
        how = (
            f"install Node {lowest[0]}.{lowest[1]} or newer (`npm install -g node@{lowest[0]}`, "
            "nvm or nodejs.org) and run Pi with it"
        )
        line = shlex.join(["/path/to/that/node", str(script)])
    raise PiNodeTooOldError(
        f"{said}: {how}: ${PI_COMMAND_ENV}={shlex.quote(line)} (or %config PiMagics.pi_command)"
    )


def _minimums(wanted: str) -> list[tuple[int, int, int]] | None:
    """The lowest version each alternative of an ``engines`` range allows (``>=22.19.0``,
    ``^20.6 || >=22``); ``None`` for a range this does not read."""
    out: list[tuple[int, int, int]] = []
    for alternative in wanted.split("||"):
        lowest: tuple[int, int, int] | None = None
        for part in alternative.split():
            if part.startswith("<"):
                continue  # an upper bound: a Node too new is not what this checks
            found = re.fullmatch(r"(>=|>|\^|~|=)?v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?", part)
            if found is None:
                return None
            numbers = [int(n) if n and n.isdigit() else 0 for n in found.group(2, 3, 4)]
            lowest = (numbers[0], numbers[1], numbers[2])
        if lowest is None:
            return None
        out.append(lowest)
    return out


def _fits(version: tuple[int, int, int], minimums: list[tuple[int, int, int]]) -> bool:
    return any(version >= lowest for lowest in minimums)


def _node_of(program: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The Node that runs ``program``: its first argument, or its script's ``#!`` line's."""
    first = program[0]
    if Path(first).name.startswith("node"):
        return shutil.which(first, path=env.get("PATH")) or first
    try:
        with open(first, "rb") as handle:
            line = handle.readline(400)
    except OSError:
        return None
    words = line[2:].decode(errors="replace").split() if line.startswith(b"#!") else []
    if words and Path(words[0]).name == "env":  # `env node`, `env -S node --flag`
        words = [w for w in words[1:] if not w.startswith("-")]
        if words and Path(words[0]).name.startswith("node"):
            return shutil.which(words[0], path=env.get("PATH"))
        return None
    return words[0] if words and Path(words[0]).name.startswith("node") else None


def _node_version(node: str, env: Mapping[str, str]) -> tuple[int, int, int] | None:
    try:
        done = subprocess.run(
            [node, "--version"],
            capture_output=True,
            text=True,
            timeout=20,
            env=dict(env),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"v?(\d+)\.(\d+)\.(\d+)", done.stdout)
    return (int(found[1]), int(found[2]), int(found[3])) if found else None


def _node_beside(
    package: Path, minimums: list[tuple[int, int, int]], env: Mapping[str, str]
) -> Path | None:
    """A Node npm installed next to Pi (``node-<os>-<arch>``, the ``node`` package) that fits."""
    modules = next((p for p in package.parents if p.name == "node_modules"), None)
    if modules is None:
        return None
    for candidate in [*sorted(modules.glob("node-*-*/bin/node")), modules / "node/bin/node"]:
        if candidate.is_file():
            version = _node_version(str(candidate), env)
            if version is not None and _fits(version, minimums):
                return candidate
    return None


def _version_of(checker: subprocess.Popen[str] | str | None) -> str:
    """What a ``--version`` process printed (its last line, cut), reaped; ``unknown`` if nothing."""
    if isinstance(checker, str):
        return checker
    if checker is None:
        return "unknown"
    try:
        out, err = checker.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        _reap(checker)
        return "unknown"
    lines = (out.strip() or err.strip()).splitlines()
    return lines[-1].strip()[:200] if lines else "unknown"


def _major(version: str) -> int | None:
    """The major number of the first ``X.Y`` in ``version`` (``1.6.0``, ``v0.58.3``, ``pi 1.6``)."""
    found = re.search(r"(\d+)\.\d+", version)
    return int(found.group(1)) if found else None
