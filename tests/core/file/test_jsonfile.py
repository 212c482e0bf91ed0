"""``edit_json``: a change merged into the file as it is, every other field kept, written whole;
a file that is not JSON never written; a backup only when asked."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from pinb.core.file.jsonfile import edit_json, read_json_object
from pinb.core.file.pi_lock import lock_path
from pinb.errors import UserFileError, UserFileLockError

#: A settings file as a user and Pi leave it: fields pinb knows nothing of, text in any
#: script, an order of keys of its own.
_THEIRS = """{
  "zeta": {"deep": [1, {"x": null}], "ünïcode": "日本語 ✓"},
  "compaction": {"enabled": false, "modelOverrides": {"a/b": {"reserveTokens": 9, "note": "mine"}}},
  "alpha": 1.5
}
"""


def _fit(data: dict[str, Any]) -> None:
    overrides = data.setdefault("compaction", {}).setdefault("modelOverrides", {})
    overrides.setdefault("a/b", {})["keepRecentTokens"] = 7


def test_the_change_is_merged_into_what_is_there_every_other_field_kept(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(_THEIRS, encoding="utf-8")
    edited = edit_json(path, _fit)
    assert edited.changed and edited.backup is None
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == {
        "zeta": {"deep": [1, {"x": None}], "ünïcode": "日本語 ✓"},
        "compaction": {
            "enabled": False,
            "modelOverrides": {"a/b": {"reserveTokens": 9, "note": "mine", "keepRecentTokens": 7}},
        },
        "alpha": 1.5,
    }
    assert list(json.loads(text)) == ["zeta", "compaction", "alpha"]  # the file's own order
    assert "日本語 ✓" in text  # as written, not as \\u escapes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]  # no lock, no temp


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"a": 1,\n  "b": [1, 2,]\n}\n', ":2:14: not valid JSON (Expecting value)"),
        ('{"a": 1} trailing', ":1:10: not valid JSON (Extra data)"),
        ('{"a": NaN}', ": not valid JSON (invalid JSON literal NaN)"),  # JSON.parse refuses it
        ("[1, 2]", ": holds an array, not a JSON object"),
    ],
)
def test_a_file_that_is_not_a_json_object_is_never_written(
    tmp_path: Path, text: str, where: str
) -> None:
    path = tmp_path / "models.json"
    path.write_text(text)
    with pytest.raises(UserFileError) as caught:
        edit_json(path, lambda data: data.update(x=1), backup=True)
    message = str(caught.value)
    assert message.startswith(f"{path}{where};") and "fix it by hand" in message
    assert "\n" not in message
    assert path.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models.json"]


def test_a_bom_is_read_as_pi_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(b'\xef\xbb\xbf{"theme": "dark"}')
    edit_json(path, lambda data: data.update(quietStartup=True))
    assert json.loads(path.read_text()) == {"theme": "dark", "quietStartup": True}


def test_the_mode_is_kept_and_a_backup_is_made_only_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"providers": {}}')
    path.chmod(0o600)
    edit_json(path, lambda data: data.update(a=1))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not path.with_name("models.json.bak").exists()
    before = path.read_bytes()
    edited = edit_json(path, lambda data: data.update(a=2), backup=True)
    assert edited.backup == path.with_name("models.json.bak")
    assert edited.backup.read_bytes() == before
    assert stat.S_IMODE(edited.backup.stat().st_mode) == 0o600  # a key in it stays private
    edit_json(path, lambda data: data.update(a=3), backup=True)
    assert json.loads(edited.backup.read_text()) == {"providers": {}, "a": 2}  # one, replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models.json", "models.json.bak"]


def test_a_change_already_there_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"a":1}')  # not as pinb would lay it out
    before = path.stat()
    edited = edit_json(path, lambda data: data.update(a=1), backup=True)
    assert not edited.changed and edited.backup is None
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert path.read_text() == '{"a":1}' and not path.with_name("settings.json.bak").exists()


def test_a_missing_file_and_folder_are_made(tmp_path: Path) -> None:
    path = tmp_path / "agent" / "settings.json"
    assert edit_json(path, lambda data: data.update(a=1)).changed
    assert json.loads(path.read_text()) == {"a": 1}
    assert read_json_object(tmp_path / "nothing.json") == {}


def test_a_symlinked_file_is_locked_by_its_own_name_and_its_target_written(tmp_path: Path) -> None:
    """Pi locks ``settings.json`` with ``realpath: false``: the lock is beside the link."""
    target = tmp_path / "dotfiles" / "pi-settings.json"
    target.parent.mkdir()
    target.write_text('{"theme": "dark"}')
    link = tmp_path / "agent" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(target)
    assert lock_path(link) == tmp_path / "agent" / "settings.json.lock"
    edit_json(link, lambda data: data.update(a=1))
    assert link.is_symlink() and json.loads(target.read_text()) == {"theme": "dark", "a": 1}


def test_a_change_the_file_cannot_take_is_refused_and_nothing_written(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"compaction": 3}')

    def refuse(data: dict[str, Any]) -> None:
        raise UserFileError(f"{path}: 'compaction' is not an object", path=path)

    with pytest.raises(UserFileError, match="'compaction' is not an object"):
        edit_json(path, refuse)
    assert path.read_text() == '{"compaction": 3}' and not lock_path(path).exists()


def test_a_lock_taken_over_during_the_change_writes_nothing_and_keeps_the_new_lock(
    tmp_path: Path,
) -> None:
    """Someone who took pinb's lock for a dead holder's (its mtime gone stale) owns it now:
    pinb writes nothing and leaves their lock alone."""
    path = tmp_path / "settings.json"
    path.write_text('{"a": 1}')
    lock = lock_path(path)

    def taken_over(data: dict[str, Any]) -> None:
        data["a"] = 2
        os.rmdir(lock)
        os.mkdir(lock)

    with pytest.raises(UserFileLockError, match="was taken over while pinb was writing"):
        edit_json(path, taken_over)
    assert path.read_text() == '{"a": 1}'
    assert lock.is_dir()  # the new holder's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json", "settings.json.lock"]
