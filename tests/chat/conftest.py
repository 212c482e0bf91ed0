"""A chat in-process: jupyterlab-chat's ``YChat`` with Jupyter AI's ``PersonaManager``, and the
loopback model server named in ``models.json`` (provider ``loop``) for pinb's agent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pinb.testing.llm_server import LLMServer
from tests.pi.loop import KEY, configure


@pytest.fixture()
def loop_server(isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    """pinb's loopback server as provider ``loop`` (``loop/loop-model``) in models.json."""
    with LLMServer() as server:
        configure(isolated_agent_dir, server)
        monkeypatch.setenv("LOOP_KEY", KEY)
        yield server


@pytest.fixture()
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder (the server's root) with a notebook in it."""
    folder = tmp_path / "project"
    folder.mkdir()
    notebook = {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (folder / "analysis.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    monkeypatch.chdir(folder)
    return folder
