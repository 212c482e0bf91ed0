"""``pinb``'s parser and dispatch: each command group registers its sub-commands, and
:func:`main` runs one, turning every error into one line and an exit code."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from .._version import __version__
from ..errors import PinbError
from . import analysis, memory, sessions
from .output import quiet_stdout, say

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The ``pinb`` parser: the session, analysis and memory command groups."""
    parser = argparse.ArgumentParser(
        prog="pinb", description="Pi coding agent sessions: list, inspect, compact, branch."
    )
    parser.add_argument("--version", action="version", version=f"pinb {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    sessions.add_parser(sub)
    analysis.add_parser(sub)
    memory.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``pinb`` command; 0 on success, 2 on bad input, never a traceback.

    Set ``PINB_DEBUG=1`` to see the traceback of an unexpected error.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result: int = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below
        return result
    except BrokenPipeError:
        # The reader stopped early (``pinb tree F | head -1``): what it read is the answer.
        quiet_stdout()
        return 0
    except KeyboardInterrupt:
        return 130
    except PinbError as exc:
        _error(_message(exc))
        return 2
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename is not None else ""
        _error(f"{exc.strerror or exc}{where}")
        return 2
    except Exception as exc:
        if os.environ.get("PINB_DEBUG"):
            raise
        _error(
            f"internal error ({type(exc).__name__}: {exc}); this is a pinb bug, please report it"
            " (PINB_DEBUG=1 shows the traceback)"
        )
        return 3


def _message(exc: PinbError) -> str:
    """The error's one line; a busy file's says what the command did not do, and who holds it."""
    writers = sys.modules.get(
        "pinb.core.file.writers"
    )  # not loaded: not a busy file (parsing stays light)
    if writers is not None and isinstance(exc, writers.SessionBusyError):
        return f"{exc.path}: {exc.line('command')}"
    return str(exc)


def _error(message: str) -> None:
    with contextlib.suppress(BrokenPipeError):
        say(f"pinb: {message}", file=sys.stderr)
