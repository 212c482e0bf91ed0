"""``pinb search``, ``export``, ``import``, ``frames`` and ``compactions``: thin wrappers.

Importing this module loads no pandas; ``pinb frames`` loads it when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from ..errors import UsageError
from .output import say, write
from .sessions import open_session_file

__all__ = ["FRAME_KINDS", "add_parser"]

#: ``pinb frames`` kinds (the same as :data:`pinb.analysis.parquet.FRAME_KINDS`).
FRAME_KINDS = ("entries", "messages", "tool_calls", "compactions", "sessions", "usage")


def add_parser(subparsers: Any) -> None:
    """Register ``search``, ``export``, ``import`` and ``frames`` on the ``pinb`` sub-commands.

    Each parser's ``func`` takes the parsed arguments and returns an exit code; errors are
    raised as :class:`pinb.errors.PinbError` subclasses.
    """
    search = subparsers.add_parser(
        "search",
        help="full-text search over session entries, each hit cited as path:line#entry-id",
        description=(
            'Words must all occur in one entry; "exact phrase" (quote it for the shell: '
            """'"exact phrase"'), -excluded, refact* (a prefix), and filters role:user|"""
            "assistant|toolResult, tool:NAME, file:PATH, session:ID-PREFIX, after:DATE, "
            "before:DATE. Repeats and fork copies fold into one hit."
        ),
    )
    search.add_argument("text", nargs="+", help="the query (its words are joined by spaces)")
    search.add_argument("--all", action="store_true", help="every project, not only this folder")
    search.add_argument("--limit", type=int, default=20, help="at most this many hits")
    search.add_argument(
        "--no-fold", action="store_true", help="list repeats and fork copies as hits of their own"
    )
    search.add_argument("--json", action="store_true", help="one JSON list of hits")
    search.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="stop a search whose queries run longer (default: a minute; building the index "
        "first is not counted)",
    )
    search.set_defaults(func=cmd_search)

    export = subparsers.add_parser("export", help="a session as HTML, Markdown or a notebook")
    export.add_argument("file", help="the session .jsonl file")
    fmt = export.add_mutually_exclusive_group(required=True)
    fmt.add_argument("--html", dest="fmt", action="store_const", const="html")
    fmt.add_argument("--md", dest="fmt", action="store_const", const="md")
    fmt.add_argument("--ipynb", dest="fmt", action="store_const", const="ipynb")
    export.add_argument(
        "-o",
        "--output",
        help="write here; - for standard output (default: a new file in this folder named "
        "after the session)",
    )
    export.add_argument("--leaf", help="export the path to this entry (default: the leaf)")
    export.add_argument("--tree", action="store_true", help="every branch, not one path")
    export.set_defaults(func=cmd_export)

    imp = subparsers.add_parser("import", help="Claude Code or Codex transcripts as Pi sessions")
    imp.add_argument("format", choices=("claude", "codex"))
    imp.add_argument("src", help="a transcript file or a folder of them")
    imp.add_argument("--cwd", help="working directory to record (default: the transcript's)")
    imp.add_argument("-o", "--out-dir", help="folder for the new files (default: Pi's)")
    imp.add_argument(
        "--include-sidechains", action="store_true", help="Claude Code: keep sub-agent lines"
    )
    imp.set_defaults(func=cmd_import)

    frames = subparsers.add_parser(
        "frames",
        help="a frame of many sessions written to Parquet (needs pinb[parquet])",
        description="One frame of every session of SOURCE, written as typed Parquet columns.",
    )
    frames.add_argument("kind", choices=FRAME_KINDS, help="what one row stands for")
    frames.add_argument(
        "source", nargs="*", help="session files, folders or globs (default: this folder's)"
    )
    frames.add_argument("--all", action="store_true", help="every project's sessions")
    frames.add_argument("--parquet", required=True, metavar="OUT", help="the Parquet file to write")
    frames.add_argument(
        "--dask",
        action="store_true",
        help="read with dask; OUT is a folder with one file per partition",
    )
    frames.set_defaults(func=cmd_frames)

    compactions = subparsers.add_parser(
        "compactions",
        help="every compaction of a session: what its summary kept of the span it replaced",
        description=(
            "For each compaction entry: the facts of the entries it summarized (files, "
            "commands, errors, instructions, decisions, identifiers, numbers), each "
            "verbatim, paraphrased or lost in the summary and whether the kept messages "
            "still carry it, cited as path:line#entry-id; recall by kind and one weighted "
            "score. Offline: a match of words, not of meaning."
        ),
    )
    compactions.add_argument("file", help="the session .jsonl file")
    compactions.add_argument(
        "--json",
        action="store_true",
        help="one JSON list, one object per compaction (its shape: docs/retention.md)",
    )
    compactions.add_argument(
        "--rows", type=int, default=40, help="facts listed per section in the text output"
    )
    compactions.set_defaults(func=cmd_compactions)


def cmd_search(args: argparse.Namespace) -> int:
    """``pinb search QUERY... [--all] [--limit N] [--no-fold] [--json] [--timeout S]``.

    The first search of a folder reads the session files while the index is built in the
    background: its hits are printed as they are found (``--json``: all at the end).
    """
    from ..analysis.searching.hits import SearchHit, SearchResults
    from ..analysis.searching.index import SEARCH_TIMEOUT, search
    from ..core.file.paths import sessions_dir_for

    text = " ".join(args.text)
    folder = None if args.all else sessions_dir_for(os.getcwd())
    timeout = args.timeout if args.timeout is not None else SEARCH_TIMEOUT
    progress = _Progress()
    shown: list[str] = []
    lines = SearchResults(query=text)

    def show(hit: SearchHit) -> None:
        progress.clear()
        shown.append(hit.cite)
        say(lines.hit_text(hit, full_paths=True))
        sys.stdout.flush()  # each hit as it comes, to a pipe too

    hits = search(
        text,
        folder,
        limit=args.limit,
        fold=not args.no_fold,
        progress=progress,
        timeout=timeout,
        on_hit=None if args.json else show,
    )
    if hits.source == "scan" and not args.json:
        return _scanned(hits, shown, args.all)
    if args.json:
        payload = [
            {
                "cite": hit.cite,
                "path": str(hit.path),
                "line": hit.line,
                "entryId": hit.entry_id,
                "role": hit.role,
                "timestamp": hit.timestamp.isoformat() if hit.timestamp else None,
                "id": hit.info.id,
                "cwd": hit.info.cwd,
                "name": hit.info.name,
                "modified": hit.info.modified.isoformat(),
                "firstMessage": hit.info.first_message,
                "snippet": hit.snippet,
                "copies": [str(c) for c in hit.copies],
            }
            for hit in hits
        ]
        say(json.dumps(payload, ensure_ascii=False, indent=1))
        return 0
    if not hits:
        where = "" if args.all else " in this folder's sessions (try --all)"
        say(f"nothing matches {text!r}{where}")
        return 1
    say(hits.to_text(full_paths=True))  # a terminal opens whole paths
    return 0


def _scanned(hits: Any, shown: list[str], everywhere: bool) -> int:
    """After the hits a scan printed as it found them: where an earlier copy was found
    later (the answer cites it), then how they were found."""
    for hit in hits:
        if hit.cite in shown:
            continue
        printed = [str(c) for c in hit.copies if str(c) in shown]
        if printed:
            say(f"  {printed[0]} (above) is a copy; the earliest is {hit.cite}")
    if not hits:
        where = "" if everywhere else " in this folder's sessions (try --all)"
        building = "; the search index is being built" if hits.building is not None else ""
        say(f"nothing matches {hits.query!r}{where} ({hits.scanned:,} read{building})")
        return 1
    folded = sum(len(h.copies) for h in hits)
    say(
        f"{len(hits)} hit(s) for {hits.query!r}"
        + (f" ({folded} repeat(s) and fork copies folded in)" if folded else "")
        + f", {hits.note}"
    )
    return 0


class _Progress:
    """The terminal's progress bar, loaded only once work has gone on for a second (most
    searches are done before: then the drawing code is never imported)."""

    def __init__(self) -> None:
        self._started: float | None = None
        self._bar: Any = None

    def __call__(self, what: str, done: int, total: int) -> None:
        import time

        now = time.monotonic()
        if self._started is None:
            self._started = now
        if self._bar is None:
            if now - self._started < 1.0 or done >= total:
                return
            from ..render.progress import ProgressBar

            self._bar = ProgressBar(after=0) if sys.stderr.isatty() else (lambda *_: None)
        self._bar(what, done, total)

    def clear(self) -> None:
        """Clear the bar's line before text is printed over it (it is drawn again)."""
        if self._bar is not None and sys.stderr.isatty():
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def cmd_export(args: argparse.Namespace) -> int:
    """``pinb export FILE --html|--md|--ipynb [-o OUT] [--leaf ID] [--tree]``."""
    from ..analysis.export import write_export
    from ..core.context.build import UNSET

    leaf = args.leaf if args.leaf is not None else UNSET
    session = open_session_file(args.file)
    if args.output == "-":
        if args.fmt != "md" and sys.stdout.isatty():
            # Pages of markup in a terminal help nobody: say how to get what was meant.
            raise UsageError(
                f"{args.fmt} export to a terminal refused: leave out -o to write a file, "
                f"or use -o - with a pipe or a redirect (pinb export FILE --{args.fmt} -o - > "
                f"out.{args.fmt})"
            )
        write(write_export(session, args.fmt, None, leaf=leaf, whole_tree=args.tree))
        return 0
    from ..analysis.export import default_export_path, shown_path

    chosen = args.output is None
    out = default_export_path(session, args.fmt) if chosen else args.output
    write_export(session, args.fmt, out, leaf=leaf, whole_tree=args.tree, make_folder=chosen)
    say(f"wrote {shown_path(out)}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """``pinb import claude|codex SRC [--cwd DIR] [-o DIR]``."""
    from ..analysis.importers import import_claude, import_codex
    from ..analysis.importers._pi import subagent_files

    if args.format == "claude":
        results = import_claude(
            args.src,
            cwd=args.cwd,
            out_dir=args.out_dir,
            include_sidechains=args.include_sidechains,
        )
    else:
        results = import_codex(args.src, cwd=args.cwd, out_dir=args.out_dir)
    failed = 0
    for result in results:
        if result.error is not None:
            failed += 1
            say(f"not imported: {result.error}", file=sys.stderr)
            continue
        if not result.created:
            say(f"already imported: {result.source} -> {result.path}")
        else:
            skipped = ", ".join(f"{n} {kind}" for kind, n in sorted(result.skipped.items()))
            say(
                f"imported {result.source} -> {result.path} ({result.entries} entries"
                f"{'; not carried over: ' + skipped if skipped else ''})"
            )
        for note in result.notes:
            say(f"  note: {note}")
    if args.format == "claude" and not args.include_sidechains:
        left = len(subagent_files(args.src))
        if left:
            say(f"note: {left} sub-agent transcript(s) left out; --include-sidechains imports them")
    return 1 if failed else 0


def cmd_frames(args: argparse.Namespace) -> int:
    """``pinb frames KIND [SOURCE...] [--all] --parquet OUT [--dask]``."""
    from ..core.file.paths import sessions_dir_for, sessions_root

    source: Any = list(args.source) or (
        sessions_root() if args.all else sessions_dir_for(os.getcwd())
    )
    if args.dask:
        from ..analysis.dask import to_parquet
        from ..errors import UsageError

        if args.kind == "usage":
            raise UsageError("--dask reads the frames of pinb.analysis.dask; usage is not one")
        target = to_parquet(args.kind, source, args.parquet)
        say(f"wrote {args.kind} to {target} (one file per partition)")
        return 0
    from ..analysis.parquet import frame_of
    from ..analysis.parquet import to_parquet as write_frame

    frame = frame_of(args.kind, source)
    write_frame(frame, args.parquet)
    sessions = frame["id" if args.kind == "sessions" else "session_id"].nunique()
    say(f"wrote {len(frame):,} {args.kind} row(s) of {sessions} session(s) to {args.parquet}")
    return 0


def cmd_compactions(args: argparse.Namespace) -> int:
    """``pinb compactions FILE [--json] [--rows N]``."""
    from ..analysis.retention.report import iter_session_retention
    from ..core.js.jsontext import json_text
    from ..views.compaction.given_back import pinb_added, pinb_additions
    from ..views.compaction.retention import retention_text

    session = open_session_file(args.file)
    # Each report printed as it is made and let go: one compaction's span in memory.
    shown = 0
    for report in iter_session_retention(session):
        entry = session[report.compaction_id]
        if args.json:
            # The list ``json_text(reports, indent=1)`` prints, an item at a time; "pinb":
            # what pinb kept in the summary and gave back after it.
            value = {**report.to_dict(), "pinb": pinb_additions(session, entry)}
            item = json_text(value, indent=1).replace("\n", "\n ")
            write(("[\n " if not shown else ",\n ") + item)
        else:
            text = retention_text(report, max(0, args.rows), pinb_added(session, entry))
            write(("\n\n" if shown else "") + text)
        shown += 1
    if args.json:
        write("\n]\n" if shown else "[]\n")
        return 0
    masked = _maskings_text(session)
    if shown:
        write("\n")
    elif not masked:
        say(f"no compactions in {args.file}")
    if masked:
        write(("\n" if shown else "") + masked + "\n")
    return 0


def _maskings_text(session: Any) -> str:
    """The maskings of a file (pinb's mask-first compactions): what each masked, what it took
    off, and that no summary was written (``""`` without any)."""
    from ..core.compaction.masking import masking_events

    events = masking_events(session)
    if not events:
        return ""
    lines = [
        f"{len(events)} masking{'s' if len(events) != 1 else ''} (old tool results replaced "
        "by a one-line placeholder; the file keeps them; no summary written):"
    ]
    for event in events:
        lines.append(
            f"  context edits {event.first_edit_id}…{event.last_edit_id}: {event.results:,} "
            f"tool results masked, {event.tokens_saved:,} tokens off (chars/4), 1 summary "
            "call avoided"
        )
    return "\n".join(lines)
