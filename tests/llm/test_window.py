"""The one window rule: a setting, the model in use, the window a session ran with, the registry."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pinb.core import Session
from pinb.llm import default_registry
from pinb.llm.window import ContextWindow, resolve_window
from pinb.testing import ScriptedLLM


def _session(tmp_path: Path, provider: str, model_id: str) -> Session:
    session = Session.create(tmp_path, tmp_path / "sessions")
    session.append_model_change(provider, model_id)
    return session


def test_each_source_in_order(tmp_path: Path) -> None:
    session = _session(tmp_path, "anthropic", "claude-sonnet-4-5")
    registry_window = default_registry().info("anthropic/claude-sonnet-4-5").context_window
    assert resolve_window(session=session) == ContextWindow(registry_window, "model registry")
    session.run_window = (6_000, "setting")  # what an agent ran it with
    assert resolve_window(session=session) == ContextWindow(6_000, "setting")
    model = ScriptedLLM(context_window=8_000)
    assert resolve_window(model=model, session=session) == ContextWindow(8_000, "setting")
    model.info = dataclasses.replace(model.info, context_window=4_096, window_source="server")
    assert resolve_window(model=model.info, session=session) == ContextWindow(4_096, "server")
    assert resolve_window(setting=2_000, model=model, session=session) == ContextWindow(
        2_000, "setting"
    )
    assert resolve_window(setting=2_000, setting_source="model").source == "model"
    assert ScriptedLLM().info.window_origin == "model"  # its own default, not the registry's


def test_unknown_only_when_nothing_is_known(tmp_path: Path) -> None:
    empty = Session.create(tmp_path, tmp_path / "sessions")
    assert resolve_window(session=empty) == ContextWindow(None, "unknown")
    assert resolve_window() == ContextWindow(None, "unknown")
    assert not resolve_window() and resolve_window().describe() == "unknown"
    stranger = _session(tmp_path, "nobody-knows", "this-model")
    assert resolve_window(session=stranger) == ContextWindow(None, "unknown")
    assert ContextWindow(6_000, "setting").describe() == "6,000 (setting)"
