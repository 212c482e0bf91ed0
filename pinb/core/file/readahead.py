"""Reading a big file in a thread while its lines are parsed.

Reading a 90 MB session is a sixth of opening it, most of it the kernel copying the file
into fresh memory. The copy needs no interpreter lock, so a thread reads the next pieces
while the caller parses the ones it has: the read and the parse overlap on two cores.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator
from typing import BinaryIO

__all__ = ["READ_AHEAD_MIN", "read_ahead"]

#: Files at least this large are read ahead; for smaller ones the thread costs more than
#: the overlap saves.
READ_AHEAD_MIN = 4 << 20

#: Piece sizes: small first, so parsing starts soon, then larger (each piece the thread
#: reads waits for the interpreter lock once, up to its switch interval).
_FIRST = 1 << 20
_LARGEST = 8 << 20


def read_ahead(handle: BinaryIO) -> Generator[bytes, None, None]:
    """The rest of ``handle``'s bytes in consecutive pieces, read by a thread meanwhile.

    ``handle`` is an unbuffered binary file (``open(path, "rb", buffering=0)``); the thread
    closes it when it has read to the end, or when the caller stops early (the iterator
    is closed or garbage). A read error is raised here, where the piece would have come.
    """
    pieces: queue.SimpleQueue[bytes | BaseException] = queue.SimpleQueue()
    stopped = threading.Event()

    def read() -> None:
        size = _FIRST
        try:
            with handle:
                while not stopped.is_set():
                    piece = handle.read(size)
                    pieces.put(piece)
                    if not piece:
                        return
                    size = min(size * 2, _LARGEST)
        except BaseException as exc:  # handed to the reader, which raises it
            pieces.put(exc)

    thread = threading.Thread(target=read, name="pinb-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            piece = pieces.get()
            if isinstance(piece, BaseException):
                raise piece
            if not piece:
                return
            yield piece
    finally:
        stopped.set()
