"""``pinb rm`` and ``pinb restore`` keep to the sessions folder (issue 23, reproductions 5
and 6): a relative path from a subfolder, and a forged removal note.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinb.core.file.paths import sessions_root
from tests.odd_lines import HEADER, message_line, run_cli


def _session_file(folder: Path, name: str = "s.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(HEADER) + "\n" + message_line("u1", None, {"role": "user", "content": "hi", "timestamp": 1}, 1) + "\n")  # fmt: skip
    return path


def test_rm_of_a_relative_path_from_a_subfolder(monkeypatch: pytest.MonkeyPatch) -> None:
    project = sessions_root() / "--home-dev-proj--"
    path = _session_file(project)
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    code, _out, err = run_cli("rm", "../s.jsonl")
    assert code == 0, err
    assert not path.exists()
    agent = sessions_root().parent
    assert not (agent / "s.jsonl").exists()  # it used to land in the agent folder itself
    trashed = agent / "trash" / "--home-dev-proj--" / "s.jsonl"
    assert trashed.is_file()
    note = json.loads((trashed.parent / "s.jsonl.removed.json").read_text())
    assert note["originalPath"] == str(path)
    code, _, err = run_cli("restore", "../s.jsonl")
    assert code == 0, err
    assert path.is_file() and not trashed.exists()


def test_restore_refuses_a_forged_note(tmp_path: Path) -> None:
    trash = sessions_root().parent / "trash" / "--x--"
    victim = tmp_path / "outside" / "owned.jsonl"
    session = _session_file(trash, "forged.jsonl")
    note = {"originalPath": str(victim), "removedAt": "2026-01-01T00:00:00Z",
            "parentSession": None, "relinked": [str(tmp_path / "other.jsonl")]}  # fmt: skip
    (trash / "forged.jsonl.removed.json").write_text(json.dumps(note))
    for name in ("forged", str(victim)):
        code, _, err = run_cli("restore", name)
        assert code == 1
        assert "outside the sessions folder" in err and str(sessions_root()) in err
        assert "internal error" not in err
    assert not victim.exists() and not victim.parent.exists()
    assert session.is_file()  # left in the trash, untouched
    # A relative or dot-dot path in a note is no way around it.
    note["originalPath"] = str(sessions_root() / ".." / ".." / "escaped.jsonl")
    (trash / "forged.jsonl.removed.json").write_text(json.dumps(note))
    code, _, err = run_cli("restore", "forged")
    assert code == 1 and "outside the sessions folder" in err
    assert not (sessions_root().parent.parent / "escaped.jsonl").exists()
