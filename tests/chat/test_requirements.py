"""The ``chat`` extra: the persona is found through its entry point, hidden when its requirements
are missing, and pinb without the extra works as before."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
#: What jupyter-ai 3.2.0 itself requires of the two packages the extra installs.
JUPYTER_AI_3_2_PINS = {
    "jupyter-ai-persona-manager": "<0.3.0,>=0.2.0",
    "jupyterlab-chat": "<0.26.0,>=0.25.0",
}


def _python(code: str, cwd: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_persona_is_an_entry_point_of_jupyter_ai() -> None:
    found = {ep.name: ep.value for ep in entry_points(group="jupyter_ai.personas")}
    assert found.get("pinb") == "pinb.chat.persona:PinbPersona"


def test_the_extra_holds_jupyter_ais_pins_and_dev_pulls_it() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert any(r.startswith("pinb[") and "chat" in r for r in extras["all"])
    assert "pinb[all]" in extras["dev"]
    assert "jupyter-ai" not in {Requirement(r).name for r in extras["chat"]}  # no metapackage
    for requirement in map(Requirement, extras["chat"]):
        pin = JUPYTER_AI_3_2_PINS.get(requirement.name)
        if pin is None:
            continue
        theirs = Requirement(f"{requirement.name}{pin}").specifier
        # A release both accept: the extra installs beside jupyter-ai 3.2.0.
        both = [
            v
            for v in ("0.2.0", "0.2.2", "0.25.0", "0.25.3")
            if Version(v) in requirement.specifier and Version(v) in theirs
        ]
        assert both, (requirement, pin)


def test_without_pillow_the_persona_is_hidden_not_broken(tmp_path: Path) -> None:
    code = """
import asyncio, json, logging, sys
sys.modules["PIL"] = None  # Pillow is not installed
from jupyter_ai_persona_manager import PersonaManager
from jupyterlab_chat.ychat import YChat

records = []
handler = logging.Handler()
handler.emit = lambda record: records.append(record.getMessage())
logging.getLogger().addHandler(handler)
logging.getLogger().setLevel(logging.INFO)

async def main():
    chat = YChat()
    chat.initial_path = "x.chat"
    manager = PersonaManager(chat=chat, root_dir=".", event_loop=asyncio.get_running_loop())
    manager.log.addHandler(handler)
    unmet = [r for r in records if "unmet requirements" in r]
    messages = [m.body for m in chat.get_messages()]
    print(json.dumps({"personas": list(manager.personas), "unmet": unmet, "chat": messages}))

asyncio.run(main())
"""
    found = _python(code, tmp_path)
    assert found["personas"] == []
    assert any("pinb" in line and "Pillow" in line for line in found["unmet"])  # type: ignore[attr-defined]
    assert found["chat"] == []  # no error in the chat: the persona is simply absent


def test_pinb_without_the_chat_extra(tmp_path: Path) -> None:
    code = """
import json, sys
for name in ("jupyter_ai_persona_manager", "jupyterlab_chat", "jupyter_ydoc", "pycrdt"):
    sys.modules[name] = None  # the chat extra is not installed
import pinb
from pinb.chat import link_chat, read_link
from pinb.chat.commands import COMMANDS
from pinb.chat.turns import ChatSession
from IPython.core.interactiveshell import InteractiveShell

ip = InteractiveShell.instance()
ip.run_line_magic("load_ext", "pinb")
result = ip.run_cell("%%pi --model offline\\nhello")
link = link_chat("x.chat", "s.jsonl")
try:
    import pinb.chat.persona
    persona = "imported"
except ImportError as exc:
    persona = type(exc).__name__
print(json.dumps({"cell": result.error_in_exec is None, "link": read_link("x.chat") == link,
                  "commands": len(COMMANDS), "persona": persona}))
"""
    found = _python(code, tmp_path)
    assert found == {"cell": True, "link": True, "commands": 9, "persona": "ModuleNotFoundError"}
