"""``pinb ls``, ``tree``, ``context``, ``tokens``, ``compact``, ``uncompact`` and ``goto``: the session commands."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PinbError, SessionFileError, UsageError
from .output import say

if TYPE_CHECKING:
    from ..core import Session
    from ..core.file.listing import SessionInfo

__all__ = ["add_parser", "open_session_file"]

_PREVIEW = 72


# -- commands -------------------------------------------------------------------------------


def _cmd_ls(args: argparse.Namespace) -> int:
    # The sidecar index (pinb's own cache; session files are never touched) makes listing
    # thousands of sessions fast once warm.
    from ..analysis.searching.index import list_indexed
    from ..core.describe import one_line
    from ..core.file.paths import sessions_dir_for
    from ..render.progress import progress_for

    infos: list[SessionInfo] = list_indexed(
        None if args.all else Path(args.dir) if args.dir else sessions_dir_for(Path.cwd()),
        progress=progress_for(),
    )
    if args.json:
        say(json.dumps([_info_json(i) for i in infos], ensure_ascii=False, indent=1))
        return 0
    if not infos:
        say("no sessions" + ("" if args.all else " for this folder (try --all)"))
        return 0
    for info in infos:
        title = info.name or info.first_message
        say(
            f"{info.modified:%Y-%m-%d %H:%M}  {info.message_count:5d} msgs  "
            f"{one_line(title, 50):50}  {info.path}"
        )
    return 0


def _info_json(info: SessionInfo) -> dict[str, Any]:
    data = info.to_dict()
    for key in ("created", "modified"):
        value = data[key]
        data[key] = value.isoformat() if value is not None else None
    return data


def open_session_file(file: str) -> Session:
    """Open a session file for a command, refusing what is not one.

    The one check every opening of a named file makes (:func:`pinb.core.opening.open_session_file`:
    a regular file, readable, a session header; a FIFO or ``/dev/zero`` refused, never
    waited on), and an empty file is refused too: Pi would write a new session into it,
    but showing or exporting it would invent an id and a working directory.
    """
    from ..core.opening import open_session_file as open_named

    session = open_named(file)
    loaded = session.loaded
    if loaded is not None and loaded.blank:
        raise SessionFileError("empty file: no session header, nothing to show", path=file)
    return session


def _open(args: argparse.Namespace) -> Session:
    return open_session_file(args.file)


def _legacy_notice(session: Session) -> None:
    """Say (on stderr) when the file predates version 3: its ids are pinb's, not the file's."""
    from ..core.format.entries import MISSING

    loaded = session.loaded
    before = loaded.version_before if loaded is not None else None
    if before is None:
        return
    version = 1 if before is MISSING else before
    if isinstance(version, int) and not isinstance(version, bool) and version < 3:
        say(
            f"note: {session.path} is a legacy version {version} session, read as version 3 "
            "(the file is upgraded only when something is appended)",
            file=sys.stderr,
        )


def _leaf(args: argparse.Namespace, session: Session) -> Any:
    if getattr(args, "leaf", None) is None:
        return session.leaf_id
    if args.leaf not in session:
        raise PinbError(f"{args.file}: no entry with id {args.leaf!r}")
    return args.leaf


def _cmd_tree(args: argparse.Namespace) -> int:
    from ..views.tree import TreeView  # the render layer's picture, as text

    session = _open(args)
    _legacy_notice(session)
    rows = args.rows if args.rows > 0 else len(session.entries) + 1
    say(TreeView(session, max_rows=rows, png=False).to_text())
    _print_problems(session)
    return 0


def _print_problems(session: Session) -> None:
    for problem in session.problems:
        say(f"warning: {problem}", file=sys.stderr)


def _cmd_context(args: argparse.Namespace) -> int:
    from ..core import convert_to_llm
    from ..core.describe import message_preview
    from ..core.js.jsontext import json_text, value_text

    session = _open(args)
    _legacy_notice(session)
    context = session.build_context(_leaf(args, session))
    messages = convert_to_llm(context.messages) if args.llm else context.messages
    if args.json:
        payload: Any = messages if args.llm else context.to_wire()
        say(json_text(payload, indent=1))  # any depth: session values may nest 1,000s deep
        return 0
    model = context.model or {}
    say(
        f"{len(messages)} messages · model {value_text(model.get('provider', '?'))}/"
        f"{value_text(model.get('modelId', '?'))} · thinking {value_text(context.thinking_level)}"
    )
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else "?"
        say(f"[{value_text(role)}] {message_preview(message, _PREVIEW)}")
    _print_problems(session)
    return 0


def _window(args: argparse.Namespace, context: Any) -> tuple[int | None, str]:
    """The context window by the one rule (:func:`pinb.llm.window.resolve_window`):
    ``--window``, else the registry's entry for the model the session recorded."""
    from ..llm.window import resolve_window  # only here: the LLM layer is heavier

    found = resolve_window(setting=getattr(args, "window", None), context=context)
    return found.tokens, found.source


def _cmd_tokens(args: argparse.Namespace) -> int:
    from ..core import load_compaction_settings
    from ..core.context.accounting import context_usage

    session = _open(args)
    context = session.build_context(_leaf(args, session))
    window, source = _window(args, context)
    usage = context_usage(
        context, window=window, window_source=source,
        settings=load_compaction_settings(session.cwd or None),
    )  # fmt: skip
    if args.json:
        say(json.dumps(usage.to_dict(), indent=1))
        return 0
    say(f"context: {usage.describe()}")
    say(
        f"chars/4 estimate of all {usage.messages:,} messages: {usage.estimated_tokens:,}, by role:"
    )
    width = max((len(role) for role in usage.by_role), default=4)
    for role, tokens in sorted(usage.by_role.items(), key=lambda kv: -kv[1]):
        say(f"  {role:{width}}  {tokens:>10,}")
    return 0


def _cmd_compact(args: argparse.Namespace) -> int:
    from ..agent.compact import compact_to_fit
    from ..core import UNSET, ExtractiveSummarizer, load_compaction_settings
    from ..core.compaction.operations import plan_to_fit
    from ..llm.limits import limit_margin

    session = _open(args)
    # Fitted to the window, as %pi compact, %pi whatif and the agent fit theirs: one plan.
    window, _ = _window(args, session.build_context())
    settings = load_compaction_settings(session.cwd or None).fit_window(window)
    if args.mask or (args.offline and settings.strategy == "mask-first"):
        return _compact_masking(args, session, settings, window)
    if args.plan:
        if args.leaf is not None and args.leaf not in session:
            raise PinbError(f"{args.file}: no entry with id {args.leaf!r}")
        plan = plan_to_fit(
            session,
            settings,
            context_window=window,
            margin=limit_margin(window) if window else 0,
            leaf_id=args.leaf if args.leaf else UNSET,
        )
        report = plan.report
        if report is None:
            # "Nothing to compact" answers the question --plan asks: not an error.
            reason = plan.nothing or "Nothing to compact"
            if args.json:
                say(json.dumps({"nothingToCompact": True, "reason": reason}, indent=1))
            else:
                say(reason)
            return 0
        if args.json:
            say(json.dumps(_report_json(report), ensure_ascii=False, indent=1))
            return 0
        say(f"would summarize {len(report.summarized_ids)} entries and keep {len(report.kept_ids)}")
        say(
            f"first kept entry: {report.first_kept_entry_id}"
            + (" (splits a turn)" if report.is_split_turn else "")
        )
        say(plan.describe_keep())
        say(
            f"context: {report.tokens_before} tokens now (Pi's count); kept part ≈ {report.tokens_after}"
        )
        _print_files(report.read_files, report.modified_files)
        return 0
    if not args.offline:
        raise UsageError(
            "pinb compact needs --plan or --offline (model summaries run from the notebook: %pi compact)"
        )
    if args.no_keep_facts:
        settings = dataclasses.replace(settings, keep_facts=False)
    # One turn: what others appended is read first, and said, before the plan is made.
    with session.turn("pinb compact") as turn:
        turn.goto = f"pinb goto {args.file}"
        note = turn.start_note()
        if note:
            say(f"note: {note}")
        report = compact_to_fit(
            session, ExtractiveSummarizer(), args.instructions, settings, context_window=window
        )
    if args.json:
        say(json.dumps(_report_json(report), ensure_ascii=False, indent=1))
        return 0
    assert report.entry is not None
    say(
        f"appended compaction {report.entry.id}: summarized {len(report.summarized_ids)} entries, "
        f"kept {len(report.kept_ids)}; ≈{report.estimated_before} → {report.tokens_after} tokens"
        + (f" ({report.keep_note})" if report.keep_note else "")
    )
    if report.kept_facts is not None:
        from ..views.compaction.given_back import kept_facts_brief

        say(kept_facts_brief(report.summary) or "pinb kept no facts: the summary lost none")
    return 0


def _cmd_uncompact(args: argparse.Namespace) -> int:
    from ..core.compaction.lost import DEFAULT_GIVE_BACK_KINDS, parse_kinds
    from ..core.compaction.uncompact import UNCOMPACT_BUDGET, uncompact
    from ..views.compaction.given_back import given_back_text

    session = _open(args)
    try:
        kinds = parse_kinds(args.kinds, DEFAULT_GIVE_BACK_KINDS)
    except ValueError as exc:
        raise UsageError(f"pinb uncompact --kinds: {exc}") from exc
    if args.id is not None and args.id not in session:
        raise PinbError(
            f"{args.file}: no entry with id {args.id!r} (`pinb compactions FILE` lists them)"
        )
    given = uncompact(
        session,
        args.id,
        kinds=kinds,
        budget=UNCOMPACT_BUDGET if args.budget is None else args.budget,
        dry_run=args.dry_run,
        writer="pinb uncompact",
    )
    if args.json:
        say(json.dumps(given.to_dict(), ensure_ascii=False, indent=1))
    else:
        say(given_back_text(given))
    return 0


def _compact_masking(
    args: argparse.Namespace, session: Any, settings: Any, window: int | None
) -> int:
    """``pinb compact --mask`` (or ``--offline`` under the mask-first strategy)."""
    from ..agent.compact import mask_or_compact
    from ..core import ExtractiveSummarizer
    from ..core.compaction.masking import MaskReport, plan_masking
    from ..errors import NothingToCompactError

    if args.leaf is not None:
        raise UsageError("pinb compact --mask works at the session's leaf (no --leaf)")
    if args.plan:
        report = plan_masking(session, settings, context_window=window)
        if args.json:
            say(json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
        else:
            say(report.describe() + (f": {report.note}" if report.note else ""))
        return 0
    with session.turn("pinb compact") as turn:
        turn.goto = f"pinb goto {args.file}"
        note = turn.start_note()
        if note:
            say(f"note: {note}")
        try:
            done = mask_or_compact(
                session,
                ExtractiveSummarizer() if args.offline else None,
                args.instructions,
                settings,
                context_window=window,
                mask=True,
            )
        except NothingToCompactError as exc:
            if args.offline or "masking is not enough" not in str(exc):
                raise
            raise NothingToCompactError(
                f"{args.file}: {exc}; add --offline to write a summary instead"
            ) from None
    if not isinstance(done, MaskReport):
        if args.json:
            say(json.dumps(_report_json(done), ensure_ascii=False, indent=1))
            return 0
        assert done.entry is not None
        say(f"masking was not enough ({done.masking_note}), so a summary was written:")
        say(
            f"appended compaction {done.entry.id}: summarized {len(done.summarized_ids)} "
            f"entries, kept {len(done.kept_ids)}; ≈{done.estimated_before} → {done.tokens_after} tokens"
        )
        return 0
    if args.json:
        say(json.dumps(done.to_dict(), ensure_ascii=False, indent=1))
        return 0
    edits = len(done.edit_ids)
    say(
        f"appended {edits} context edit{'s' if edits != 1 else ''}: {done.describe()}"
        + (f" — {done.note}" if done.note else "")
    )
    if window is None:
        say("no context window known (--window N): every old tool result was masked")
    say(f"the originals stay in {args.file}: recall, %pi goto ID, or pinb context --leaf ID")
    return 0


def _report_json(report: Any) -> dict[str, Any]:
    return {
        "entryId": report.entry.id if report.entry is not None else None,
        "firstKeptEntryId": report.first_kept_entry_id,
        "tokensBefore": report.tokens_before,
        "estimatedBefore": report.estimated_before,
        "tokensAfter": report.tokens_after,
        "beforeByRole": report.before_by_role,
        "afterByRole": report.after_by_role,
        "summarizedIds": report.summarized_ids,
        "keptIds": report.kept_ids,
        "isSplitTurn": report.is_split_turn,
        "readFiles": report.read_files,
        "modifiedFiles": report.modified_files,
        "summary": report.summary,
        # What pinb added to the summary: its kept-facts section (null: Pi's exact text).
        "keptFacts": (
            {
                "facts": [f.to_dict() for f in report.kept_facts.facts],
                "tokens": report.kept_facts.tokens,
                "omitted": report.kept_facts.omitted,
            }
            if report.kept_facts is not None
            else None
        ),
    }


def _print_files(read_files: list[Any], modified_files: list[Any]) -> None:
    from ..core.js.jsontext import value_text

    # Pi's file tracking keeps a tool's path argument as it was, whatever its type.
    if read_files:
        say("read:     " + ", ".join(value_text(f) for f in read_files))
    if modified_files:
        say("modified: " + ", ".join(value_text(f) for f in modified_files))


def _cmd_goto(args: argparse.Namespace) -> int:
    from ..core import ExtractiveSummarizer, navigate

    session = _open(args)
    if args.summarize and not args.offline:
        raise UsageError("pinb goto --summarize needs --offline here (model summaries: %pi goto)")
    report = navigate(
        session,
        args.id,
        summarize=args.summarize,
        summarizer=ExtractiveSummarizer() if args.summarize else None,
        instructions=args.instructions,
        label=args.label,
    )
    say(f"leaf: {report.old_leaf_id} → {report.new_leaf_id}")
    if report.summary_entry is not None:
        say(f"branch summary {report.summary_entry.id} covers {len(report.summarized_ids)} entries")
    if report.editor_text is not None:
        say("text of the selected message (to send again):")
        say(report.editor_text)
    return 0


# -- wiring ---------------------------------------------------------------------------------


def add_parser(sub: Any) -> None:
    """Register ``ls``, ``tree``, ``context``, ``tokens``, ``compact``, ``uncompact`` and ``goto``."""
    ls = sub.add_parser("ls", help="list sessions of this folder (or all projects)")
    ls.add_argument("--all", action="store_true", help="every project under the agent dir")
    ls.add_argument("--dir", help="a session folder to list instead")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_cmd_ls)

    tree = sub.add_parser(
        "tree", help="the entry tree of a session file: one row per entry, the active path marked"
    )
    tree.add_argument("file")
    tree.add_argument(
        "--rows", type=int, default=300, help="rows before side branches fold (0: no limit)"
    )
    tree.set_defaults(func=_cmd_tree)

    context = sub.add_parser("context", help="what the model sees from a leaf")
    context.add_argument("file")
    context.add_argument("--leaf", help="entry id (default: the session's leaf)")
    context.add_argument("--llm", action="store_true", help="after convert_to_llm")
    context.add_argument("--json", action="store_true", help="Pi-shaped JSON")
    context.set_defaults(func=_cmd_context)

    tokens = sub.add_parser("tokens", help="token estimate of the context at a leaf")
    tokens.add_argument("file")
    tokens.add_argument("--leaf")
    tokens.add_argument("--window", type=int, help="the model's context window, in tokens")
    tokens.add_argument("--json", action="store_true")
    tokens.set_defaults(func=_cmd_tokens)

    comp = sub.add_parser("compact", help="plan or append a compaction")
    comp.add_argument("file")
    mode = comp.add_mutually_exclusive_group()
    mode.add_argument("--plan", action="store_true", help="show what would be summarized and kept")
    mode.add_argument(
        "--offline", action="store_true", help="compact with the extractive summarizer"
    )
    comp.add_argument(
        "--mask",
        action="store_true",
        help="mask old tool results first (context edits, no summary); a summary only when "
        "that cannot get under the threshold, and with --offline",
    )
    comp.add_argument("--leaf", help="plan from this entry instead of the leaf")
    comp.add_argument("--instructions", help="extra focus for the summary")
    comp.add_argument("--window", type=int, help="the model's context window, in tokens")
    comp.add_argument(
        "--no-keep-facts",
        action="store_true",
        help="write Pi's exact summary, without pinb's cited kept-facts section",
    )
    comp.add_argument("--json", action="store_true")
    comp.set_defaults(func=_cmd_compact)

    unc = sub.add_parser(
        "uncompact",
        help="give back, as one cited message the model reads, what a compaction lost",
    )
    unc.add_argument("file")
    unc.add_argument("--id", help="a compaction on the current path (default: the latest)")
    unc.add_argument(
        "--kinds",
        help="comma-separated: files, commands, errors, instructions, decisions, identifiers, "
        "numbers, next (default: files,commands,errors,instructions)",
    )
    unc.add_argument(
        "--budget",
        type=int,
        # The default is the core's (UNCOMPACT_BUDGET), read when the command runs: the
        # parser is built for every `pinb` command and imports nothing.
        help="the most the message may cost, chars/4 tokens (default 2,000)",
    )
    unc.add_argument("--dry-run", action="store_true", help="say what would be given back")
    unc.add_argument("--json", action="store_true")
    unc.set_defaults(func=_cmd_uncompact)

    goto = sub.add_parser("goto", help="move the leaf (optionally leaving a branch summary)")
    goto.add_argument("file")
    goto.add_argument("id")
    goto.add_argument("--summarize", action="store_true")
    goto.add_argument("--offline", action="store_true", help="use the extractive summarizer")
    goto.add_argument("--instructions")
    goto.add_argument("--label")
    goto.set_defaults(func=_cmd_goto)
