"""The Pi engine bounded like a network peer: fake Pis that misbehave, and what pinb keeps of them.

Each fake is a small Python program that answers Pi 1.x's ``get_state`` handshake and then
does one hostile thing. Timeouts here are hang guards (60 s), never claims about speed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from pinb.agent.events import AgentEnd, Notice, RetryScheduled, TurnStart
from pinb.agent.pi.events import PiRun
from pinb.agent.pi.framing import LineTail, Oversized, RecordFramer
from pinb.agent.pi.rpc import (
    PiCommandError,
    PiExitedError,
    PiHandshakeError,
    PiProcess,
)

GUARD = 60.0  # seconds: only ever a hang guard

PREAMBLE = r'''
import json, os, signal, subprocess, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))


def mark(name, value=""):
    path = os.path.join(HERE, name)
    with open(path + ".tmp", "w") as f:
        f.write(str(value))
    os.replace(path + ".tmp", path)


if "--version" in sys.argv:
    version = os.environ.get("FAKE_VERSION", "1.6.0")
    if version == "hang":
        mark("version.pid", os.getpid())
        time.sleep(1000)
    print(version)
    sys.exit(0)

mark("rpc.pid", os.getpid())
out = sys.stdout.buffer
SESSION = sys.argv[sys.argv.index("--session") + 1]


def write(data):
    out.write(data)
    out.flush()


def send(record):
    write(json.dumps(record).encode() + b"\n")


def respond(command, data=None, success=True, error=None):
    reply = {"id": command["id"], "type": "response", "command": command["type"],
             "success": success}
    reply.update({"data": data} if success else {"error": error})
    send(reply)


def sleeper(**options):
    """A process that sleeps holding Pi's stdout and stderr (a tool's `sleep 1000 &`)."""
    code = "import time; time.sleep(1000)"
    return subprocess.Popen([sys.executable, "-c", code], **options).pid


def commands(handshake=True):
    for line in sys.stdin.buffer:
        command = json.loads(line)
        with open(os.path.join(HERE, "received.jsonl"), "a") as f:
            f.write(json.dumps(command) + "\n")
        if command.get("type") == "get_state" and handshake:
            respond(command, {"sessionFile": SESSION})
            continue
        yield command
'''


@pytest.fixture()
def strays() -> Iterator[list[int]]:
    """Pids a test's fake Pi left outside its own group, killed at the end."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture()
def fake(tmp_path: Path) -> Iterator[Callable[..., PiProcess]]:
    """Makes a :class:`PiProcess` running a fake Pi (``PREAMBLE`` + ``body``); closes them all."""
    made: list[PiProcess] = []

    def make(body: str, *, version: str = "1.6.0", **options: Any) -> PiProcess:
        script = tmp_path / "fake_pi.py"
        script.write_text(PREAMBLE + textwrap.dedent(body))
        process = PiProcess(
            [sys.executable, str(script)],
            session_file=tmp_path / "s.jsonl",
            cwd=tmp_path,
            env={**os.environ, "FAKE_VERSION": version},
            **options,
        )
        made.append(process)
        return process

    yield make
    for process in made:
        _within(process.close)


def _within(call: Callable[[], Any], seconds: float = GUARD) -> Any:
    """``call()`` on a thread; fails (instead of hanging the suite) if it blocks past ``seconds``."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = call()
        except BaseException as exc:
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{call} still blocked after {seconds:g} s"
    if "error" in result:
        raise result["error"]
    return result.get("value")


def _marked(tmp_path: Path, name: str) -> int:
    path = tmp_path / name
    deadline = time.monotonic() + GUARD
    while not path.exists():
        assert time.monotonic() < deadline, f"the fake never wrote {name}"
        time.sleep(0.01)
    return int(path.read_text())


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + GUARD
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _group(pgid: int) -> list[int]:
    """The live members of process group ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


def _emptied(pgid: int) -> bool:
    """Whether group ``pgid`` loses its last live member (a SIGKILL takes a moment to land)."""
    deadline = time.monotonic() + GUARD
    while _group(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _pipes() -> set[str]:
    """This process's open pipe ends (``pipe:[inode]``)."""
    ends = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("pipe:"):
                ends.add(target)
    return ends


def _depth(value: Any) -> int:
    """How deep ``value`` nests (counted without recursion: it is deeper than Python's limit)."""
    depth = 0
    while isinstance(value, dict | list):
        depth += 1
        if not value:
            break
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
    return depth


def _notices(events: list[Any]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice)]


def _in_stack(filename: str, function: str) -> Callable[[], bool]:
    """Whether the main thread is inside ``function`` of ``filename`` right now."""

    def check() -> bool:
        frame = sys._current_frames().get(threading.main_thread().ident or 0)
        while frame is not None:
            code = frame.f_code
            if code.co_name == function and code.co_filename.endswith(filename):
                return True
            frame = frame.f_back
        return False

    return check


@contextlib.contextmanager
def _ctrl_c_when(ready: Callable[[], bool]) -> Iterator[None]:
    """Press Ctrl-C (a real SIGINT to the main thread) once ``ready()`` holds.

    A Ctrl-C lands wherever the main thread is; while pinb waits (as it does nearly all
    the time here) that is pinb's code. One that lands in this file's own lines instead
    is let go and pressed again, so the test sees no stray KeyboardInterrupt.
    """
    delivered, handled, done = threading.Event(), threading.Event(), threading.Event()

    def on_sigint(number: int, frame: Any) -> None:
        handled.set()
        if frame is not None and frame.f_code.co_filename == __file__:
            return
        delivered.set()
        raise KeyboardInterrupt

    def press() -> None:
        deadline = time.monotonic() + GUARD
        while not (done.is_set() or ready()) and time.monotonic() < deadline:
            time.sleep(0.005)
        while not (done.is_set() or delivered.is_set()) and time.monotonic() < deadline:
            handled.clear()
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            handled.wait(GUARD)  # one press at a time: none is left pending at the end

    previous = signal.signal(signal.SIGINT, on_sigint)
    presser = threading.Thread(target=press, daemon=True)
    presser.start()
    try:
        yield
    finally:
        done.set()
        presser.join()
        signal.signal(signal.SIGINT, previous)
    assert delivered.is_set(), "the Ctrl-C never reached pinb"


# -- framing, without a process -----------------------------------------------------------------


def test_the_framer_reads_each_byte_once_however_a_record_is_cut() -> None:
    """A 16 MiB record in 64 KiB reads: searched once and joined once (not re-split per read)."""
    big = b'{"type":"message_update","x":"' + b"a" * (16 * 2**20) + b'"}'
    stream = big + b"\r\n" + b'{"type":"next"}\n'
    framer = RecordFramer()
    out: list[Any] = []
    for start in range(0, len(stream), 65536):
        out += framer.feed(stream[start : start + 65536])
        assert framer.buffered <= len(big) + 1
    assert out == [big, b'{"type":"next"}']
    assert framer.scanned == len(stream)  # every byte looked at for LF exactly once
    assert framer.copied == len(big) + 1  # the record (and its CR) assembled once


def test_a_record_over_the_cap_is_skipped_without_being_buffered() -> None:
    framer = RecordFramer(max_bytes=1000)
    huge = b'{"type":"agent_end","messages":[' + b"7," * 5000 + b"7]}"
    stream = huge + b"\n" + b"x" * 1000 + b"\n" + b'{"type":"after"}'
    out: list[Any] = []
    for start in range(0, len(stream), 64):
        out += framer.feed(stream[start : start + 64])
        assert framer.buffered <= 1000  # never more than the cap held
    last = framer.finish()
    assert out[0] == Oversized(len(huge), huge[:256]) and out[0].field("type") == "agent_end"
    assert out[1] == b"x" * 1000  # exactly at the cap: kept
    assert last == b'{"type":"after"}' and len(out) == 2
    assert framer.finish() is None


def test_an_oversized_answer_is_named_by_its_id_and_command() -> None:
    framer = RecordFramer(max_bytes=100)
    answer = b'{"id":"pinb-7","type":"response","command":"get_entries","success":true,"data":'
    (skipped,) = framer.feed(answer + b'"' + b"e" * 500 + b'"}\r\n')
    assert isinstance(skipped, Oversized)
    assert (skipped.field("id"), skipped.field("type"), skipped.field("command")) == (
        "pinb-7",
        "response",
        "get_entries",
    )
    assert framer.feed(b'{"a":1}\r') == [] and framer.feed(b"\n") == [b'{"a":1}']


def test_a_20_mb_stderr_line_is_kept_cut_with_a_marker() -> None:
    tail = LineTail(lines=200, line_bytes=4096)
    line = b"E" * 20_000_000
    for start in range(0, len(line), 65536):
        tail.feed(line[start : start + 65536])
    tail.feed(b"\nshort\r\n")
    for i in range(1000):
        tail.feed(b"line %d\n" % i)
    tail.feed(b"unfinished")
    tail.finish()
    assert tail.count == 1003 and len(tail.lines) == 200
    assert list(tail.lines)[-2:] == ["line 999", "unfinished"]
    first = LineTail(lines=5, line_bytes=4096)
    first.feed(line[:10_000_000])
    first.feed(line[10_000_000:] + b"\n")
    (kept,) = first.lines
    assert kept == "E" * 4096 + f"… [{20_000_000 - 4096:,} more bytes cut]"


# -- a reader that cannot be killed by what Pi writes ---------------------------------------------

DEEP = """
for command in commands():
    if command["type"] == "deep":
        write(b'{"type":"deep","value":' + b"[" * 100000 + b"]" * 100000 + b"}\\n")
        write(b'{"type":"deep","value":' + b'{"a":' * 1001 + b"1" + b"}" * 1001 + b"}\\n")
        write(b'{"type": "cut off", "value": [[[\\n')
        respond(command, {"after": "the deep ones"})
"""


def test_a_record_nested_past_pythons_limit_is_read_and_the_stream_goes_on(
    fake: Callable[..., PiProcess],
) -> None:
    pi = fake(DEEP).start(timeout=GUARD)
    assert _within(lambda: pi.request("deep", timeout=GUARD)) == {"after": "the deep ones"}
    first, second = pi.next_record(timeout=GUARD), pi.next_record(timeout=GUARD)
    assert first is not None and _depth(first["value"]) == 100000
    assert second is not None and _depth(second["value"]) == 1001
    assert pi.bad_record_count == 1
    assert pi.bad_records == [b'{"type": "cut off", "value": [[[']
    assert pi.request("get_state", timeout=GUARD)["sessionFile"]  # still read, still answered


class _Tripwire(int):
    """A record cap that, once armed, fails the reader as an unforeseen bug would."""

    armed = False

    def __lt__(self, other: int) -> bool:  # `size > cap` asks the cap first: a subclass
        if _Tripwire.armed:
            raise RuntimeError("tripwire")
        return int(self) < other


def test_a_failing_reader_answers_every_waiter_and_stops_pi(
    fake: Callable[..., PiProcess],
) -> None:
    pi = fake(
        """
        for command in commands():
            pass  # answers the handshake only
        """,
        max_record_bytes=_Tripwire(2**20),
    ).start(timeout=GUARD)
    _Tripwire.armed = True
    try:
        with pytest.raises(PiExitedError) as caught:
            _within(lambda: pi.request("get_state", timeout=None))  # would wait forever
    finally:
        _Tripwire.armed = False
    assert "pinb's reader of Pi's output failed (RuntimeError: tripwire)" in str(caught.value)
    assert not pi.alive  # not left for the engine to use again
    with pytest.raises(PiExitedError):
        pi.command("get_state")  # no reader left: refused at once


# -- size caps --------------------------------------------------------------------------------------

OVER_CAP = """
big = b"z" * (3 * 2**20)
for command in commands():
    if command["type"] == "big_answer":
        respond(command, {"blob": big.decode()})
    elif command["type"] == "prompt":
        respond(command, {"disposition": "started"})
        write(b'{"type":"message_update","blob":"' + big + b'"}\\n')
        send({"type": "turn_start"})
        send({"type": "agent_settled", "aborted": False})
"""


def test_an_over_cap_record_is_skipped_with_a_note_and_the_next_arrives(
    fake: Callable[..., PiProcess],
) -> None:
    pi = fake(OVER_CAP, max_record_bytes=2**20).start(timeout=GUARD)
    with pytest.raises(PiCommandError) as caught:
        _within(lambda: pi.request("big_answer", timeout=GUARD))
    assert str(caught.value) == (
        "Pi wrote a 3.0 MiB response record, over pinb's limit of 1.0 MiB "
        "(max_record_bytes); it was skipped"
    )
    events = _within(lambda: list(PiRun(pi, "hi").events()))
    assert (
        "Pi wrote a 3.0 MiB message_update record, over pinb's limit of 1.0 MiB "
        "(max_record_bytes); it was skipped"
    ) in _notices(events)
    assert any(isinstance(e, TurnStart) for e in events)
    assert isinstance(events[-1], AgentEnd) and events[-1].stop_reason == "stop"
    assert pi.alive and pi.request("get_state", timeout=GUARD)  # the process is kept


def test_notes_waiting_to_be_shown_are_bounded(fake: Callable[..., PiProcess]) -> None:
    pi = fake(
        """
        for command in commands():
            for i in range(80):
                write(b'{"type":"flood","x":"' + b"y" * 2000 + b'"}\\n')
            respond(command, None)
        """,
        max_record_bytes=1000,
    ).start(timeout=GUARD)
    _within(lambda: pi.request("flood", timeout=GUARD))
    notes = pi.take_notes()
    assert len(notes) == 51 and notes[0] == "30 earlier notes about Pi's output were dropped"
    assert pi.take_notes() == []


def test_a_20_mb_stderr_line_is_a_cut_line_in_the_error(fake: Callable[..., PiProcess]) -> None:
    pi = fake(
        """
        for command in commands():
            sys.stderr.buffer.write(b"W" * 20_000_000 + b"\\nPi's real last words\\n")
            sys.stderr.flush()
            sys.exit(3)
        """
    ).start(timeout=GUARD)
    with pytest.raises(PiExitedError) as caught:
        _within(lambda: pi.request("die", timeout=GUARD))
    message = str(caught.value)
    assert len(message) < 10_000
    assert f"… [{20_000_000 - 4096:,} more bytes cut]\nPi's real last words" in message
    assert caught.value.returncode == 3


def test_200000_banner_lines_are_counted_and_sampled_not_kept(
    fake: Callable[..., PiProcess],
) -> None:
    pi = fake(
        """
        for command in commands():
            if command["type"] == "prompt":
                respond(command, {"disposition": "started"})
                write(b"".join(b"banner %d\\n" % i for i in range(200000)))
                send({"type": "agent_settled", "aborted": False})
        """
    ).start(timeout=GUARD)
    events = _within(lambda: list(PiRun(pi, "hi").events()))
    assert pi.bad_record_count == 200000
    assert pi.bad_records == [b"banner %d" % i for i in range(20)]
    assert (
        "Pi wrote 200,000 lines to stdout that are not RPC records; skipped "
        "(the last: 'banner 199999')"
    ) in _notices(events)


# -- closing, whoever holds the pipes ---------------------------------------------------------------

HOLDERS = """
mark("group.pid", sleeper())
mark("setsid.pid", sleeper(start_new_session=True))
if "deaf" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
for command in commands():
    pass
if "deaf" in sys.argv:
    time.sleep(1000)  # deaf to stdin's end and to SIGTERM: only SIGKILL ends it
"""


@pytest.mark.parametrize("deaf", [False, True])
def test_close_returns_while_other_processes_hold_pis_pipes(
    fake: Callable[..., PiProcess], tmp_path: Path, strays: list[int], deaf: bool
) -> None:
    before = _pipes()
    pi = fake(HOLDERS, extra_args=["deaf"] if deaf else []).start(timeout=GUARD)
    pid = pi.pid
    assert pid is not None
    in_group, outside = _marked(tmp_path, "group.pid"), _marked(tmp_path, "setsid.pid")
    strays.append(outside)
    assert in_group in _group(pid)
    _within(lambda: pi.close(timeout=1.0))
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped
    assert _gone(in_group) and _emptied(pid)  # what Pi left in its group went with it
    assert _running(outside)  # another session's: not pinb's to kill, yet no hang
    assert _pipes() <= before  # our pipe ends are closed


def test_pi_exiting_while_a_grandchild_holds_its_stdout_ends_the_wait(
    fake: Callable[..., PiProcess], tmp_path: Path, strays: list[int]
) -> None:
    pi = fake(
        """
        mark("setsid.pid", sleeper(start_new_session=True))
        for command in commands():
            sys.exit(4)
        """
    ).start(timeout=GUARD)
    strays.append(_marked(tmp_path, "setsid.pid"))
    with pytest.raises(PiExitedError) as caught:
        _within(lambda: pi.request("die", timeout=None))
    assert caught.value.returncode == 4


# -- Ctrl-C -----------------------------------------------------------------------------------------

DEAF_TO_ABORT = """
for command in commands():
    if command["type"] == "prompt":
        respond(command, {"disposition": "started"})
        mark("group.pid", sleeper())
        send({"type": "agent_start"})
        send({"type": "turn_start"})
        sys.stderr.write("an extension hangs\\n")
        sys.stderr.flush()
    elif command["type"] == "abort":
        mark("abort.pid", os.getpid())  # and never settles
"""


def _until_turn(run: PiRun) -> list[Any]:
    events = []
    for event in run.events():
        events.append(event)
        if isinstance(event, TurnStart):
            return events
    raise AssertionError("no turn started")


def test_a_pi_that_ignores_abort_is_killed_after_the_timeout(
    fake: Callable[..., PiProcess], tmp_path: Path
) -> None:
    pi = fake(DEAF_TO_ABORT).start(timeout=GUARD)
    pid = pi.pid
    assert pid is not None
    run = PiRun(pi, "hi", abort_timeout=1.0)
    _until_turn(run)
    child = _marked(tmp_path, "group.pid")
    rest = _within(lambda: list(run.abort()))
    assert (
        "Pi did not stop within 1 s of the abort, so pinb stopped it (killed its process "
        "group); its partial reply may be missing, and the next run starts a new Pi"
    ) in _notices(rest)
    assert "Pi's stderr:\nan extension hangs" in _notices(rest)
    end = rest[-1]
    assert isinstance(end, AgentEnd) and end.stop_reason == "aborted"
    assert not pi.alive and pi.returncode == -signal.SIGKILL  # never used again
    assert _gone(child) and _emptied(pid)


def test_a_second_ctrl_c_while_pi_ignores_abort_kills_it(
    fake: Callable[..., PiProcess], tmp_path: Path
) -> None:
    pi = fake(DEAF_TO_ABORT).start(timeout=GUARD)
    pid = pi.pid
    assert pid is not None
    run = PiRun(pi, "hi", abort_timeout=GUARD)
    _until_turn(run)
    with _ctrl_c_when(lambda: (tmp_path / "abort.pid").exists()):
        rest = list(run.abort())
    assert any(n.startswith("Pi did not stop before a second Ctrl-C") for n in _notices(rest))
    assert isinstance(rest[-1], AgentEnd) and rest[-1].stop_reason == "aborted"
    assert not pi.alive and _emptied(pid)


def test_a_second_ctrl_c_outside_the_aborts_wait_stops_pi_through_the_run(
    fake: Callable[..., PiProcess],
) -> None:
    """As when the Ctrl-C lands while the cell shows an event of the abort."""
    pi = fake(
        DEAF_TO_ABORT.replace(
            'mark("abort.pid", os.getpid())',
            'send({"type": "extension_error", "event": "abort", "error": "stuck"})',
        )
    ).start(timeout=GUARD)
    run = PiRun(pi, "hi", abort_timeout=GUARD)
    _until_turn(run)
    aborting = cast(Generator[Any, None, None], run.abort())
    assert _within(lambda: next(aborting)) == Notice("extension error in extension (abort): stuck")
    rest = list(run.stop())
    assert rest[0] == Notice(
        "Pi did not stop before a second Ctrl-C, so pinb stopped it (killed its process "
        "group); its partial reply may be missing, and the next run starts a new Pi"
    )
    assert isinstance(rest[-1], AgentEnd) and rest[-1].stop_reason == "aborted"
    assert not pi.alive
    aborting.close()
    assert list(run.stop()) == [rest[-1]]  # settled: nothing more to stop


def test_a_settled_run_is_not_stopped(fake: Callable[..., PiProcess]) -> None:
    pi = fake(
        """
        for command in commands():
            respond(command, {"disposition": "started"})
            send({"type": "agent_settled", "aborted": False})
        """
    ).start(timeout=GUARD)
    run = PiRun(pi, "hi")
    events = _within(lambda: list(run.events()))
    assert list(run.abort()) == [] and list(run.stop()) == [events[-1]]
    assert pi.alive


STARTS = """
mark("group.pid", sleeper())
for command in commands(handshake="mute" not in sys.argv):
    pass
"""


@pytest.mark.parametrize(
    ("stage", "where", "version"),
    [
        ("handshake", ("rpc.py", "wait"), "1.6.0"),
        ("version", ("rpc.py", "_version_of"), "hang"),
    ],
)
def test_ctrl_c_during_start_reaps_everything_it_started(
    fake: Callable[..., PiProcess],
    tmp_path: Path,
    stage: str,
    where: tuple[str, str],
    version: str,
) -> None:
    pi = fake(STARTS, version=version, extra_args=["mute"] if stage == "handshake" else [])
    threads_before = set(threading.enumerate())
    in_stage = _in_stack(*where)
    with (
        _ctrl_c_when(lambda: (tmp_path / "group.pid").exists() and in_stage()),
        pytest.raises(KeyboardInterrupt) as caught,
    ):
        pi.start(timeout=GUARD)
    assert any(entry.name == where[1] for entry in caught.traceback)  # the stage meant
    rpc, child = _marked(tmp_path, "rpc.pid"), _marked(tmp_path, "group.pid")
    assert _gone(rpc) and _gone(child) and _emptied(rpc)
    if version == "hang":
        assert _gone(_marked(tmp_path, "version.pid"))
    with pytest.raises(ChildProcessError):
        os.waitpid(rpc, os.WNOHANG)  # reaped, not a zombie
    assert not pi.alive
    assert not set(threading.enumerate()) - threads_before  # its readers stopped


# -- redaction --------------------------------------------------------------------------------------

KEY = "sk-planted-0123456789abcdef"


def _mask(text: str) -> str:
    return text.replace(KEY, "[KEY]")


CHATTY = f"""
KEY = {KEY!r}
sys.stderr.write("starting with " + KEY + "\\n")
sys.stderr.flush()
for command in commands():
    kind = command["type"]
    if kind == "fail":
        respond(command, success=False, error="401 for key " + KEY)
    elif kind == "prompt":
        respond(command, {{"disposition": "started"}})
        send({{"type": "extension_error", "extensionPath": "/x/guard.ts", "event": "tool_call",
              "error": "bad " + KEY}})
        send({{"type": "extension_ui_request", "id": "ui-1", "method": "notify",
              "message": "using " + KEY}})
        send({{"type": "extension_ui_request", "id": "ui-2", "method": "select",
              "title": "Which key? " + KEY, "options": ["use " + KEY, "none"]}})
    elif kind == "extension_ui_response":
        send({{"type": "auto_retry_start", "attempt": 1, "maxAttempts": 2, "delayMs": 0,
              "errorMessage": "rate limited for " + KEY}})
        send({{"type": "message_end", "message": {{"role": "assistant", "content": [],
              "stopReason": "error", "errorMessage": "denied: " + KEY}}}})
        send({{"type": "agent_settled", "aborted": False}})
    elif kind == "die":
        sys.stderr.write("dying with " + KEY + "\\n")
        sys.exit(1)
"""


def test_every_text_from_pi_passes_the_redaction(
    fake: Callable[..., PiProcess], tmp_path: Path
) -> None:
    pi = fake(CHATTY, redact=_mask).start(timeout=GUARD)
    shown: list[dict[str, Any]] = []

    def pick_first(request: dict[str, Any]) -> dict[str, Any]:
        shown.append(request)
        return {"value": request["options"][0]}

    events = _within(lambda: list(PiRun(pi, "hi", ui=pick_first).events()))
    texts = _notices(events)
    texts += [e.error for e in events if isinstance(e, RetryScheduled)]
    end = events[-1]
    assert isinstance(end, AgentEnd) and end.error is not None
    texts.append(end.error)
    with pytest.raises(PiCommandError) as refused:
        pi.request("fail", timeout=GUARD)
    texts.append(str(refused.value))
    with pytest.raises(PiExitedError) as died:
        _within(lambda: pi.request("die", timeout=GUARD))
    texts += [str(died.value), died.value.stderr, json.dumps(shown)]
    assert all(KEY not in text for text in texts), texts
    assert "Pi's stderr:\nstarting with [KEY]" in texts
    assert "extension error in guard.ts (tool_call): bad [KEY]" in texts
    assert "extension (info): using [KEY]" in texts
    assert "extension asked (select) 'Which key? [KEY]': \"use [KEY]\"" in texts
    assert "rate limited for [KEY]" in texts and end.error == "denied: [KEY]"
    assert str(refused.value) == "401 for key [KEY]"
    assert "dying with [KEY]" in str(died.value)
    assert shown[0]["options"] == ["use [KEY]", "none"]
    received = [json.loads(line) for line in (tmp_path / "received.jsonl").read_text().splitlines()]
    answer = next(r for r in received if r["type"] == "extension_ui_response")
    assert answer == {"type": "extension_ui_response", "id": "ui-2", "value": "use " + KEY}


def test_a_handshake_error_is_redacted(fake: Callable[..., PiProcess]) -> None:
    pi = fake(STARTS, version=f"0.9.0 {KEY}", redact=_mask)
    with pytest.raises(PiHandshakeError) as caught:
        pi.start(timeout=GUARD)
    assert KEY not in str(caught.value) and "(version 0.9.0 [KEY]) is older" in str(caught.value)


def test_a_failing_redaction_withholds_the_text(fake: Callable[..., PiProcess]) -> None:
    def broken(text: str) -> str:
        raise ValueError("no")

    pi = fake(CHATTY, redact=broken).start(timeout=GUARD)
    with pytest.raises(PiCommandError) as refused:
        pi.request("fail", timeout=GUARD)
    withheld = len("401 for key " + KEY)
    assert str(refused.value) == (
        f"[{withheld} characters withheld: the redaction failed (ValueError)]"
    )
