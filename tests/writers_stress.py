"""A seeded run of every writer on one session: a kernel's cells, the Pi engine, ``pi -p`` in a
terminal, and ``pinb`` compact/fork/rm/restore, with the invariants checked after each step.

Used by ``tests/test_many_writers.py`` (a short run) and ``benchmarks/bench_writers.py`` (a long
one). The writers are the real ones: an IPython shell with ``%load_ext pinb``, the real Pi
1.6.0 (``pi --mode rpc`` behind ``--engine pi`` and the ``pi`` CLI), and ``python -m
pinb.cli`` in subprocesses, all against one loopback LLM server.

After every step:

- nothing is lost: every file's earlier bytes are a prefix of its bytes now (wherever
  ``pinb rm`` moved it);
- pinb and Pi 1.6.0 both open every file, and build the same context from it;
- the conversation is one chain: every prompt sent to the main file is on the path to its
  leaf, in the order it was sent, whoever sent it.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from IPython.core.interactiveshell import InteractiveShell

from pinb.core import Session
from pinb.core.file.trash import trashed_as

from .pi.loop import MODEL, PiLoop
from .pi.reference import PiReference

__all__ = ["WritersRun"]

#: How often each writer acts (a cell is the most common thing a notebook user does).
WEIGHTS = {
    "cell": 4,
    "engine": 3,
    "terminal": 3,
    "compact": 1,
    "fork": 1,
    "rm-held": 1,
    "rm-fork": 1,
    "restore": 1,
}


@dataclass
class WritersRun:
    """One seeded run; :meth:`run` does ``steps`` steps and returns what happened."""

    shell: InteractiveShell
    loop: PiLoop
    pi: PiReference
    project: Path
    seed: int
    #: Prompts sent to the main file, in order.
    prompts: list[str] = field(default_factory=list)
    #: Every file seen, with its bytes when last checked (keyed by its original path).
    seen: dict[Path, bytes] = field(default_factory=dict)
    removed: list[Path] = field(default_factory=list)
    forks: list[Path] = field(default_factory=list)
    done: Counter[str] = field(default_factory=Counter)

    @property
    def magics(self) -> Any:
        return self.shell.magics_manager.registry["PiMagics"]

    @property
    def main(self) -> Path:
        path = self.magics.session.path
        assert path is not None
        return Path(path)

    def run(self, steps: int) -> Counter[str]:
        rng = random.Random(self.seed)
        self.cell(0)  # the session starts in a notebook
        names = list(WEIGHTS)
        first = rng.sample(names, len(names))  # every writer once, in a seeded order
        for step in range(1, steps):
            if step <= len(first):
                action = first[step - 1]
            else:
                action = rng.choices(names, weights=[WEIGHTS[n] for n in names])[0]
            getattr(self, action.replace("-", "_"))(step)
            self.check(f"step {step}: {action}")
        return self.done

    # -- the writers ------------------------------------------------------------------------

    def _reply(self, step: int, who: str) -> None:
        # Long enough that a few turns give a compaction something to summarize.
        self.loop.server.reply(text=f"answer {step} by {who}. " + "detail " * 150)

    def _cell(self, line: str, prompt: str) -> None:
        result = self.shell.run_cell(f"%%pi {line}\n{prompt}")
        if result.error_in_exec is not None:
            raise result.error_in_exec
        self.prompts.append(prompt)

    def cell(self, step: int) -> None:
        self._reply(step, "cell")
        self._cell(f"--model {MODEL}", f"step {step} from a cell")
        self.done["cell"] += 1

    def engine(self, step: int) -> None:
        self._reply(step, "engine")
        self._cell(f"--engine pi --model {MODEL}", f"step {step} from the Pi engine")
        self.done["engine"] += 1

    def terminal(self, step: int) -> None:
        self._reply(step, "terminal")
        prompt = f"step {step} from pi in a terminal"
        argv = [
            *self.loop.argv, "-p", "--session", str(self.main), "--model", MODEL, "--offline",
            "--no-tools", "--no-extensions", "--no-skills", "--no-context-files",
            "--no-prompt-templates", prompt,
        ]  # fmt: skip
        done = subprocess.run(
            argv, env=self.loop.env, cwd=self.project, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stderr
        self.prompts.append(prompt)
        self.done["terminal"] += 1

    def _pinb(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pinb.cli", *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.project,
        )

    def compact(self, step: int) -> None:
        done = self._pinb("compact", str(self.main), "--offline", "--window", "2000")
        said = done.stdout + done.stderr
        # Too little to summarize, or just compacted: both are answers, not failures.
        assert done.returncode == 0 or "othing to compact" in said or "Already compacted" in said, (
            said
        )
        self.done["compact" if done.returncode == 0 else "compact (nothing)"] += 1

    def fork(self, step: int) -> None:
        result = self.shell.run_cell("%pi fork --stay")
        assert result.error_in_exec is None, result.error_in_exec
        newest = max(self.main.parent.glob("*.jsonl"), key=lambda p: p.stat().st_mtime_ns)
        if newest != self.main and newest not in self.forks:
            self.forks.append(newest)
        self.done["fork"] += 1

    def rm_held(self, step: int) -> None:
        """The notebook's session is held: ``pinb rm`` refuses and says who holds it."""
        done = self._pinb("rm", str(self.main))
        assert done.returncode != 0 and "in use by" in done.stderr, done.stderr
        assert self.main.exists()
        self.done["rm refused"] += 1

    def rm_fork(self, step: int) -> None:
        """A fork nobody holds goes to the trash (one is made first when there is none)."""
        if not any(f.exists() for f in self.forks):
            self.fork(step)
        target = next(f for f in self.forks if f.exists())
        done = self._pinb("rm", str(target))
        assert done.returncode == 0, done.stderr
        self.removed.append(target)
        self.done["rm"] += 1

    def restore(self, step: int) -> None:
        """A removed fork comes back (one is removed first when none is in the trash)."""
        if not self.removed:
            self.rm_fork(step)
        target = self.removed.pop(0)
        done = self._pinb("restore", str(target))
        assert done.returncode == 0, done.stderr
        assert target.exists()
        self.done["restore"] += 1

    # -- the invariants ---------------------------------------------------------------------

    def check(self, where: str) -> None:
        for original in {self.main, *self.forks}:
            path = original if original.exists() else trashed_as(original)
            assert path is not None and path.exists(), f"{where}: {original} is gone"
            data = path.read_bytes()
            before = self.seen.get(original, b"")
            assert data.startswith(before), f"{where}: {path} lost bytes"
            self.seen[original] = data
            self._same_context(path, where)
        self._one_chain(where)

    def _same_context(self, path: Path, where: str) -> None:
        session = Session.open(path)
        assert session.problems == [], f"{where}: {path}: {session.problems}"
        ours = json.loads(json.dumps(session.build_context().to_wire()))
        theirs = self.pi.open(path)
        assert theirs["leafId"] == session.leaf_id or _through_marker(session, theirs["leafId"]), (
            f"{where}: Pi resumes {path} at {theirs['leafId']}, pinb at {session.leaf_id}"
        )
        assert theirs["context"] == ours, f"{where}: Pi and pinb build different contexts of {path}"

    def _one_chain(self, where: str) -> None:
        session = Session.open(self.main)
        on_path = [_text(e.message) for e in session.path_to() if e.role == "user"]
        assert on_path == self.prompts, (
            f"{where}: the conversation is not one chain of the prompts sent:\n"
            f"  on the path: {on_path}\n  sent:        {self.prompts}"
        )
        everywhere = [_text(e.message) for e in session.entries if e.role == "user"]
        assert sorted(everywhere) == sorted(self.prompts), f"{where}: a prompt sits off the path"


def _through_marker(session: Session, pi_leaf: Any) -> bool:
    """Pi's leaf is a trailing navigation marker pinb sees through (the same context)."""
    entry = session.get(pi_leaf)
    return entry is not None and entry.is_navigation and entry.parent_id == session.leaf_id


def _text(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))
