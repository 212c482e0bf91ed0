"""The search index built in the background, while a search answers from a scan.

One builder at a time per index file: it holds a lock on ``<index>.build`` (which names its
process) for as long as it works, and a second one finds it held and leaves. The build is
the index's own (:meth:`~pinb.analysis.searching.index.SessionCatalog.refresh_search` of the whole
root): resumable, file by file, safe beside other processes searching or building; so a
builder that is stopped (the machine sleeps, the process is killed) leaves what it
finished, and the next search goes on from there.

By default the builder is a process of its own (``python -m pinb.analysis.searching.building``), in
a session of its own and at a lower priority: it outlives ``pinb search``, is not stopped
by the Ctrl-C that stops a search, and does not slow the notebook that started it (it
holds none of the kernel's interpreter lock). Where no process can be started it is a
thread of this process.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

from .index import How, SessionCatalog

if TYPE_CHECKING:
    import subprocess

try:  # POSIX advisory locks; elsewhere several builders may run (each write re-checks)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["IndexBuild", "build_index", "is_building", "lock_path", "start_build"]

log = logging.getLogger("pinb.analysis")


def lock_path(index_path: str | os.PathLike[str]) -> Path:
    """The file a builder of ``index_path`` holds locked (it names the builder's pid)."""
    return Path(os.fspath(index_path) + ".build")


@contextlib.contextmanager
def _holding(index_path: str | os.PathLike[str]) -> Iterator[bool]:
    """Hold the builder's lock while the block runs: ``True``, or ``False`` (at once)
    when another builder holds it."""
    path = lock_path(index_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        if fcntl is not None:
            # A few tries: another process may be looking at the lock for a moment.
            for attempt in range(5):
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if attempt == 4:
                        yield False
                        return
                    time.sleep(0.05)
        _name(handle)
        yield True  # closing the file lets the lock go


def _name(handle: IO[bytes]) -> None:
    with contextlib.suppress(OSError):
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n".encode())
        handle.flush()


def is_building(index_path: str | os.PathLike[str]) -> bool:
    """Whether a builder holds the lock of ``index_path`` now."""
    if fcntl is None:
        return False
    try:
        handle = open(lock_path(index_path), "rb")  # noqa: SIM115 - closed below
    except OSError:
        return False
    with handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        return False


def build_index(
    index_path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    folder: str | os.PathLike[str] | None = None,
) -> bool:
    """Bring the search index of ``root`` (and ``folder``, when it is not one of the
    root's) up to date, unless another builder is at it (then ``False``)."""
    with _holding(index_path) as mine:
        if not mine:
            return False
        with SessionCatalog(index_path, root) as catalog:
            catalog.refresh_search(folder)
        return True


class IndexBuild:
    """A build of the search index going on in the background.

    Attributes
    ----------
    how:
        ``"process"``, ``"thread"``, or ``"elsewhere"`` (another builder was at it).
    pid:
        The builder process (``None`` for a thread).
    """

    def __init__(
        self,
        index_path: Path,
        how: str,
        *,
        process: subprocess.Popen[bytes] | None = None,
        thread: threading.Thread | None = None,
    ) -> None:
        self.index_path = index_path
        self.how = how
        self._process = process
        self._thread = thread
        self.pid = process.pid if process is not None else None

    def done(self) -> bool:
        """Whether the build has ended (finished, failed, or was stopped)."""
        if self._process is not None:
            return self._process.poll() is not None
        if self._thread is not None:
            return not self._thread.is_alive()
        return not is_building(self.index_path)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the build to end, at most ``timeout`` seconds; whether it did."""
        import subprocess

        deadline = time.monotonic() + timeout if timeout is not None else None
        if self._process is not None:
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        while not self.done():
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def __repr__(self) -> str:
        state = "done" if self.done() else "building"
        return f"<IndexBuild {self.how} {state}: {self.index_path}>"


def start_build(
    index_path: str | os.PathLike[str],
    root: str | os.PathLike[str],
    folder: str | os.PathLike[str] | None = None,
    *,
    how: How = "process",
) -> IndexBuild:
    """Start building the index of ``root`` (and ``folder``) in the background (see the
    module notes)."""
    index = Path(index_path)
    if is_building(index):
        return IndexBuild(index, "elsewhere")
    if how == "process" and sys.executable:
        try:
            return IndexBuild(index, "process", process=_spawn(index, root, folder))
        except OSError as exc:
            log.info("the index builder could not be started (%s); building in a thread", exc)

    def work() -> None:
        try:
            build_index(index, root, folder)
        except Exception as exc:  # a background build's failure stops nothing else
            log.warning("the search index was not built in the background: %s", exc)

    thread = threading.Thread(target=work, name="pinb-index-build", daemon=True)
    thread.start()
    return IndexBuild(index, "thread", thread=thread)


def _spawn(
    index: Path, root: str | os.PathLike[str], folder: str | os.PathLike[str] | None
) -> subprocess.Popen[bytes]:
    """The builder process: this Python, this pinb, its own session, a lower priority."""
    import subprocess

    package = Path(__file__).resolve().parents[2]  # the folder holding pinb
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(package), env.get("PYTHONPATH")) if p)
    posix = os.name == "posix"
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pinb.analysis.searching.building",
            os.fspath(index),
            os.fspath(root),
            *([os.fspath(folder)] if folder is not None else []),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        close_fds=True,
        start_new_session=posix,
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m pinb.analysis.searching.building INDEX ROOT [FOLDER]``: build, at a lower priority."""
    index, root, *folder = argv if argv is not None else sys.argv[1:]
    with contextlib.suppress(OSError, AttributeError):
        os.nice(10)
    try:
        build_index(index, root, folder[0] if folder else None)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
