"""Carrying out compactions and branch switches on a session, with a report of what changed.

Planning is in :mod:`pinb.core.compaction.plan` and :mod:`pinb.core.compaction.branch`; the summarizer
is passed in (:mod:`pinb.core.compaction.summarize`), never imported from the LLM layer.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from ...errors import EntryNotFoundError, NothingToCompactError, UsageError
from ..context.accounting import estimated_by_role
from ..context.build import UNSET, SessionContext, convert_to_llm
from ..context.tokens import (
    CompactionSettings,
    context_tokens_of_usage,
    estimate_context_tokens,
    estimate_projected_tokens,
    estimate_tokens,
    should_compact,
)
from ..file.paths import read_settings
from ..forks import user_text
from ..format.target import Pi
from ..js.wire import js_date_ms
from ..session import Session
from .branch import (
    BRANCH_SUMMARY_PREAMBLE,
    NO_CONTENT_SUMMARY,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from .fileops import format_file_operations
from .lost import (
    MUST_KEEP,
    LostFacts,
    cite_name,
    earlier_kept_facts,
    kept_facts_section,
    lost_facts,
    section_budget,
    without_kept_facts,
)
from .plan import CompactionPreparation, prepare_compaction, serialize_conversation
from .reports import BranchReport, CompactionReport
from .span import split_at_cut, split_with_messages
from .summarize import Summarizer

__all__ = [
    "BRANCH_SUMMARY_RESERVE",
    "SPLIT_TURN_SEPARATOR",
    "CompactionPlan",
    "compact",
    "compaction_due",
    "entry_id",
    "fit_budget",
    "load_compaction_settings",
    "navigate",
    "plan_compaction",
    "plan_to_fit",
    "summary_cap",
    "trigger_tokens",
]

SPLIT_TURN_SEPARATOR: Final = "\n\n---\n\n**Turn Context (split turn):**\n\n"
NO_PRIOR_HISTORY: Final = "No prior history."
#: ``branchSummary.reserveTokens``: subtracted from the window for the branch budget.
BRANCH_SUMMARY_RESERVE: Final = 16384
DEFAULT_WINDOW: Final = 128_000


def _ids(entries: Sequence[Any]) -> list[str]:
    return [str(e.id) for e in entries]


def _prepare(session: Session, settings: CompactionSettings, leaf_id: Any) -> CompactionPreparation:
    path = session.path_to(leaf_id)
    if path and path[-1].type == "compaction":
        raise NothingToCompactError("Already compacted: the leaf is a compaction entry")
    prepared = prepare_compaction(path, settings, pi=session.pi)
    if prepared is None or prepared.is_empty:
        # Pi's words, then why: the cut keeps the most recent keepRecentTokens (chars/4).
        held = sum(
            estimate_tokens(m, pi=session.pi) for m in session.build_context(leaf_id).messages
        )
        keep = settings.keep_recent_tokens
        why = (
            f"its ≈{held:,} tokens (chars/4) fit in the {keep:,} recent tokens a compaction "
            "keeps (keepRecentTokens)"
            if held <= keep
            else f"keeping its last ≈{keep:,} tokens (keepRecentTokens) leaves no earlier "
            "turn to summarize"
        )
        raise NothingToCompactError(f"Nothing to compact (session too small): {why}")
    return prepared


def plan_compaction(
    session: Session, settings: CompactionSettings | None = None, *, leaf_id: Any = UNSET
) -> CompactionReport:
    """What a compaction would summarize and keep, without writing anything.

    The report's ``estimated_after`` counts the kept messages only (the summary is not
    written yet).

    Raises
    ------
    NothingToCompactError
        The leaf is a compaction, or nothing would be summarized.
    """
    settings = settings or CompactionSettings()
    prepared = _prepare(session, settings, leaf_id)
    context = session.build_context(leaf_id)
    span = split_at_cut(context, prepared.first_kept_entry_id)
    kept_entries = {id(e) for e in prepared.kept_entries}
    kept = SessionContext(
        messages=[
            m
            for m, source in zip(context.messages, context.sources, strict=True)
            if id(source) in kept_entries and source.type != "compaction"
        ],
        pi=session.pi,
    )
    read_files, modified_files = prepared.file_ops.file_lists()
    return CompactionReport(
        entry=None,
        summary="",
        first_kept_entry_id=str(prepared.first_kept_entry_id),
        tokens_before=prepared.tokens_before,
        before_by_role=estimated_by_role(context),
        after_by_role=estimated_by_role(kept),
        summarized_ids=span.summarized_ids,
        kept_ids=span.kept_ids,
        read_files=read_files,
        modified_files=modified_files,
        is_split_turn=prepared.is_split_turn,
        previous_compaction_id=_previous_id(prepared),
        keep_recent_tokens=settings.keep_recent_tokens,
    )


def summary_cap(window: int) -> int:
    """The longest summary pinb asks for on ``window``: a quarter of it (at least 64 tokens)."""
    return max(64, window // 4)


def fit_budget(
    context: SessionContext,
    settings: CompactionSettings,
    context_window: int | None,
    margin: int = 0,
) -> tuple[CompactionSettings, int | None, str]:
    """Settings and a summary length with which a compaction ends below the threshold.

    What stays after a compaction is the system prompt and tools (which no compaction
    shrinks), the summary and the kept messages. On a small window the first can take
    half of it: a summary of a quarter of the window beside a quarter kept would end
    above the threshold, and the next prompt would compact again. When they do not fit,
    the room left below the threshold (less ``margin``, the chars/4 estimate's error) is
    shared, a third for the summary and the rest kept. Large windows are left to the
    settings (``None``: no cap of pinb's).

    Returns
    -------
    (settings, summary_tokens, note)
        The settings to plan with, the longest summary to ask for, and why the keep
        changed (``""``: it did not).
    """
    if not context_window:
        return settings, None, ""
    system = context.system_message()
    fixed = estimate_tokens(system, pi=context.pi) if system is not None else 0
    threshold = int(settings.threshold(context_window))
    room = threshold - fixed - margin
    if room <= 0 or settings.keep_recent_tokens + summary_cap(context_window) <= room:
        return settings, None, ""
    summary = max(64, room // 3)
    keep = max(1, room - summary)
    if keep >= settings.keep_recent_tokens:
        return settings, summary, ""
    note = (
        f"{settings.keep_recent_tokens:,} fitted: the system prompt ({fixed:,}) leaves {room:,} "
        f"below the threshold, {keep:,} kept and {summary:,} for the summary"
    )
    return dataclasses.replace(settings, keep_recent_tokens=keep), summary, note


@dataclass(frozen=True)
class CompactionPlan:
    """What a compaction at a leaf will do: the one plan ``%pi compact``, ``%pi whatif``
    and the explorer's dry run share (:func:`plan_to_fit`).

    Attributes
    ----------
    settings:
        The settings in force, as given (already fitted to the window by the caller).
    used:
        What Pi's planner was given: ``settings`` with the ``keepRecentTokens`` actually
        used (smaller on a small window, or when the settings' own keep everything).
    report:
        The planner's dry run (``keep_recent_tokens`` and ``keep_note`` filled in), or
        ``None`` when nothing would be compacted.
    nothing:
        Why nothing would be compacted, else ``None``.
    summary_tokens:
        The longest summary asked of a model (``None``: the model's own limit).
    keep_note:
        Why ``used`` keeps a different number of tokens than ``settings`` (``""``: same).
    fitted:
        Whether pinb's fitting applied (``False``: Pi's plan with the settings as they
        are, as the user's own Pi compacts).
    """

    settings: CompactionSettings
    used: CompactionSettings
    report: CompactionReport | None
    nothing: str | None = None
    summary_tokens: int | None = None
    keep_note: str = ""
    fitted: bool = True

    @property
    def keep_recent_tokens(self) -> int:
        """The keep budget the plan used (``keepRecentTokens`` given to Pi's planner)."""
        return self.used.keep_recent_tokens

    def describe_keep(self) -> str:
        """``"keepRecentTokens 700 (…why…)"``: the keep used, and why it is not the setting."""
        text = f"keepRecentTokens {self.keep_recent_tokens:,}"
        if self.keep_note:
            text += f" ({self.keep_note})"
        elif self.fitted:
            text += " (the settings' own)"
        else:
            text += " (the settings as they are, as Pi uses them)"
        return text


def _last_turn_tokens(context: SessionContext) -> int:
    """Tokens from the last user message to the end (a keep that cuts just before it)."""
    total = 0
    for message in reversed(context.messages):
        total += estimate_tokens(message, pi=context.pi)
        if isinstance(message, dict) and message.get("role") == "user":
            return total
    return 0


def plan_to_fit(
    session: Session,
    settings: CompactionSettings | None = None,
    *,
    context_window: int | None = None,
    margin: int = 0,
    leaf_id: Any = UNSET,
    reason: str = "manual",
    fit: bool = True,
) -> CompactionPlan:
    """What a compaction at ``leaf_id`` will summarize and keep, with the keep it will use.

    Pi's planner (:func:`plan_compaction`) decides the cut; around it, as pinb compacts:
    the keep is fitted to a small window (:func:`fit_budget`), and when Pi's plan keeps
    everything but the compaction was asked for (``reason="manual"``) or the context is
    over the threshold, the plan is made again with a smaller ``keepRecentTokens``: first
    the size of the last user turn (so everything before it is summarized), then halving
    down to 1. Nothing is written.

    Parameters
    ----------
    settings:
        The settings in force, fitted to the window the way the caller runs (Pi's
        defaults when omitted).
    context_window:
        The window the compaction plans for (``None``: no fitting, no threshold).
    margin:
        Tokens kept free for the estimate's error (:func:`pinb.llm.limits.limit_margin`).
    reason:
        ``"manual"`` (``%pi compact``) or ``"threshold"``/``"overflow"`` (automatic).
    fit:
        ``False``: Pi's plan with the settings as they are and nothing else, as the
        user's own Pi compacts (the Pi engine).
    """
    settings = settings or CompactionSettings()
    context = session.build_context(leaf_id)
    if not fit:
        try:
            report = plan_compaction(session, settings, leaf_id=leaf_id)
        except NothingToCompactError as exc:
            return CompactionPlan(settings, settings, None, str(exc), fitted=False)
        return CompactionPlan(settings, settings, report, fitted=False)
    used, cap, note = fit_budget(context, settings, context_window, margin)
    try:
        report = plan_compaction(session, used, leaf_id=leaf_id)
    except NothingToCompactError as exc:
        first = exc
    else:
        report = dataclasses.replace(report, keep_note=note)
        plan = CompactionPlan(settings, used, report, summary_tokens=cap, keep_note=note)
        if cap is None or _ends_at(report, cap) < report.estimated_before:
            return plan
        # On a small window a plan that summarizes only a little could end larger than it
        # began (its summary longer than what it replaces): keep less, when that shrinks.
        smaller = _smaller_keep(session, context, settings, used, cap, leaf_id, shrink=True)
        return smaller if smaller is not None else plan
    path = context.path
    over = bool(context_window) and sum(
        estimate_tokens(m, pi=context.pi) for m in context.messages
    ) > used.threshold(context_window or 0)
    compacted = bool(path) and path[-1].type == "compaction"
    if compacted or (reason != "manual" and not over):
        return CompactionPlan(settings, used, None, str(first), summary_tokens=cap, keep_note=note)
    found = _smaller_keep(session, context, settings, used, cap, leaf_id, shrink=False)
    if found is not None:
        return found
    return CompactionPlan(settings, used, None, str(first), summary_tokens=cap, keep_note=note)


def _ends_at(report: CompactionReport, summary_tokens: int) -> int:
    """A plan's context after it is carried out: the kept messages, the system prompt as
    the compaction's checkpoint (when the kept part holds none), and the summary."""
    checkpoint = 0 if "system" in report.after_by_role else report.before_by_role.get("system", 0)
    return report.estimated_after + checkpoint + summary_tokens


def _smaller_keep(
    session: Session,
    context: SessionContext,
    settings: CompactionSettings,
    used: CompactionSettings,
    cap: int | None,
    leaf_id: Any,
    *,
    shrink: bool,
) -> CompactionPlan | None:
    """A plan with a smaller keep: first the one that cuts right before the last user turn,
    then ever smaller ones. ``shrink``: only a plan that ends smaller than it began (its
    summary at the longest allowed), for a plan that would otherwise grow the context."""
    turn = _last_turn_tokens(context)
    keeps = [turn]
    keep = used.keep_recent_tokens
    while keep > 1:
        keep = max(1, keep // 2)
        keeps.append(keep)
    for keep in dict.fromkeys(k for k in keeps if 0 < k < used.keep_recent_tokens):
        smaller = dataclasses.replace(used, keep_recent_tokens=keep)
        try:
            report = plan_compaction(session, smaller, leaf_id=leaf_id)
        except NothingToCompactError:
            continue
        if shrink and _ends_at(report, cap or 0) >= report.estimated_before:
            continue
        how = "the last user turn" if keep == turn else "halved until one leaves something"
        asked = f"{used.keep_recent_tokens:,}"
        if used.keep_recent_tokens != settings.keep_recent_tokens:
            asked = f"{settings.keep_recent_tokens:,} fitted to {asked}, which"
        what = "would end larger than it began" if shrink else "keeps everything"
        why = f"{asked} {what}; {keep:,}: {how}"
        report = dataclasses.replace(report, keep_note=why)
        return CompactionPlan(settings, smaller, report, summary_tokens=cap, keep_note=why)
    return None


def _previous_id(prepared: CompactionPreparation) -> str | None:
    index = prepared.previous_compaction_index
    return str(prepared.path[index].id) if index >= 0 else None


def compact(
    session: Session,
    summarizer: Summarizer,
    instructions: str | None = None,
    settings: CompactionSettings | None = None,
    *,
    reason: str = "manual",
    cite_as: str | None = None,
) -> CompactionReport:
    """Summarize the older part of the active path and append a ``compaction`` entry.

    Parameters
    ----------
    session:
        The session; its current leaf's path is compacted.
    summarizer:
        :class:`~pinb.core.compaction.summarize.ModelSummarizer` or
        :class:`~pinb.core.compaction.summarize.ExtractiveSummarizer` (or any :class:`Summarizer`).
    instructions:
        Extra focus for the summary (Pi's ``/compact <text>``).
    settings:
        Compaction settings (Pi's defaults when omitted). With ``keep_facts`` (the
        default) the summary gets pinb's cited kept-facts section
        (:func:`~pinb.core.compaction.lost.kept_facts_section`) for the must-keep facts it
        lost, within ``keep_facts_tokens``; without, it is Pi's exact text.
    reason:
        ``"manual"``, ``"threshold"`` or ``"overflow"``; recorded in the report.
    cite_as:
        The file name the kept facts cite (default: the session's own file's; a copy
        compacted in memory, as the what-if does, cites the file it was copied from).

    Returns
    -------
    CompactionReport

    Raises
    ------
    NothingToCompactError
        The leaf already is a compaction, or the session is too short.
    """
    settings = settings or CompactionSettings()
    prepared = _prepare(session, settings, UNSET)
    before = session.build_context()
    span = split_at_cut(before, prepared.first_kept_entry_id)  # before the append changes it
    before_by_role = estimated_by_role(before)
    previous = prepared.previous_summary if prepared.has_previous_summary else None
    if not isinstance(previous, str):
        previous = None if previous is None else str(previous)
    earlier: list[Any] = []
    if settings.keep_facts and previous:
        # The summarizer never sees an earlier kept-facts section (a model would rewrite
        # or repeat it); its facts are judged again below and share the one budget.
        earlier = earlier_kept_facts(previous)
        previous = without_kept_facts(previous)
    pi = session.pi
    history_messages = convert_to_llm([p.message for p in prepared.messages_to_summarize], pi=pi)
    # Pi 1.x lets the summary use the model's own output limit (v0.58.3: 80% of the reserve).
    history_max = None if pi >= Pi.V1_6 else math.floor(0.8 * settings.reserve_tokens)
    prefix_max = None if pi >= Pi.V1_6 else math.floor(0.5 * settings.reserve_tokens)

    def history() -> str:
        return summarizer.summarize(
            serialize_conversation(history_messages, pi=pi),
            previous_summary=previous,
            instructions=instructions,
            max_tokens=history_max,
            kind="history",
            messages=history_messages,
        )

    if prepared.is_split_turn and prepared.turn_prefix_messages:
        if history_messages:
            head = history()
        else:
            # Pi writes "No prior history." here and so forgets an earlier summary; keep it.
            head = previous if previous else NO_PRIOR_HISTORY
        prefix_messages = convert_to_llm([p.message for p in prepared.turn_prefix_messages], pi=pi)
        prefix = summarizer.summarize(
            serialize_conversation(prefix_messages, pi=pi),
            instructions=instructions if pi >= Pi.V1_6 else None,
            max_tokens=prefix_max,
            kind="turn_prefix",
            messages=prefix_messages,
        )
        summary = head + SPLIT_TURN_SEPARATOR + prefix
    else:
        summary = history()
    read_files, modified_files = prepared.file_ops.file_lists()
    summary += format_file_operations(read_files, modified_files)
    where = cite_as or cite_name(session)
    kept_facts = _kept_facts(session, before, prepared, summary, settings, earlier, where)
    if kept_facts is not None:
        summary += kept_facts_section(kept_facts, settings.keep_facts_tokens)
    entry = session.append_compaction(
        summary,
        str(prepared.first_kept_entry_id),
        prepared.tokens_before,
        details={"readFiles": read_files, "modifiedFiles": modified_files},
    )
    return CompactionReport(
        entry=entry,
        summary=summary,
        first_kept_entry_id=str(prepared.first_kept_entry_id),
        tokens_before=prepared.tokens_before,
        # One measure on both sides: usage reported on kept assistant messages describes
        # the old context, so before and after are both chars/4 estimates.
        before_by_role=before_by_role,
        after_by_role=estimated_by_role(session.build_context()),
        summarized_ids=span.summarized_ids,
        kept_ids=span.kept_ids,
        read_files=read_files,
        modified_files=modified_files,
        is_split_turn=prepared.is_split_turn,
        summarizer=getattr(summarizer, "name", type(summarizer).__name__),
        reason=reason,
        previous_compaction_id=_previous_id(prepared),
        keep_recent_tokens=settings.keep_recent_tokens,
        kept_facts=kept_facts,
    )


def _kept_facts(
    session: Session,
    before: SessionContext,
    prepared: CompactionPreparation,
    summary: str,
    settings: CompactionSettings,
    earlier: Sequence[Any],
    where: str | None,
) -> LostFacts | None:
    """The must-keep facts ``summary`` lost (``None`` when the settings keep Pi's text)."""
    if not settings.keep_facts:
        return None
    span, summarized, kept = split_with_messages(before, prepared.first_kept_entry_id)
    return lost_facts(
        zip(span.summarized, summarized, strict=True),
        summary,
        [m for sent in kept for m in sent],
        MUST_KEEP,
        section_budget(settings.keep_facts_tokens, where),
        where=where,
        cwd=session.cwd or None,
        earlier=earlier,
    )


def compaction_due(
    session: Session,
    context_window: int | None,
    settings: CompactionSettings | None = None,
) -> bool:
    """Pi's threshold check before a prompt and after a run (§6.6), for the agent.

    Compares :func:`trigger_tokens` with the threshold. An unknown window (``None`` or 0)
    never triggers, unlike Pi (§6.5).
    """
    settings = settings or CompactionSettings()
    if not settings.enabled or not context_window:
        return False
    tokens = trigger_tokens(session)
    return tokens is not None and should_compact(tokens, context_window, settings)


def trigger_tokens(session: Session) -> int | None:
    """The size :func:`compaction_due` compares with the threshold (``None``: no check).

    The last assistant message on the path decides: its reported usage, or the context
    estimate for a failed reply or one whose usage is zero (a server that reports none:
    every message, each engine's system prompt included); in Pi 1.x, the projected
    estimate when the branch holds context edits. No check follows a reply older than the
    latest compaction, an aborted one, or none.
    """
    context = session.current_context()  # kept by the session: no walk of the path
    last = next((e for e in reversed(context.path) if e.role == "assistant"), None)
    if last is None:
        return None
    message = last.message or {}
    compaction = context.compaction
    if compaction is not None:
        compacted_at = js_date_ms(compaction.timestamp)
        stamp = message.get("timestamp")
        if compacted_at is not None and isinstance(stamp, int | float) and compacted_at >= stamp:
            return None
    if message.get("stopReason") == "aborted":
        return None
    pi = session.pi
    usage_tokens = context_tokens_of_usage(message.get("usage"))
    if pi >= Pi.V1_6 and context.branch_edits:
        return estimate_projected_tokens(context).tokens
    if message.get("stopReason") == "error" or usage_tokens <= 0:
        return estimate_context_tokens(context.messages, pi=pi).tokens
    return usage_tokens


def entry_id(session: Session, given: str) -> str:
    """``given``, or the one id it is a prefix of (at least 4 characters, as git takes a
    short hash): the id ``%pi goto``, the chat's ``/goto`` and the notes name.

    Raises
    ------
    EntryNotFoundError
        No entry has that id (the closest ids are suggested).
    """
    if given in session:
        return given
    ids = [str(e.id) for e in session.entries]
    starting = {i for i in ids if i.startswith(given)}
    if len(starting) == 1 and len(given) >= 4:
        return starting.pop()
    close = (
        difflib.get_close_matches(given, ids, n=3, cutoff=0.5)
        or [i for i in ids if i.startswith(given[:3])][:3]
    )
    raise EntryNotFoundError(given, suggestions=close)


def navigate(
    session: Session,
    target_id: str,
    *,
    summarize: bool = False,
    summarizer: Summarizer | None = None,
    instructions: str | None = None,
    replace_instructions: bool = False,
    label: str | None = None,
    context_window: int | None = None,
    token_budget: int | None = None,
) -> BranchReport:
    """Move to another point of the tree, optionally leaving a branch summary (§8.5).

    Selecting a user (or custom) message puts the leaf on its parent and returns the
    message's text in ``editor_text`` for re-submission, as Pi does. Without a summary the
    move is persisted with an inert navigation marker (see :meth:`Session.branch`); with
    one, a ``branch_summary`` entry is attached at the new position. An optional ``label`` goes on the summary entry, or on
    the target when there is no summary.
    """
    old_leaf = session.leaf_id
    target = session.get(target_id)
    if target is None:
        raise EntryNotFoundError(target_id)
    pi = session.pi
    before_tokens = estimate_context_tokens(session.build_context().messages, pi=pi).tokens
    if target_id == old_leaf:
        return BranchReport(
            old_leaf,
            old_leaf,
            target_id,
            old_leaf,
            tokens_before=before_tokens,
            tokens_after=before_tokens,
        )
    collected = collect_entries_for_branch_summary(session.index, old_leaf, target_id)
    editor_text = None
    new_leaf: Any = target_id
    if target.role == "user" or target.type == "custom_message":
        new_leaf = (
            target.parent_id if isinstance(target.parent_id, str) and target.parent_id else None
        )
        editor_text = user_text(target.message if target.type == "message" else target.raw)

    summary_text: str | None = None
    details: dict[str, Any] | None = None
    read_files: list[str] = []
    modified_files: list[str] = []
    if summarize and collected.entries:
        if summarizer is None:
            raise UsageError("a branch summary needs a summarizer (pass summarizer=...)")
        budget = (
            token_budget
            if token_budget is not None
            else (context_window or DEFAULT_WINDOW) - BRANCH_SUMMARY_RESERVE
        )
        prepared = prepare_branch_entries(collected.entries, budget, pi=pi)
        if not prepared.messages:
            summary_text = NO_CONTENT_SUMMARY
            details = {"readFiles": [], "modifiedFiles": []}
        else:
            messages = convert_to_llm([m.message for m in prepared.messages], pi=pi)
            body = summarizer.summarize(
                serialize_conversation(messages, pi=pi),
                instructions=instructions,
                replace_instructions=replace_instructions,
                max_tokens=None if pi >= Pi.V1_6 else 2048,
                kind="branch",
                messages=messages,
            )
            read_files, modified_files = prepared.file_ops.file_lists()
            summary_text = (
                BRANCH_SUMMARY_PREAMBLE + body + format_file_operations(read_files, modified_files)
            )
            details = {"readFiles": read_files, "modifiedFiles": modified_files}

    summary_entry = None
    if summary_text is not None:
        summary_entry = session.branch_with_summary(new_leaf, summary_text, details)
    elif new_leaf is None:
        session.reset_leaf()
    else:
        session.branch(new_leaf)
    label_entry = None
    if label:
        label_entry = session.set_label(
            summary_entry.id if summary_entry is not None else target_id, label
        )
    return BranchReport(
        old_leaf_id=old_leaf,
        new_leaf_id=session.leaf_id,
        target_id=target_id,
        common_ancestor_id=collected.common_ancestor_id,
        summarized_ids=_ids(collected.entries) if summary_entry is not None else [],
        summary_entry=summary_entry,
        summary=summary_text,
        label_entry=label_entry,
        editor_text=editor_text,
        tokens_before=before_tokens,
        tokens_after=estimate_context_tokens(session.build_context().messages, pi=pi).tokens,
        read_files=read_files,
        modified_files=modified_files,
    )


def load_compaction_settings(cwd: str | os.PathLike[str] | None = None) -> CompactionSettings:
    """Pi's ``compaction`` settings: ``<agentDir>/settings.json`` overlaid by ``<cwd>/.pi/settings.json``.

    pinb's own additions (``thresholdPercent``, ``summaryModel``, ``models``) are read from
    a ``"pinb": {"compaction": {...}}`` object in the same files, which Pi ignores.
    """
    settings = CompactionSettings()
    for data in read_settings(cwd):
        if isinstance(data.get("compaction"), dict):
            settings = settings._with(data["compaction"])
        pinb = data.get("pinb")
        if isinstance(pinb, dict) and isinstance(pinb.get("compaction"), dict):
            settings = settings._with(pinb["compaction"])
    return settings
