"""The real Pi 1.6.0 as a ``--engine pi`` engine in tests: pinb's loopback server named in ``models.json``.

``configure(agent_dir, server)`` writes the one ``models.json`` both engines read (provider
``loop``, model ``loop/loop-model``); ``engine_env(reference, agent_dir)`` is the
environment the real ``pi --mode rpc`` runs with (offline, quiet, no provider keys).
The fixture ``pi_loop`` of ``tests/conftest.py`` puts them together.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinb.testing.llm_server import LLMServer

from .reference import PiReference

__all__ = ["MODEL", "PiLoop", "configure", "confirm_extension", "engine_env"]

MODEL = "loop/loop-model"
#: The key both engines must send: written as ``$LOOP_KEY`` in models.json (Pi 1.x form).
KEY = "loop-key-0123456789"


def configure(
    agent_dir: Path,
    server: LLMServer,
    *,
    window: int = 32000,
    reasoning: bool = False,
    **provider: Any,
) -> Path:
    """Write ``<agent_dir>/models.json`` naming ``server`` as provider ``loop``."""
    model = {"id": "loop-model", "contextWindow": window, "maxTokens": 1000, "reasoning": reasoning}
    config = {
        "baseUrl": server.openai_base_url,
        "api": "openai-completions",
        "apiKey": "$LOOP_KEY",
        "models": [model],
        **provider,
    }
    path = agent_dir / "models.json"
    path.write_text(json.dumps({"providers": {"loop": config}}), encoding="utf-8")
    return path


def pi_print(
    reference: PiReference, agent_dir: Path, cwd: Path, session: Path, prompt: str
) -> subprocess.CompletedProcess[str]:
    """``pi -p --session SESSION PROMPT`` on the loopback model, with nothing of the user's
    (no tools, extensions, skills, context files or templates): the real Pi continuing a file."""
    argv = [
        *reference.cli_argv(),
        "-p", "--session", str(session), "--model", MODEL, "--offline",
        "--no-tools", "--no-extensions", "--no-skills", "--no-context-files",
        "--no-prompt-templates", prompt,
    ]  # fmt: skip
    env = {**reference.environment(), "PI_CODING_AGENT_DIR": str(agent_dir)}
    # the timeout guards a hang only
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def engine_env(reference: PiReference, agent_dir: Path) -> dict[str, str]:
    """The real Pi's environment: the reference's (offline, no keys) on ``agent_dir``."""
    return {**reference.environment(), "PI_CODING_AGENT_DIR": str(agent_dir), "LOOP_KEY": KEY}


def confirm_extension(agent_dir: Path) -> Path:
    """A Pi extension that asks a confirm before every ``write`` and blocks it on "no"."""
    folder = agent_dir / "extensions"
    folder.mkdir(exist_ok=True)
    path = folder / "ask-before-write.ts"
    path.write_text(
        """export default function (pi: any) {
  pi.on("tool_call", async (event: any, ctx: any) => {
    if (event.toolName !== "write") return undefined;
    const ok = await ctx.ui.confirm("Write a file?", String(event.input.path));
    ctx.ui.notify(ok ? "write allowed" : "write blocked", "info");
    return ok ? undefined : { block: true, reason: "Blocked by user" };
  });
}
""",
        encoding="utf-8",
    )
    return path


@dataclass
class PiLoop:
    """A loopback server, the agent dir whose models.json names it, and the real Pi."""

    server: LLMServer
    agent_dir: Path
    reference: PiReference

    @property
    def argv(self) -> list[str]:
        return self.reference.cli_argv()

    @property
    def command_line(self) -> str:
        """What ``$PINB_PI_COMMAND`` holds."""
        return shlex.join(self.argv)

    @property
    def env(self) -> dict[str, str]:
        return engine_env(self.reference, self.agent_dir)
