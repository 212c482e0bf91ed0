"""A small coding task as demo data: the sessions the notebooks teach with.

A user asks an agent to find out why a little project's checks fail, to fix two bugs, to
handle an empty list, and to update the README. On the way the agent takes a wrong turn
(the fix passes the tests but breaks the report), the user goes back, and a branch
summary keeps what was learned. Long enough sessions cross the compaction threshold.

Two ways to get it:

- :func:`write_story_session` writes the session file directly, deterministically (same
  ids, times and usage for the same seed): for views, analysis and many-session demos.
- :func:`story_model` plays the assistant's side to a real :class:`~pinb.agent.Agent`
  whose real tools work on :func:`write_project`'s files: for showing the agent loop,
  automatic compaction included. The tool results the file writer simulates are the
  ones the real tools give (the test suite checks it).

The project and the script are in :mod:`pinb.testing.story_script` (re-exported here).
Usage is made the way a provider would report it: the prompt is the system prompt and
tools (:data:`SYSTEM_TOKENS`) plus the context so far at chars/4, with the previous
request's prompt read from the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..core.compaction.operations import compact, compaction_due, navigate
from ..core.compaction.summarize import ExtractiveSummarizer
from ..core.context.tokens import CompactionSettings, estimate_tokens
from ..core.file import paths
from ..core.format.entries import Entry
from ..core.session import Session
from ..errors import NothingToCompactError
from .story_script import (
    EXTRA_TASKS,
    MAIN_TASKS,
    NOTES,
    PROJECT,
    READING_TASKS,
    WRONG_TURN,
    WRONG_TURN_SUMMARY,
    Call,
    Step,
    Task,
    story_tasks,
    write_project,
)

__all__ = [
    "EXTRA_TASKS",
    "MAIN_TASKS",
    "NOTES",
    "PROJECT",
    "READING_SETTINGS",
    "READING_TASKS",
    "READING_WINDOW",
    "SYSTEM_TOKENS",
    "WRONG_TURN",
    "WRONG_TURN_SUMMARY",
    "Call",
    "Step",
    "Task",
    "append_prompt",
    "append_reply",
    "assistant_message",
    "local_model",
    "models_json",
    "prompts",
    "session_name",
    "story_clock",
    "story_model",
    "story_tasks",
    "write_models_json",
    "write_project",
    "write_story_session",
    "write_story_sessions",
]

#: Tokens of the system prompt and tool definitions sent with every request (about what
#: Pi's prompt with its seven tools takes).
SYSTEM_TOKENS = 2_150

#: The window of the story whose compactions matter (``story_tasks(reading=True)``, a
#: project written with ``notes=True``): reading a week of notes (about 4,500 tokens) fills
#: it as a real session's reads fill a 200,000-token one.
READING_WINDOW = 20_000
#: Its compaction settings: Pi keeps 20,000 of a 200,000 window (a tenth), so 2,000 here;
#: the reserve (5,000) leaves room for a week's read after the threshold, so no request
#: exceeds the window before the next check. A compaction then saves about 90%, as a
#: real Pi compaction does, where the fitted defaults (5,000 kept) save 60%.
READING_SETTINGS = CompactionSettings(reserve_tokens=5_000, keep_recent_tokens=2_000)

# -- writing the session -----------------------------------------------------------------

_MODELS = {
    # provider/model: (api, $ per million input, output, cache read, cache write)
    "anthropic/claude-sonnet-4-5": ("anthropic-messages", 3.0, 15.0, 0.3, 3.75),
    "anthropic/claude-haiku-4-5": ("anthropic-messages", 1.0, 5.0, 0.1, 1.25),
    "openai/gpt-4.1-mini": ("openai-responses", 0.4, 1.6, 0.1, 0.0),
}


#: The local server the small-window stories run on. A small window is a small local
#: model's, whose window only Pi's ``models.json`` knows: see :func:`models_json`.
LOCAL_PROVIDER = "ollama"
_LOCAL_URL = "http://127.0.0.1:11434/v1"
_LOCAL_PREFIX = f"{LOCAL_PROVIDER}/textstats-coder-"


def local_model(window: int) -> str:
    """``provider/model`` of the local model a story on a ``window``-token window runs on.

    ``ollama/textstats-coder-5000`` for 5,000: one model id per window, as a
    ``models.json`` entry gives one window per model (:func:`models_json`).
    """
    return f"{_LOCAL_PREFIX}{window}"


def models_json(windows: Iterable[int]) -> dict[str, Any]:
    """Pi's ``models.json`` declaring the story's local models with their windows.

    Both Pi and pinb read a local model's window from ``<agentDir>/models.json``; without
    the entry a session of one shows the provider's default window, and the views note
    that its own compactions contradict it (:func:`pinb.llm.window.compaction_evidence`).
    """
    models = [
        {
            "id": local_model(window).split("/", 1)[1],
            "contextWindow": window,
            "maxTokens": window // 4,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        }
        for window in sorted(set(windows))
    ]
    provider = {"baseUrl": _LOCAL_URL, "api": "openai-completions", "apiKey": "ollama"}
    return {"providers": {LOCAL_PROVIDER: {**provider, "models": models}}}


def write_models_json(agent_dir: str | Path, windows: Iterable[int] = (4_096, 5_000)) -> Path:
    """Write :func:`models_json` into ``agent_dir`` (a private agent folder, not yours)."""
    folder = Path(agent_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "models.json"
    path.write_text(json.dumps(models_json(windows), indent=1) + "\n", encoding="utf-8")
    return path


def _model_data(model: str) -> tuple[str, float, float, float, float]:
    """``(api, $ per million input, output, cache read, cache write)`` of a story model."""
    if model.startswith(_LOCAL_PREFIX):
        return ("openai-completions", 0.0, 0.0, 0.0, 0.0)  # a local server: nothing to pay
    if model not in _MODELS:
        names = ", ".join([*_MODELS, local_model(5_000)])
        raise ValueError(f"unknown story model {model!r}; use one of {names}")
    return _MODELS[model]


def assistant_message(content: list[dict[str, Any]], model: str, timestamp: int) -> dict[str, Any]:
    """A Pi assistant message of ``model`` (``provider/id`` of the story's models), no usage."""
    provider, model_id = model.split("/", 1)
    calls = any(block.get("type") == "toolCall" for block in content)
    return {
        "role": "assistant",
        "content": content,
        "api": _model_data(model)[0],
        "provider": provider,
        "model": model_id,
        "usage": {},
        "stopReason": "toolUse" if calls else "stop",
        "timestamp": timestamp,
    }


def _prompt_tokens(session: Session) -> int:
    """What a provider would count for the next request: system prompt, tools, context."""
    return SYSTEM_TOKENS + sum(estimate_tokens(m) for m in session.current_context().messages)


def _usage(model: str, prompt: int, output: int, cached: int = 0) -> dict[str, Any]:
    """Usage as a provider reports it, the last request's prompt read from the cache (a
    local server reports no cache)."""
    _, *prices = _model_data(model)
    local = model.startswith(_LOCAL_PREFIX)
    cache_read = cached if cached <= prompt and not local else 0
    fresh = prompt - cache_read
    cost = [
        round(c / 1e6, 8)
        for c in (fresh * prices[0], output * prices[1], cache_read * prices[2], 0.0)
    ]
    return {
        "input": fresh,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": 0,
        "totalTokens": prompt + output,
        "cost": {
            "input": cost[0],
            "output": cost[1],
            "cacheRead": cost[2],
            "cacheWrite": cost[3],
            "total": round(sum(cost), 8),
        },
    }


def append_reply(
    session: Session, text: str, *, model: str = "anthropic/claude-sonnet-4-5"
) -> Entry:
    """Append an assistant reply with the usage a provider would report for this context."""
    message = assistant_message([{"type": "text", "text": text}], model, _now_ms())
    message["usage"] = _usage(model, _prompt_tokens(session), estimate_tokens(message))
    return session.append_message(message)


def append_prompt(session: Session, text: str) -> Entry:
    """Append a user prompt."""
    content = [{"type": "text", "text": text}]
    return session.append_message({"role": "user", "content": content, "timestamp": _now_ms()})


def _now_ms() -> int:
    return int(paths.now().timestamp() * 1000)


@contextlib.contextmanager
def story_clock(start: datetime, rng: random.Random) -> Iterator[_Clock]:
    """Entry timestamps from a clock that moves only when the story says so."""
    clock = _Clock(start, rng)
    previous = paths.now
    paths.now = clock.now
    try:
        yield clock
    finally:
        paths.now = previous


@dataclass
class _Clock:
    moment: datetime
    rng: random.Random

    def now(self) -> datetime:
        return self.moment

    def wait(self, low: float, high: float) -> int:
        """Move on ``low``..``high`` seconds; the new time in Unix ms."""
        self.moment += timedelta(milliseconds=self.rng.randint(int(low * 1000), int(high * 1000)))
        return int(self.moment.timestamp() * 1000)


@dataclass
class _Writer:
    session: Session
    clock: _Clock
    rng: random.Random
    model: str
    files: dict[str, str]
    thinking: bool
    cached: int = 0  # prompt tokens the provider has cached from the last request
    window: int | None = None  # the model's window: no request of the story may exceed it

    def prompt(self, task: Task) -> None:
        stamp = self.clock.wait(20, 90)
        self.session.append_message(
            {"role": "user", "content": [{"type": "text", "text": task.prompt}], "timestamp": stamp}
        )
        for step in task.steps:
            self.reply(step)

    def reply(self, step: Step) -> None:
        content: list[dict[str, Any]] = []
        if step.thinking and self.thinking:
            content.append({"type": "thinking", "thinking": step.thinking})
        if step.text:
            content.append({"type": "text", "text": step.text})
        calls = []
        for call in step.calls:
            call_id = "toolu_" + uuid.UUID(int=self.rng.getrandbits(128)).hex[:24]
            calls.append((call_id, call))
            content.append(
                {
                    "type": "toolCall",
                    "id": call_id,
                    "name": call.tool,
                    "arguments": dict(call.arguments),
                }
            )
        stamp = self.clock.wait(3, 25)
        message = assistant_message(content, self.model, stamp)
        prompt = _prompt_tokens(self.session)
        if self.window and prompt > self.window:
            # A provider refuses such a request: a story that makes one teaches a context
            # no real session can have.
            raise ValueError(
                f"the story's request {prompt:,} tokens exceeds its {self.window:,}-token "
                "window: compact sooner (a smaller reserve) or read less at once"
            )
        message["usage"] = _usage(self.model, prompt, estimate_tokens(message), self.cached)
        self.session.append_message(message)
        self.cached = prompt
        for call_id, call in calls:
            self.result(call_id, call)

    def result(self, call_id: str, call: Call) -> None:
        text, error, details = self.run(call)
        stamp = self.clock.wait(0.2, 2.5)
        message: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": call.tool,
            "content": [{"type": "text", "text": text}],
            "isError": error,
            "timestamp": stamp,
        }
        if details is not None:
            message["details"] = details
        self.session.append_message(message)

    def run(self, call: Call) -> tuple[str, bool, Any]:
        """What the real tool would return (bash prints what the story says)."""
        args = call.arguments
        if call.tool == "read":
            return self.files[args["path"]], False, None
        if call.tool == "edit":
            path = args["path"]
            before = self.files[path]
            if before.count(args["oldText"]) != 1:
                raise ValueError(f"story edit does not apply to {path}: {args['oldText']!r}")
            self.files[path] = before.replace(args["oldText"], args["newText"])
            return f"Successfully replaced text in {path}.", False, None
        if call.tool == "bash":
            assert call.output is not None
            if call.exit_code:
                return f"{call.output}\n\nCommand exited with code {call.exit_code}", True, {}
            return call.output, False, None
        raise ValueError(f"the story has no simulation of the {call.tool} tool")


def write_story_session(
    folder: str | Path,
    *,
    seed: int = 0,
    tasks: Sequence[Task | None] | None = None,
    cwd: str = "/home/dev/textstats",
    model: str | None = None,
    thinking: bool = True,
    context_window: int | None = None,
    settings: CompactionSettings | None = None,
    start: datetime = datetime(2026, 3, 2, 9, 14, 5, tzinfo=UTC),
    summarizer: Any = None,
    name: str | None = None,
) -> Session:
    """Write the story as a Pi session file in ``folder``; the same file for the same seed.

    Parameters
    ----------
    tasks:
        The prompts (default :func:`story_tasks`: the whole story with its wrong turn);
        ``None`` in the list plays the wrong turn and goes back with a branch summary.
    model:
        ``"anthropic/claude-sonnet-4-5"``, ``"anthropic/claude-haiku-4-5"`` or
        ``"openai/gpt-4.1-mini"``; usage and cost follow its prices. Default: Sonnet, or
        with a window the local model of that window (:func:`local_model`).
    context_window, settings:
        With a window, the session is compacted as Pi would after a prompt that leaves
        the context above the threshold (``settings``: Pi's defaults fitted to the window).
        A small window is a local model's: the session records one whose window
        :func:`models_json` declares, so the file says which window it ran with.
    summarizer:
        Writes compaction summaries (default: pinb's offline extractive summarizer,
        which says so in its first line).
    name:
        The session's name (a ``session_info`` entry, as Pi's ``/name`` writes it), or
        none: then listings show the first prompt.

    Returns
    -------
    Session
        The written session, its leaf at the end of the story.
    """
    if model is None:
        model = local_model(context_window) if context_window else "anthropic/claude-sonnet-4-5"
    _model_data(model)  # an unknown model fails here
    rng = random.Random(seed)
    plan = list(story_tasks()) if tasks is None else list(tasks)
    fitted = (settings or CompactionSettings()).fit_window(context_window)
    # The session id says which story this is (where and when it ran, on what, what was
    # asked), not only the seed: two stories of one seed in one folder never share an id.
    drawn = rng.getrandbits(128)
    played = ",".join(task.name if task is not None else "wrong-turn" for task in plan)
    which = f"{drawn}|{cwd}|{model}|{start.isoformat()}|{context_window}|{name}|{played}"
    digest = int.from_bytes(hashlib.sha256(which.encode()).digest()[:16], "big")
    with contextlib.ExitStack() as stack:
        clock = stack.enter_context(story_clock(start, rng))
        session = Session.create(
            cwd,
            folder,
            session_id=str(uuid.UUID(int=digest, version=4)),
            id_generator=lambda: f"{rng.getrandbits(32):08x}",
        )
        # One turn for the whole story, as a run of the agent holds one per prompt: the
        # lock is taken once, not at every append.
        stack.enter_context(session.turn("the demo story"))
        provider, model_id = model.split("/", 1)
        session.append_model_change(provider, model_id)
        if thinking:
            session.append_thinking_level_change("medium")
        if name:
            session.set_name(name)
        writer = _Writer(
            session, clock, rng, model, PROJECT | NOTES, thinking, window=context_window
        )
        for task in plan:
            if task is None:
                _wrong_turn(writer)
            else:
                writer.prompt(task)
            if context_window and compaction_due(session, context_window, fitted):
                clock.wait(1, 4)
                with contextlib.suppress(NothingToCompactError):  # as the agent does
                    compact(
                        session,
                        summarizer or ExtractiveSummarizer(),
                        settings=fitted,
                        reason="threshold",
                    )
                    writer.cached = 0
    return session


def _wrong_turn(writer: _Writer) -> None:
    session = writer.session
    back_to = session.leaf_id
    for task in WRONG_TURN:
        writer.prompt(task)
    writer.clock.wait(30, 60)
    navigate(
        session,
        back_to,
        summarize=True,
        summarizer=_Fixed(WRONG_TURN_SUMMARY),
        label="whitespace split: abandoned",
    )
    writer.cached = 0


class _Fixed:
    """A summarizer that returns the story's own text."""

    name = "story"

    def __init__(self, text: str) -> None:
        self.text = text

    def summarize(self, conversation: str, **options: Any) -> str:
        return self.text


# -- playing the assistant to a live agent -------------------------------------------------


def story_model(tasks: Sequence[Task | None] | None = None, **options: Any) -> Any:
    """A :class:`~pinb.testing.ScriptedLLM` that answers the story's prompts, step by step.

    Send it the prompts of ``tasks`` (default: the whole story without its wrong turn,
    which needs a move back in the tree) through an :class:`~pinb.agent.Agent` with the
    ``read``, ``edit`` and ``bash`` tools working in :func:`write_project`'s folder.
    ``options`` go to ``ScriptedLLM`` (``context_window`` for instance).
    """
    from ..llm.providers.scripted import Reply, ScriptedLLM

    plan = story_tasks(wrong_turn=False) if tasks is None else list(tasks)
    replies: list[Reply] = []
    for task in plan:
        if task is None:
            raise ValueError("story_model plays prompts only: leave out the wrong turn")
        for step in task.steps:
            replies.append(
                Reply(
                    text=step.text,
                    thinking=step.thinking,
                    tool_calls=[(c.tool, dict(c.arguments)) for c in step.calls],
                )
            )
    # A small window is a small local model's (as write_story_session records it).
    window = options.get("context_window")
    provider, model_id = (local_model(window) if window else "anthropic/claude-sonnet-4-5").split(
        "/", 1
    )
    options.setdefault("provider", provider)
    options.setdefault("model", model_id)
    return ScriptedLLM(replies, **options)


def prompts(tasks: Sequence[Task | None]) -> list[str]:
    """The user prompts of ``tasks`` (to send to an agent playing :func:`story_model`)."""
    return [task.prompt for task in tasks if task is not None]


#: What each task does, for session names.
_TITLES: dict[str, str] = {
    "diagnose": "why the checks fail",
    "fix-median": "median",
    "fix-word-count": "word_count",
    "empty-median": "empty list",
    "readme": "README",
    "wrap-up": "wrap-up",
}


def session_name(project: str, tasks: Sequence[Task | None]) -> str:
    """A name as a user would give it: the project, then what the session fixed.

    ``"textstats: median, word_count (wrong turn), README (+2 questions)"``: the diagnosis
    starts every session, so it is named only when nothing followed it.
    """
    played = [task for task in tasks if task is not None]
    fixed = [_TITLES[t.name] for t in played[1:] if t.name in _TITLES]
    if None in tasks:
        fixed = [f"{title} (wrong turn)" if title == "word_count" else title for title in fixed]
    asked = sum(1 for t in played if t.name not in _TITLES)
    name = f"{project}: " + ", ".join(fixed or [_TITLES["diagnose"]])
    return name + (f" (+{asked} question{'s' * (asked > 1)})" if asked else "")


def write_story_sessions(folder: str | Path, count: int, *, seed: int = 0) -> list[Session]:
    """``count`` variations of the story, laid out like Pi's sessions folder.

    Each varies the model, how far the story gets, the side questions asked, whether the
    wrong turn happens and whether a small window forces compactions; files go into one
    folder per project (``--home-dev-<project>--``), as Pi keeps them, each named after
    what it did (:func:`session_name`). Deterministic.
    """
    rng = random.Random(seed)
    root = Path(folder)
    projects = ("textstats", "weekly-report", "notes-tools")
    sessions = []
    for number in range(count):
        project = rng.choice(projects)
        wrong_turn = rng.random() < 0.6
        extras = rng.sample(EXTRA_TASKS, rng.randint(0, len(EXTRA_TASKS)))
        tasks = story_tasks(wrong_turn=wrong_turn, extras=extras)
        tasks = tasks[: rng.randint(2, len(tasks))]
        if None in tasks[-1:]:
            tasks = tasks[:-1]  # a wrong turn needs the prompt after it
        model = rng.choice(("anthropic/claude-sonnet-4-5",) * 3 + tuple(_MODELS))
        window = rng.choice((None, None, 4_096, 5_000))
        if window:  # a small window is a small local model's
            model = local_model(window)
        cwd = f"/home/dev/{project}"
        sessions.append(
            write_story_session(
                root / f"--home-dev-{project}--",
                seed=seed * 100_003 + number,
                tasks=tasks,
                cwd=cwd,
                model=model,
                thinking=model.startswith("anthropic/"),
                context_window=window,
                start=datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
                + timedelta(days=number // 3, hours=rng.randint(0, 9)),
                name=session_name(project, tasks),
            )
        )
    return sessions
