"""Every error pinb raises, under one root so callers can catch them all.

The tree::

    PinbError
    ├── SessionError                       a session cannot be used as asked
    │   ├── SessionFileError               a file is not a usable Pi session (path, line)
    │   │   ├── InvalidHeaderError         non-empty file without a valid header line
    │   │   ├── UnsupportedVersionError    a format pinb refuses to misread (Pi's v4)
    │   │   ├── FileReplacedError (pinb.core.file.write)  the path holds another file than the one read
    │   │   └── SessionRemovalError (pinb.core.file.remove)  a session could not be removed or restored
    │   │       └── SessionHeldError       someone holds it (a kernel, the Pi engine, pi --session)
    │   ├── EntryNotFoundError             an id that is not in the session (entry_id)
    │   ├── InvalidEntryError              an entry that does not validate (on append)
    │   ├── ParentLoopError (pinb.core.format.tree)  a walk up the parent links went round a loop
    │   ├── SessionLockError               the file lock could not be taken in time
    │   │   ├── LockFileRefusedError (pinb.core.file.lock_files)  a lock file or folder unsafe to use
    │   │   └── SessionBusyError (pinb.core.file.writers)  another writer is running a turn (holder)
    │   ├── ChatLinkError (pinb.chat.link) a chat's link names no session file that opens
    │   └── NotPersistedError              the operation needs a session file on disk
    ├── SpecialFileError (pinb.core.file.special)  a FIFO, device or socket: reading it could block
    ├── CompactionError                    compaction was asked for but cannot happen
    │   ├── SummaryCutError                the summary reply hit its output limit
    │   └── NothingToCompactError          the path holds nothing worth summarizing
    ├── LLMError (pinb.llm.errors)         a model request failed
    │   ├── ProviderHTTPError              the provider answered with an error (status_code)
    │   ├── StreamProtocolError            a stream that does not follow its wire format
    │   ├── ProviderStreamError            an error event inside a stream (retryable, detail)
    │   ├── ContextOverflowError           the prompt does not fit the model's window
    │   ├── MissingCredentialsError        no API key: names the variable to set (env_var)
    │   ├── InvalidCredentialsError        a key no HTTP header can carry (names the source)
    │   ├── UnknownProviderError           a provider pinb does not know
    │   ├── UnsupportedApiError            a wire protocol pinb does not speak
    │   └── ScriptExhaustedError (pinb.llm.providers.scripted)  a scripted model ran out of replies
    ├── PiEngineError (pinb.agent.pi.rpc)  the user's Pi could not be used as an engine
    │   ├── PiNotFoundError                no pi command (says how to install one)
    │   ├── PiNodeTooOldError              the Node that would run Pi is too old for it
    │   ├── PiHandshakeError               Pi did not answer as Pi 1.x's RPC mode does
    │   ├── PiExitedError                  the Pi process ended while pinb waited for it
    │   ├── PiCommandError                 Pi answered a command with success: false
    │   └── PiCannotFitError (pinb.agent.pi.limits)  no room for a reply in the window Pi would send
    ├── MemoryStoreError (pinb.memory.records)  the long-term memory database (path)
    │   ├── MemoryCorruptError             the file is damaged or not a SQLite database
    │   ├── MemoryLockedError              another process held its lock too long
    │   ├── MemoryNotFoundError            no record with this id (in this project)
    │   └── InvalidMemoryError             a record or request that makes no sense
    ├── ImportFormatError (pinb.analysis.importers._pi)  a file is not a transcript of that format
    ├── MissingExtraError (pinb.analysis.parquet)  an optional package is missing (names the extra)
    ├── SearchIndexError (pinb.analysis.searching.sidecar)   the search index cannot be used
    │   └── SearchTimeoutError             a search ran past its deadline and was stopped
    ├── ToolInputError (pinb.agent.tools.paths)  an argument the model gave a tool is unusable
    ├── RunFailedError (pinb.notebook.live)  a %%pi run that ended in an error (raised once)
    ├── NoModelConfiguredError (pinb.notebook.models)  no key and no local server: how to set one
    ├── UserFileError                      Pi's models.json/settings.json cannot be changed (path)
    │   └── UserFileLockError              another writer (Pi, pinb) held its lock too long
    └── UsageError                         bad command-line or magic arguments
        └── SearchQueryError (pinb.analysis.searching.query)  a query pinb cannot run (too long, a bad filter)

In a notebook a ``PinbError`` renders as one clear line instead of a traceback
(``_render_traceback_``), because the message already says what, why and what to do.
"""

from __future__ import annotations

import os
from pathlib import Path


class PinbError(Exception):
    """Root of all pinb errors."""

    def _render_traceback_(self) -> list[str]:
        # IPython calls this instead of printing a traceback.
        return [f"{type(self).__name__}: {self}"]


class SessionError(PinbError):
    """A session cannot be used as asked."""


class SessionFileError(SessionError):
    """A file is not a usable Pi session.

    Attributes
    ----------
    path:
        The file concerned.
    line:
        1-based physical line number, when one line is to blame.
    reason:
        Why, in words that follow the file's name (``"no such file"``, ``"is a folder, not
        a session file"``): for a message that names the file its own way (a chat's
        link). The message itself when not given.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        reason: str | None = None,
    ):
        self.path = Path(path) if path is not None else None
        self.line = line
        self.reason = reason if reason is not None else message
        where = ""
        if path is not None:
            where = os.fspath(path)  # as given: a URL such as s3://b/k.jsonl stays whole
            if line is not None:
                where += f":{line}"
            where += ": "
        super().__init__(where + message)


class InvalidHeaderError(SessionFileError):
    """A non-empty file whose first JSON value is not a Pi session header."""


class UnsupportedVersionError(SessionFileError):
    """A session format pinb does not read (for example Pi's experimental version 4)."""


class EntryNotFoundError(SessionError, KeyError):
    """An entry id that is not in the session."""

    def __init__(self, entry_id: str | None, *, suggestions: list[str] | None = None):
        self.entry_id = entry_id
        self.suggestions = suggestions or []
        hint = f"; did you mean {', '.join(self.suggestions)}?" if self.suggestions else ""
        super().__init__(f"Entry {entry_id} not found{hint}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class InvalidEntryError(SessionError, ValueError):
    """An entry or message that does not validate against Pi's format."""


class SessionLockError(SessionError):
    """The session file's lock could not be taken in time."""


class NotPersistedError(SessionError):
    """The operation needs a session that lives in a file."""


class CompactionError(PinbError):
    """Compaction was requested but cannot be carried out."""


class SummaryCutError(CompactionError):
    """The summary's reply hit its output limit: Pi writes no compaction from a cut summary."""


class NothingToCompactError(CompactionError):
    """The active path holds nothing to summarize (already compacted, or too short)."""


class UserFileError(PinbError):
    """A file of the user's that pinb was asked to change (Pi's ``models.json``,
    ``settings.json``) cannot be: not valid JSON, read-only, or locked.

    Attributes
    ----------
    path:
        The file concerned.
    """

    def __init__(self, message: str, *, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        super().__init__(message)


class UserFileLockError(UserFileError):
    """Another writer (a running Pi, another pinb) held the file's lock for longer than pinb
    waits."""


class UsageError(PinbError, ValueError):
    """Bad arguments to a command-line command or a magic."""
