"""``pinb memory ...``, ``pinb rm FILE`` and ``pinb restore`` on the command line (no IPython)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

from ..errors import PinbError
from .output import say

if TYPE_CHECKING:
    from ..memory.records import MemoryRecord
    from ..memory.store import MemoryStore

__all__ = ["add_parser", "build_parser", "memory_command", "run"]

_WIDTH = 72


class _Kinds:
    """The note kinds of :mod:`pinb.memory.records`, as argparse ``choices``, read when a
    command checks or shows them: building the parser (``pinb --help``) loads no store.

    Arguments using it name a ``metavar``, or argparse would list the kinds right away.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def _values(self) -> tuple[str, ...]:
        from ..memory import records

        kinds: tuple[str, ...] = getattr(records, self._name)
        return kinds

    def __contains__(self, value: object) -> bool:
        return value in self._values()

    def __iter__(self) -> Iterator[str]:
        return iter(self._values())

    def __len__(self) -> int:
        return len(self._values())


_KINDS = _Kinds("KINDS")
_SAVE_KINDS = _Kinds("SAVE_KINDS")


def _line(record: MemoryRecord) -> str:
    text = " ".join(record.text.split())
    if len(text) > _WIDTH:
        text = text[: _WIDTH - 1] + "…"
    marks = []
    if record.tags:
        marks.append("#" + " #".join(record.tags))
    if record.kind == "observation" and record.proposed_kind:
        marks.append(f"→ {record.proposed_kind}?")
    if record.source_deleted:
        marks.append("source deleted")
    if record.deleted:
        marks.append(f"forgotten: {record.deleted_reason}")
    tail = f"  ({'; '.join(marks)})" if marks else ""
    return f"#{record.id:<5} {record.kind:<12} {record.updated_at[:10]}  {text}{tail}"


def _print_records(
    records: list[MemoryRecord], args: argparse.Namespace, out: IO[str], *, cite: bool = False
) -> None:
    """Records as lines (or JSON); with ``cite``, each with its citation and its source's."""
    if getattr(args, "json", False):
        data = [r.to_dict() for r in records]
        if cite:
            for item, record in zip(data, records, strict=True):
                item["source_cite"] = record.source_cite()
        say(json.dumps(data, indent=2, ensure_ascii=False), file=out)
        return
    if not records:
        say("(no memories)", file=out)
    for record in records:
        say(_line(record), file=out)
        if cite:
            source = record.source_cite()
            say(f"       {record.cite}" + (f"  from {source}" if source else ""), file=out)


def _add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kind",
        action="append",
        choices=_KINDS,
        metavar="KIND",
        help="only this kind (repeatable): %(choices)s",
    )
    parser.add_argument("--tag", action="append", help="only records with this tag (repeatable)")
    parser.add_argument("--limit", type=int, help="at most this many records")
    parser.add_argument("--json", action="store_true", help="records as JSON")


def _fill_memory_parser(memory: argparse.ArgumentParser) -> None:
    memory.add_argument(
        "--db", help="memory database (default <agentDir>/memory/pinb-memory.sqlite)"
    )
    memory.add_argument("--cwd", help="project folder (default: the current directory)")
    sub = memory.add_subparsers(dest="memory_command", metavar="COMMAND")

    listing = sub.add_parser("list", help="this project's notes, newest first (the default)")
    _add_filters(listing)
    listing.add_argument("--forgotten", action="store_true", help="include forgotten notes")
    listing.add_argument("--all-projects", action="store_true", help="every project")

    save = sub.add_parser("save", help="save a note")
    save.add_argument("text", nargs="+")
    save.add_argument(
        "--kind", default="note", choices=_SAVE_KINDS, metavar="KIND", help="%(choices)s"
    )
    save.add_argument("--tag", action="append", help="a tag (repeatable, or comma-separated)")

    recall = sub.add_parser("recall", help="search notes (BM25 ranking)")
    recall.add_argument("query", nargs="+")
    _add_filters(recall)

    forget = sub.add_parser("forget", help="forget a note (kept, with the reason, for the audit)")
    forget.add_argument("id", type=int)
    forget.add_argument("--reason", required=True)

    inject = sub.add_parser("inject", help="recalled notes in new sessions' system prompt")
    inject.add_argument(
        "state", nargs="?", choices=("on", "off", "status", "preview"), default="status"
    )
    inject.add_argument("--limit", type=int, help="notes injected (when turning on)")

    promote = sub.add_parser("promote", help="accept an observation as a note")
    promote.add_argument("id", type=int)
    promote.add_argument(
        "--kind",
        choices=_SAVE_KINDS,
        metavar="KIND",
        help="%(choices)s; default: the kind it proposed",
    )
    promote.add_argument("--text", help="reworded text")

    edit = sub.add_parser("edit", help="change a note's text, kind or tags")
    edit.add_argument("id", type=int)
    edit.add_argument("--text")
    edit.add_argument("--kind", choices=_KINDS, metavar="KIND", help="%(choices)s")
    edit.add_argument("--tags", help="comma-separated tags (replaces the old ones)")

    rm = sub.add_parser("rm", help="remove a session file (same as `pinb rm`)")
    _fill_rm_parser(rm)
    restore = sub.add_parser(
        "restore", help="bring a removed session back (same as `pinb restore`)"
    )
    _fill_restore_parser(restore)


def _fill_rm_parser(rm: argparse.ArgumentParser) -> None:
    rm.add_argument("files", nargs="+", metavar="FILE", help="session .jsonl file(s)")
    rm.add_argument("--dry-run", action="store_true", help="show what would change")


def _fill_restore_parser(restore: argparse.ArgumentParser) -> None:
    restore.add_argument(
        "names", nargs="*", metavar="NAME", help="original path, trash path, or session id"
    )
    restore.add_argument("--list", action="store_true", help="show what is in the trash")


def add_parser(subparsers: Any) -> None:
    """Register ``memory`` and ``rm`` on the ``pinb`` sub-command parsers.

    Both set ``func=run``, so ``args.func(args)`` dispatches to :func:`run`.

    Parameters
    ----------
    subparsers:
        What ``ArgumentParser.add_subparsers()`` returned.
    """
    memory = subparsers.add_parser(
        "memory",
        help="long-term memory: list, save, recall, forget, inject, promote",
        description="Project-scoped notes the agent and you can save, recall and forget.",
    )
    _fill_memory_parser(memory)
    memory.set_defaults(func=run, memory_entry="memory")
    rm = subparsers.add_parser(
        "rm",
        help="move a session to the trash (refused while someone holds it)",
        description="Move session files to <agentDir>/trash, never while a kernel, a Pi "
        "engine, a pinb turn or `pi --session FILE` holds one; forks are left as they are "
        "(their lineage follows the trash note), and memory records citing them are flagged.",
    )
    _fill_rm_parser(rm)
    rm.set_defaults(func=run, memory_entry="rm")
    restore = subparsers.add_parser(
        "restore",
        help="bring a session removed with `pinb rm` back from the trash",
        description="Move a removed session back to where it was (never over another file; "
        "what a Pi wrote to the old path after the removal is added to it). Without a name "
        "(or with --list), list the trash.",
    )
    _fill_restore_parser(restore)
    restore.set_defaults(func=run, memory_entry="restore")


def build_parser(prog: str = "pinb memory") -> argparse.ArgumentParser:
    """A stand-alone parser for the ``memory`` sub-commands (used by ``%pi memory``)."""
    parser = argparse.ArgumentParser(prog=prog, exit_on_error=False)
    _fill_memory_parser(parser)
    parser.set_defaults(func=run, memory_entry="memory")
    return parser


def _store(args: argparse.Namespace) -> MemoryStore:
    from ..memory.store import MemoryStore

    return MemoryStore(args.db) if getattr(args, "db", None) else MemoryStore()


def _rm(args: argparse.Namespace, out: IO[str]) -> int:
    from ..core.file.writers import holders
    from ..memory.sessions import find_forks, remove_session

    store = _store(args) if getattr(args, "db", None) else None
    for file in args.files:
        if args.dry_run:
            held = holders(file)
            if held:
                who = "; ".join(h.describe() for h in held)
                say(f"would refuse to move {file}: it is in use by {who}", file=out)
                continue
            say(f"would move {file} to the trash", file=out)
            for fork in find_forks(file):
                say(f"fork {fork} would still name it (its lineage is kept)", file=out)
            continue
        say(remove_session(file, store=store).summary(), file=out)
    return 0


def _restore(args: argparse.Namespace, out: IO[str]) -> int:
    from ..memory.sessions import removed_sessions, restore_session

    if args.list or not args.names:
        entries = removed_sessions()
        if not entries:
            say("the trash is empty", file=out)
        for entry in entries:
            say(
                f"{entry.removed_at[:19]}  {entry.original_path}  (in {entry.trash_path})", file=out
            )
        return 0
    store = _store(args) if getattr(args, "db", None) else None
    for name in args.names:
        say(restore_session(name, store=store).summary(), file=out)
    return 0


def _memory(args: argparse.Namespace, out: IO[str]) -> int:
    command = args.memory_command or "list"
    if command == "rm":
        return _rm(args, out)
    if command == "restore":
        return _restore(args, out)
    store = _store(args)
    project = store.ensure_project(args.cwd)
    if command == "list":
        records = store.records(
            project,
            kinds=getattr(args, "kind", None),
            tags=getattr(args, "tag", None),
            include_deleted=getattr(args, "forgotten", False),
            all_projects=getattr(args, "all_projects", False),
            limit=getattr(args, "limit", None),
        )
        _print_records(records, args, out)
    elif command == "save":
        record, created = store.save_once(
            " ".join(args.text), project=project, kind=args.kind, tags=args.tag
        )
        verb = "saved" if created else "already saved as"
        say(f"{verb} #{record.id} ({record.kind})", file=out)
    elif command == "recall":
        records = store.recall(
            " ".join(args.query),
            project=project,
            kinds=args.kind,
            tags=args.tag,
            limit=args.limit or 10,
        )
        _print_records(records, args, out, cite=True)
    elif command == "forget":
        record = store.forget(args.id, args.reason, project=project)
        say(f"forgot #{record.id}: {record.deleted_reason}", file=out)
    elif command == "promote":
        record = store.promote(args.id, args.kind, text=args.text, project=project)
        say(f"promoted #{record.id} to {record.kind}", file=out)
    elif command == "edit":
        record = store.edit(
            args.id, text=args.text, kind=args.kind, tags=args.tags, project=project
        )
        say(_line(record), file=out)
    elif command == "inject":
        return _inject(store, project, args, out)
    return 0


def _inject(store: MemoryStore, project: str, args: argparse.Namespace, out: IO[str]) -> int:
    if args.state in ("on", "off"):
        settings = store.set_injection(args.state == "on", project=project, limit=args.limit)
    else:
        settings = store.injection(project)
    if args.state == "preview":
        from ..memory.inject import memory_prompt_section

        section = memory_prompt_section(store, project, force=True, strict=True)
        say(section or "(no notes to inject)", file=out)
        return 0
    state = "on" if settings.enabled else "off"
    cap = f", up to {settings.limit} notes" if settings.limit else ""
    say(f"memory injection is {state} for this project{cap}", file=out)
    return 0


def run(args: argparse.Namespace, *, out: IO[str] | None = None) -> int:
    """Run a parsed ``memory`` or ``rm`` command; 0 on success, 1 on a pinb error.

    Errors are printed as one line on stderr, never as a traceback.
    """
    stream = out if out is not None else sys.stdout
    try:
        entry = getattr(args, "memory_entry", "memory")
        if entry == "rm":
            return _rm(args, stream)
        if entry == "restore":
            return _restore(args, stream)
        return _memory(args, stream)
    except PinbError as exc:
        say(f"pinb: {exc}", file=sys.stderr)
        return 1


def memory_command(argv: Sequence[str], *, out: IO[str] | None = None) -> int:
    """Parse and run ``memory`` arguments, e.g. ``["save", "Use tox", "--kind", "decision"]``.

    For ``%pi memory ...``: bad arguments print the usage and return 2 instead of exiting.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 2
    except argparse.ArgumentError as exc:
        say(f"pinb memory: {exc}", file=sys.stderr)
        return 2
    return run(args, out=out)
