"""Pi's output read as a network peer's: bounded framing, parsing and routing, on stoppable threads.

Pi's stdout is one JSON record per LF-terminated line (``docs/rpc.md``, "Framing"), and its
stderr is free text. Both come from another program, so both are read as a peer's bytes
are: in time linear in their length (only new bytes are searched for LF), in bounded
memory (a record above :attr:`RecordFramer.max_bytes` is skipped without being buffered;
a stderr line is cut, with a marker saying how much; lines that are not records are
counted and sampled), and parsed at any nesting depth (:func:`pinb.core.js.wire.loads_line`).
:class:`PiOutput` runs the two reader threads for :class:`~pinb.agent.pi.rpc.PiProcess`;
they poll, so they stop when Pi exits or is closed even while a process Pi started still
holds the pipes, and whatever goes wrong in them, no waiter is left without an answer.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import select
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from ...core.js.wire import loads_line

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "ENDED",
    "LineTail",
    "Oversized",
    "PiOutput",
    "RecordFramer",
    "close_quietly",
    "has_exited",
    "read_chunks",
    "split_records",
]

#: The largest record read by default. Pi writes each record with one ``JSON.stringify``,
#: so V8's string limit (~512 Mi characters) is its own ceiling. The records pinb needs
#: stay far below 64 MiB: an event carries one delta, one message or one tool result (Pi
#: cuts tool text at 50 KB and each image at 4.5 MB of base64), and pinb's commands
#: (``get_state``, ``set_model``, ``compact``, ``fork`` …) answer in kilobytes. Only records
#: spanning a whole run or session (``agent_end``'s messages, ``get_entries``) can grow
#: past it, and pinb needs neither: it ends a run at ``agent_settled`` and reads the
#: session file itself. Parsing a record costs a few times its size in memory, so the cap
#: also bounds one record's footprint in the kernel.
DEFAULT_MAX_RECORD_BYTES = 64 * 1024 * 1024
_HEAD = 256  # bytes of a skipped record kept to name it (type, id, command)
_CHUNK = 65536  # one read; also the most a reader holds before framing it
_POLL_MS = 100  # how often a reader looks at its stop flag and at Pi's exit
_STDERR_LINES = 200
_STDERR_LINE_BYTES = 4096  # a Node stack line is ~200 bytes; a provider's error body a few KB
_BAD_SAMPLES = 20  # stdout lines that are not records: the first few are kept ...
_BAD_SAMPLE_BYTES = 500  # ... each cut to this
_NOTES = 50  # notes waiting for a run to show them
#: What a waiter and :attr:`PiOutput.records` receive when Pi's stdout has ended.
ENDED: Any = object()
_FIELD = re.compile(rb'"(type|id|command)"\s*:\s*"([^"\\]{0,100})"')


def split_records(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Split ``buffer`` into complete records and the unfinished rest, as Pi's docs require.

    Records end at LF only; a CR right before the LF is dropped. UTF-8 bytes of U+2028 /
    U+2029 (``E2 80 A8`` / ``E2 80 A9``) are ordinary bytes here. For a stream, use
    :class:`RecordFramer`, which never searches the same bytes twice.
    """
    *complete, rest = buffer.split(b"\n")
    return [r[:-1] if r.endswith(b"\r") else r for r in complete], rest


@dataclass(frozen=True)
class Oversized:
    """A record longer than the framer's cap: skipped, never buffered.

    Attributes
    ----------
    size:
        Its length in bytes (without the LF).
    head:
        Its first bytes, enough to name what it was.
    """

    size: int
    head: bytes

    def field(self, name: str) -> str | None:
        """A top-level string field (``type``, ``id``, ``command``) seen in :attr:`head`.

        Pi writes ``type`` first in events and ``id, type, command`` first in responses,
        so they are in the head when they are there at all.
        """
        for key, value in _FIELD.findall(self.head):
            if key.decode() == name:
                return str(value.decode("utf-8", "replace"))
        return None


class RecordFramer:
    """LF-terminated records out of a byte stream, in linear time, each at most ``max_bytes``.

    Parameters
    ----------
    max_bytes:
        The largest record kept; a longer one becomes an :class:`Oversized` and its bytes
        are dropped as they arrive, up to the next LF.

    Examples
    --------
    >>> framer = RecordFramer(max_bytes=8)
    >>> framer.feed(b'{"a":1}\\r\\n{"b":')
    [b'{"a":1}']
    >>> framer.feed(b'2}\\n' + b"x" * 20 + b"\\n")
    [b'{"b":2}', Oversized(size=20, head=b'xxxxxxxxxxxxxxxxxxxx')]
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> None:
        self.max_bytes = max_bytes
        #: Bytes searched for LF, and bytes copied to assemble records: the framer's work,
        #: each at most once per byte fed (tests check this instead of timing it).
        self.scanned = 0
        self.copied = 0
        self._parts: list[bytes] = []
        self._size = 0
        self._skipping = False
        self._head = b""

    @property
    def buffered(self) -> int:
        """Bytes of the unfinished record held in memory (0 while one is being skipped)."""
        return 0 if self._skipping else self._size

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The records ``chunk`` completes, in order (a CR before each LF dropped)."""
        done: list[bytes | Oversized] = []
        start, end = 0, len(chunk)
        while start < end:
            lf = chunk.find(b"\n", start)
            stop = end if lf < 0 else lf
            self.scanned += (end if lf < 0 else lf + 1) - start
            self._take(chunk if start == 0 and stop == end else chunk[start:stop])
            if lf < 0:
                break
            done.append(self._finish())
            start = lf + 1
        return done

    def finish(self) -> bytes | Oversized | None:
        """The unterminated rest when the stream ends (``None`` if there is none)."""
        if not self._skipping and self._size == 0:
            return None
        return self._finish()

    def _take(self, piece: bytes) -> None:
        if not piece:
            return
        if not self._skipping and self._size + len(piece) > self.max_bytes:
            # Over the cap: keep a head to name the record by, drop the rest as it comes.
            head = b""
            for part in (*self._parts, piece):
                head += part[: _HEAD - len(head)]
                if len(head) >= _HEAD:
                    break
            self._skipping, self._head, self._parts = True, head, []
        if not self._skipping:
            self._parts.append(piece)
        self._size += len(piece)

    def _finish(self) -> bytes | Oversized:
        result: bytes | Oversized
        if self._skipping:
            result = Oversized(self._size, self._head)
        else:
            parts = self._parts
            record = parts[0] if len(parts) == 1 else b"".join(parts)
            if len(parts) > 1:
                self.copied += len(record)
            result = record[:-1] if record.endswith(b"\r") else record
        self._parts, self._size, self._skipping, self._head = [], 0, False, b""
        return result


class LineTail:
    """The last ``lines`` lines of a byte stream, each cut to ``line_bytes`` with a marker.

    Memory stays within ``lines * line_bytes`` (plus one line being read), whatever the
    stream holds: bytes past a line's cap are counted, not kept, and the line ends with
    ``… [N more bytes cut]``.

    Parameters
    ----------
    lines:
        How many complete lines to keep.
    line_bytes:
        How many bytes of each line to keep.
    """

    def __init__(self, lines: int = 200, line_bytes: int = 4096) -> None:
        self.line_bytes = line_bytes
        self.lines: deque[str] = deque(maxlen=lines)
        #: Complete lines seen so far (kept or not).
        self.count = 0
        self._kept: list[bytes] = []
        self._kept_size = 0
        self._cut = 0

    def feed(self, chunk: bytes) -> None:
        """Take more bytes; lines they complete join :attr:`lines`."""
        start, end = 0, len(chunk)
        while start < end:
            lf = chunk.find(b"\n", start)
            stop = end if lf < 0 else lf
            self._take(chunk, start, stop)
            if lf < 0:
                break
            self._end_line()
            start = lf + 1

    def finish(self) -> None:
        """The stream ended: an unterminated last line counts as a line."""
        if self._kept or self._cut:
            self._end_line()

    def _take(self, chunk: bytes, start: int, stop: int) -> None:
        keep = min(self.line_bytes - self._kept_size, stop - start)
        if keep > 0:
            self._kept.append(chunk[start : start + keep])
            self._kept_size += keep
        self._cut += (stop - start) - keep

    def _end_line(self) -> None:
        raw = b"".join(self._kept)
        if not self._cut and raw.endswith(b"\r"):
            raw = raw[:-1]
        text = raw.decode("utf-8", "replace")
        if self._cut:
            text += f"… [{self._cut:,} more bytes cut]"
        self.lines.append(text)
        self.count += 1
        self._kept, self._kept_size, self._cut = [], 0, 0


def has_exited(process: subprocess.Popen[bytes]) -> bool:
    """Whether ``process`` has exited, without reaping it (its pid keeps naming its group)."""
    if process.returncode is not None:
        return True
    try:
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        return os.waitid(os.P_PID, process.pid, flags) is not None
    except ChildProcessError:  # reaped already
        return True


def read_chunks(
    process: subprocess.Popen[bytes], stream: IO[bytes], stop: threading.Event
) -> Iterator[bytes]:
    """Bounded reads of ``stream`` until it ends, until ``process`` has exited and nothing
    is left to read, or until ``stop`` is set (looked at every 0.1 s)."""
    fd = stream.fileno()
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while not stop.is_set():
        if poller.poll(_POLL_MS):
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return
            yield chunk
        elif has_exited(process):
            # A process Pi started may hold the pipe open after Pi is gone; Pi's own
            # output ended with Pi, and all of it has been read.
            return


def close_quietly(stream: IO[Any] | None) -> None:
    """Close a pipe end, whatever state it is in."""
    if stream is not None:
        with contextlib.suppress(OSError, ValueError):
            stream.close()


def _mib(size: int) -> str:
    return f"{size / 2**20:,.1f} MiB"


class PiOutput:
    """One Pi process's stdout and stderr, read on two threads, kept bounded.

    Responses go to the command waiting for their ``id`` (:meth:`expect`), every other
    record to :attr:`records`. What is not a record is kept as :attr:`bad_count`, the
    first :attr:`bad_samples` and :attr:`last_bad`; a record over ``max_record_bytes``
    becomes a note (:meth:`take_notes`), or the failed answer of the command it
    answered. Stderr is a :class:`LineTail`. Texts here are raw: the process redacts
    them where they leave it.

    Parameters
    ----------
    max_record_bytes:
        The largest stdout record read.
    """

    def __init__(self, max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES) -> None:
        self.max_record_bytes = max_record_bytes
        #: Records that are not responses (session events, extension UI requests), in order.
        self.records: queue.Queue[Any] = queue.Queue()
        self.bad_count = 0
        self.bad_samples: list[bytes] = []
        self.last_bad = b""
        #: Why the stdout reader failed, when it did (it then stopped Pi).
        self.failure: str | None = None
        self._ended = False
        self._pending: dict[str, queue.Queue[Any]] = {}
        self._stderr = LineTail(_STDERR_LINES, _STDERR_LINE_BYTES)
        self._stderr_seen = 0
        self._notes: deque[str] = deque(maxlen=_NOTES)
        self._notes_dropped = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- the threads ----------------------------------------------------------------------

    def read(self, process: subprocess.Popen[bytes], on_failure: Callable[[], None]) -> None:
        """Start reading ``process``; ``on_failure`` stops it if the stdout reader fails."""
        self._threads = [
            threading.Thread(target=target, args=args, daemon=True, name=name)
            for target, args, name in (
                (self._read_stdout, (process, on_failure), "pinb-pi-stdout"),
                (self._read_stderr, (process,), "pinb-pi-stderr"),
            )
        ]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        """Stop both readers; each closes its pipe end (later, if it is busy past ``timeout``)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=timeout)

    def settle_stderr(self, timeout: float = 1.0) -> None:
        """Give the stderr reader ``timeout`` seconds to take an exited Pi's last words."""
        for thread in self._threads[1:]:
            thread.join(timeout=timeout)

    def _read_stdout(
        self, process: subprocess.Popen[bytes], on_failure: Callable[[], None]
    ) -> None:
        assert process.stdout is not None
        framer = RecordFramer(self.max_record_bytes)
        failure: str | None = None
        try:
            for chunk in read_chunks(process, process.stdout, self._stop):
                for item in framer.feed(chunk):
                    self._deliver(item)
            last = framer.finish()
            if last is not None and not self._stop.is_set():
                self._deliver(last)
        except Exception as exc:  # whatever it was, no waiter may be left without an answer
            failure = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._ended = True
                self.failure = failure
                boxes = list(self._pending.values())
            for box in boxes:
                with contextlib.suppress(queue.Full):
                    box.put_nowait(ENDED)
            self.records.put(ENDED)
            if failure is not None:
                # Nobody reads Pi's output now: it would stall on a full pipe, and an
                # engine would use it again. Stopped, it is started anew at the next cell.
                on_failure()
            close_quietly(process.stdout)

    def _read_stderr(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stderr is not None
        try:
            for chunk in read_chunks(process, process.stderr, self._stop):
                with self._lock:
                    self._stderr.feed(chunk)
        except Exception as exc:  # keep the reason where the user will look for Pi's words
            with self._lock:
                self._stderr.feed(f"\n[pinb stopped reading Pi's stderr: {exc!r}]\n".encode())
        finally:
            with self._lock:
                self._stderr.finish()
            close_quietly(process.stderr)

    # -- records --------------------------------------------------------------------------

    def _deliver(self, item: bytes | Oversized) -> None:
        try:
            if isinstance(item, Oversized):
                self._refuse(item)
            else:
                self._dispatch(item)
        except Exception as exc:  # one record pinb cannot handle is one bad record
            self._bad(item.head if isinstance(item, Oversized) else item)
            self.note(f"pinb could not read a record from Pi ({type(exc).__name__}: {exc})")

    def _dispatch(self, raw: bytes) -> None:
        if not raw or raw.isspace():
            return
        try:
            record = loads_line(raw)  # iterative past orjson's depth: no RecursionError
        except ValueError:
            record = None
        if not isinstance(record, dict):
            self._bad(raw)
            return
        if record.get("type") == "response" and self._answer(str(record.get("id")), record):
            return
        self.records.put(record)

    def _refuse(self, item: Oversized) -> None:
        kind = item.field("type")
        text = (
            f"Pi wrote a {_mib(item.size)} {kind or 'stdout'} record, over pinb's limit of "
            f"{_mib(self.max_record_bytes)} (max_record_bytes); it was skipped"
        )
        ident = item.field("id")
        if kind == "response" and ident is not None:
            refused = {"type": "response", "id": ident, "command": item.field("command"),
                       "success": False, "error": text}  # fmt: skip
            if self._answer(ident, refused):  # its command fails with the reason, at once
                return
        self.note(text)

    def _answer(self, ident: str, response: dict[str, Any]) -> bool:
        with self._lock:
            box = self._pending.get(ident)
        if box is None:
            return False
        with contextlib.suppress(queue.Full):
            box.put_nowait(response)
        return True

    def _bad(self, raw: bytes) -> None:
        with self._lock:
            self.bad_count += 1
            if len(self.bad_samples) < _BAD_SAMPLES:
                self.bad_samples.append(raw[:_BAD_SAMPLE_BYTES])
            self.last_bad = raw[:200]

    # -- waiters --------------------------------------------------------------------------

    def expect(self, ident: str) -> bool:
        """Make a place for the answer to command ``ident``; ``False`` once stdout has ended."""
        with self._lock:
            if not self._ended:
                self._pending[ident] = queue.Queue(maxsize=1)
            return not self._ended

    def box(self, ident: str) -> queue.Queue[Any] | None:
        """Where the answer to ``ident`` arrives (a response, or :data:`ENDED`)."""
        with self._lock:
            return self._pending.get(ident)

    def forget(self, ident: str) -> None:
        with self._lock:
            self._pending.pop(ident, None)

    # -- what is shown --------------------------------------------------------------------

    def note(self, text: str) -> None:
        """Keep a note for the run to show (the oldest dropped, and counted, past 50)."""
        with self._lock:
            if len(self._notes) == self._notes.maxlen:
                self._notes_dropped += 1
            self._notes.append(text)

    def take_notes(self) -> list[str]:
        """The notes not shown yet, oldest first."""
        with self._lock:
            notes, dropped = list(self._notes), self._notes_dropped
            self._notes.clear()
            self._notes_dropped = 0
        if dropped:
            notes.insert(0, f"{dropped:,} earlier notes about Pi's output were dropped")
        return notes

    def stderr_lines(self, last: int) -> list[str]:
        """The last ``last`` stderr lines kept."""
        with self._lock:
            return list(self._stderr.lines)[-last:] if last > 0 else []

    def new_stderr_lines(self) -> list[str]:
        """The stderr lines not taken yet (from those kept); then none are new."""
        with self._lock:
            unseen = min(self._stderr.count - self._stderr_seen, len(self._stderr.lines))
            self._stderr_seen = self._stderr.count
            return list(self._stderr.lines)[-unseen:] if unseen > 0 else []
