"""Fixtures for every test: no test touches the real home, no API key leaks in; the real Pi as a reference."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pi.loop import PiLoop, configure, engine_env
from tests.pi.reference import InstallError, PiReference, ensure_installed

# A shell that starts the suite in the background (``pytest &`` in a script) hands it SIGINT
# ignored, and Python then keeps it ignored; the Ctrl-C tests need it delivered, here and in
# the processes they start (exec resets a handled signal, not an ignored one).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files marked ``slow`` first, the longest first (``slow(seconds=…)``, a rough
    figure), so the workers start on them and the short files fill in at the end. Run with
    ``--no-loadscope-reorder``: xdist otherwise hands out the files with the most tests
    first, and a long browser file handed out last keeps one worker busy while the other
    waits."""

    def order(item: pytest.Item) -> tuple[bool, float]:
        slow = item.get_closest_marker("slow")
        return slow is None, -float(slow.kwargs.get("seconds", 0) if slow else 0)

    items.sort(key=order)


_KEY_VARIABLES = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_BASE_URL",
)


@pytest.fixture(autouse=True)
def isolated_agent_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Point ``PI_CODING_AGENT_DIR`` at a fresh folder and clear provider variables."""
    agent = tmp_path_factory.mktemp("agent")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    for name in _KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return agent


@pytest.fixture(scope="session")
def pi_install() -> Path:
    """The pinned Pi packages, installed into .cache/pi on first use.

    Fails (never skips) when npm is missing or the install breaks: a suite that silently
    loses its reference would pass for the wrong reason.
    """
    try:
        return ensure_installed()
    except InstallError as exc:
        message = str(exc)
    pytest.fail(message, pytrace=False)  # outside `except`: no chained traceback


@pytest.fixture(scope="session")
def pi16(pi_install: Path) -> Iterator[PiReference]:
    """Pi 1.6.0 (today's Pi) as a reference, one harness process per test session."""
    with PiReference("1.6.0", pi_install) as reference:
        yield reference


@pytest.fixture(scope="session")
def pi058(pi_install: Path) -> Iterator[PiReference]:
    """Pi v0.58.3 (the old target) as a reference, one harness process per test session."""
    with PiReference("0.58.3", pi_install) as reference:
        yield reference


@pytest.fixture()
def pi_loop(
    pi16: PiReference, isolated_agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[PiLoop]:
    """The real Pi 1.6.0 as the user's Pi, with pinb's loopback server in its models.json.

    ``$PINB_PI_COMMAND`` runs it, and the kernel's environment is the one Pi gets.
    """
    from pinb.testing.llm_server import LLMServer

    with LLMServer() as server:
        configure(isolated_agent_dir, server)
        for name, value in engine_env(pi16, isolated_agent_dir).items():
            monkeypatch.setenv(name, value)
        loop = PiLoop(server, isolated_agent_dir, pi16)
        monkeypatch.setenv("PINB_PI_COMMAND", loop.command_line)
        yield loop


@pytest.fixture(autouse=True)
def _no_pi_magics_config_left_behind() -> Iterator[None]:
    """``%config PiMagics.x = …`` writes to the shared shell's config, which every later
    ``PiMagics`` made in this worker would read: a test's settings end with the test."""
    yield
    import sys

    module = sys.modules.get("IPython.core.interactiveshell")
    if module is not None and module.InteractiveShell.initialized():
        config = module.InteractiveShell.instance().config
        if "PiMagics" in config:
            del config["PiMagics"]
