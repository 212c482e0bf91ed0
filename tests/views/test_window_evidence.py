"""A window the session's own history contradicts is said to be contradicted, in every view.

The story's small-window sessions ran on a local model whose window only Pi's
``models.json`` knows. With that entry every view shows the window the session ran with;
without it the window is the provider's default, and the views note that the session's own
compactions ran far below what that window compacts at.
"""

from __future__ import annotations

import os
from pathlib import Path

from pinb.core import Session
from pinb.llm.window import resolve_window
from pinb.testing.story import (
    EXTRA_TASKS,
    local_model,
    story_tasks,
    write_models_json,
    write_story_session,
)
from pinb.views import CompactionView, ContextPathView


def _story(folder: Path) -> Session:
    written = write_story_session(
        folder, tasks=story_tasks(extras=EXTRA_TASKS), context_window=5_000
    )
    return Session.open(written.require_path())  # as a search hit opens it: nothing in memory


def test_the_story_records_the_local_model_that_has_its_window(tmp_path: Path) -> None:
    session = _story(tmp_path / "s")
    model = session.current_context().model or {}
    assert f"{model.get('provider')}/{model.get('modelId')}" == local_model(5_000)
    write_models_json(Path(os.environ["PI_CODING_AGENT_DIR"]), windows=(5_000,))
    found = resolve_window(session=session)
    assert (found.tokens, found.source, found.note) == (5_000, "models.json", "")
    view = ContextPathView(session)
    assert "of a 5,000 window (models.json) · threshold 3,750" in view.to_text()
    assert "far below" not in view.to_text()


def test_a_window_the_compactions_contradict_is_said_to_be_contradicted(tmp_path: Path) -> None:
    session = _story(tmp_path / "s")  # no models.json: the provider's default window
    found = resolve_window(session=session)
    recorded = [e.raw["tokensBefore"] for e in session.entries if e.type == "compaction"]
    assert found.tokens == 128_000 and found.source == "provider default"
    assert (
        f"its {len(recorded)} compactions ran at {min(recorded):,}–{max(recorded):,}" in found.note
    )
    text = ContextPathView(session).to_text()
    assert "far below what a 128,000-token window compacts at" in text
    html = ContextPathView(session).to_html()
    assert "far below what a 128,000-token window compacts at" in html
    compaction = next(e for e in session.entries if e.type == "compaction")
    assert "far below" in CompactionView(compaction, session).to_html()
    # A window given (or the one the session ran with) is not second-guessed.
    given = ContextPathView(session, context_window=5_000)
    assert "far below" not in given.to_text() and "window (setting)" in given.to_text()
