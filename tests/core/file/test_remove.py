"""The core's half of `pinb rm`/`restore`: the file goes to the trash and back, memory untouched."""

from __future__ import annotations

from pathlib import Path

from pinb.core.file.paths import agent_dir
from pinb.core.file.remove import remove_session
from pinb.core.file.restore import removed_sessions, restore_session
from pinb.core.file.trash import NOTE_SUFFIX
from pinb.core.session import Session
from pinb.memory import default_db_path
from pinb.testing.messages import assistant, user


def _session(cwd: Path) -> Path:
    session = Session.create(str(cwd))
    session.append_message(user("keep this"))
    session.append_message(assistant("kept"))
    assert session.path is not None
    return Path(session.path)


def test_the_core_moves_the_file_and_back_without_opening_the_memory_database(
    tmp_path: Path,
) -> None:
    path = _session(tmp_path)
    before = path.read_bytes()

    removed = remove_session(path)

    assert not path.exists()
    assert removed.trash_path.read_bytes() == before
    assert removed.trash_path.with_name(removed.trash_path.name + NOTE_SUFFIX).is_file()
    assert removed.trash_path.is_relative_to(agent_dir())
    assert [r.trash_path for r in removed_sessions()] == [removed.trash_path]

    restored = restore_session(path)

    assert path.read_bytes() == before
    assert restored.trash_path == removed.trash_path
    assert removed_sessions() == []
    # the records citing a session are memory's business (pinb.memory.remove_session)
    assert (removed.memory_marked, restored.memory_restored) == (0, 0)
    assert not default_db_path().exists()
