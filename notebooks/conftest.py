"""When the notebooks run as tests (nbval), they get a private Pi agent folder and no keys.

That keeps CI from touching a real ``~/.pi`` and makes every notebook use the offline demo
model, so their outputs are reproducible.
"""

from __future__ import annotations

import os
import tempfile

_KEYS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "DEEPSEEK_API_KEY",
    "MISTRAL_API_KEY",
    "CEREBRAS_API_KEY",
)


def pytest_configure(config: object) -> None:
    os.environ["PI_CODING_AGENT_DIR"] = tempfile.mkdtemp(prefix="pinb-notebook-agent-")
    for key in _KEYS:
        os.environ.pop(key, None)
