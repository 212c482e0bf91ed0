"""The sidecar's tables: one row per session file (the listing), then the entries' full-text
index, built when a search needs it (:mod:`pinb.analysis.searching.index`)."""

from __future__ import annotations

import sqlite3

from .sidecar import SearchIndexError

__all__ = ["SCHEMA_VERSION", "TOKENIZER", "make_tables"]

#: Bumped whenever the tables change; an index of another version is rebuilt.
SCHEMA_VERSION = 6


# One row per session file (is_session = 0 for a .jsonl that is not one, so it is not
# read again): what a listing shows, kept by size and mtime, and where the listing's read
# of the file ended (list_*: the core's ListingMark), so a file that only grew is read
# from there. Then, built only when a search needs it, one row per searchable entry (with
# the byte offset of its line, so a snippet reads that line alone), the entries' text in
# FTS5 (same rowid), and the tools and files of tool calls for the tool: and file:
# filters; entries_key says which version of the file (size:mtime_ns) the session's
# entries come from (NULL: none yet), entries_size / entries_lines / entries_tail where
# those bytes ended (their size, line count and a digest of their last bytes), so a file
# that only grew is read from there too.
# The full-text index is contentless: it holds the words, not the text (the session files
# do), so it is smaller than the text; a hit's snippet is cut from its line, read again.
# Its rows are never deleted (FTS5 cannot without the old text): an entry that is gone
# leaves words that no longer join to an entry row (rowids are never reused), and the
# index is rebuilt when such words outnumber the live ones.
_SCHEMA = """
CREATE TABLE sessions(
  rowid INTEGER PRIMARY KEY,
  path TEXT UNIQUE NOT NULL,
  size INTEGER NOT NULL,
  mtime_ns INTEGER NOT NULL,
  is_session INTEGER NOT NULL,
  id TEXT, cwd TEXT, name TEXT, parent_session_path TEXT,
  created REAL, modified REAL, message_count INTEGER, first_message TEXT,
  list_file TEXT, list_end INTEGER, list_lines INTEGER, list_digest TEXT,
  list_latest INTEGER, list_first INTEGER,
  entries_key TEXT, entries_size INTEGER, entries_lines INTEGER, entries_tail TEXT
);
CREATE TABLE entries(
  rowid INTEGER PRIMARY KEY AUTOINCREMENT,
  session INTEGER NOT NULL,
  line INTEGER NOT NULL,
  offset INTEGER,
  entry_id TEXT, type TEXT NOT NULL, role TEXT, timestamp REAL,
  digest TEXT NOT NULL
);
CREATE INDEX entries_by_session ON entries(session);
CREATE INDEX entries_by_digest ON entries(digest);
CREATE TABLE entry_tools(entry INTEGER NOT NULL, tool TEXT NOT NULL);
CREATE INDEX entry_tools_by_entry ON entry_tools(entry);
CREATE TABLE entry_files(entry INTEGER NOT NULL, path TEXT NOT NULL);
CREATE INDEX entry_files_by_entry ON entry_files(entry);
"""
#: How the index splits text into words; a scan's checks use the same (:mod:`.scan`).
TOKENIZER = "tokenize='unicode61 remove_diacritics 2'"
_TEXTS = f"CREATE VIRTUAL TABLE entry_texts USING fts5(body, content='', {TOKENIZER})"
_SCHEMA += _TEXTS + ";\n"

_TABLES = ("sessions", "entries", "entry_tools", "entry_files", "entry_texts", "texts")

#: The session columns :func:`_info` reads, in its order (the text or ``''`` follows).
_SESSION_COLUMNS = (
    "s.rowid, s.path, s.size, s.mtime_ns, s.is_session, s.id, s.cwd, s.name,"
    " s.parent_session_path, s.created, s.modified, s.message_count, s.first_message"
)
#: The columns of a listing's mark, in :class:`ListingMark`'s order.
_MARK_COLUMNS = "s.list_end, s.list_lines, s.list_digest, s.list_file, s.list_latest, s.list_first"


def make_tables(db: sqlite3.Connection) -> None:
    """Drop the sidecar's tables (of any version) and make this version's."""
    for table in _TABLES:
        db.execute(f"DROP TABLE IF EXISTS {table}")  # names from the code
    try:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
    except sqlite3.OperationalError as exc:
        if "fts5" in str(exc).lower():
            raise SearchIndexError(
                "this Python's SQLite has no FTS5; full-text search needs it "
                "(listing still works with `pinb ls` without the index)"
            ) from exc
        raise
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
