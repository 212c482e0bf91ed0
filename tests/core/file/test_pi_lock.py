"""pinb and the real Pi exclude each other on a file: Pi's installed ``proper-lockfile`` against
``pinb.core.file.pi_lock``, both ways, a live holder kept fresh, a dead one's lock taken over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pinb.core.file.jsonfile import edit_json
from pinb.core.file.pi_lock import lock_path, locked
from pinb.errors import UserFileLockError
from pinb.llm.config.pi_config import fit_pi_compaction
from tests.pi.settings import PiLockHold, pi_compaction, pi_save_themes


def _settings(folder: Path, **fields: object) -> Path:
    path = folder / "settings.json"
    path.write_text(json.dumps(fields, indent=2))
    return path


def test_pinb_waits_while_pis_proper_lockfile_holds_the_lock(
    pi_install: Path, tmp_path: Path
) -> None:
    path = _settings(tmp_path, theme="dark")
    with PiLockHold(pi_install, path, 1500) as pi:
        assert "held" in pi.held()
        edited = fit_pi_compaction("local/small", 4096, tmp_path)
        done = time.time() * 1000
        assert done >= pi.released()  # it wrote only once Pi had let go
    assert edited.changed
    settings = json.loads(path.read_text())
    assert settings["theme"] == "dark"
    assert settings["compaction"]["modelOverrides"]["local/small"] == {
        "reserveTokens": 1024,
        "keepRecentTokens": 1024,
    }
    assert not lock_path(path).exists()


def test_pis_settings_writer_cannot_write_while_pinb_holds_the_lock(
    pi_install: Path, tmp_path: Path
) -> None:
    path = _settings(tmp_path, theme="dark")
    with locked(path):
        errors = pi_save_themes(pi_install, tmp_path, "light")
    # Pi's own SettingsManager: ten tries 20 ms apart, then the write is given up.
    assert errors and all("ELOCKED" in error for error in errors), errors
    assert json.loads(path.read_text()) == {"theme": "dark"}
    assert pi_save_themes(pi_install, tmp_path, "light") == []  # once pinb has let go
    assert json.loads(path.read_text()) == {"theme": "light"}


def test_a_long_hold_is_kept_fresh_past_proper_lockfiles_stale_time(
    pi_install: Path, tmp_path: Path
) -> None:
    """Held for longer than ``stale`` (2 s here, proper-lockfile's floor), the lock is
    refreshed: Pi, taking a lock whose mtime is older than that as a dead holder's, waits."""
    path = _settings(tmp_path)
    with locked(path, stale=2.0):
        time.sleep(3.0)
        with PiLockHold(pi_install, path, 10, stale_ms=2000) as pi:
            assert pi.held() == {"error": "ELOCKED"}
    assert not lock_path(path).exists()


def test_a_lock_whose_holder_is_gone_is_taken_over_both_ways(
    pi_install: Path, tmp_path: Path
) -> None:
    path = _settings(tmp_path, theme="dark")
    lock = lock_path(path)
    # Pi killed while it held the lock (no exit handler ran): its folder stays behind.
    with PiLockHold(pi_install, path, 600_000) as pi:
        assert "held" in pi.held()
        pi.process.send_signal(signal.SIGKILL)
        pi.process.wait(timeout=60)
    assert lock.is_dir()
    old = time.time() - 30  # more than proper-lockfile's 10 s without a refresh
    os.utime(lock, (old, old))
    # Taken over at the first try (no wait at all), and released.
    assert edit_json(path, lambda data: data.update(quietStartup=True), wait=0).changed
    assert not lock.exists()
    assert fit_pi_compaction("local/small", 4096, tmp_path).changed
    # pinb killed while it held the lock: Pi takes it over by the same rule.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""\
                import time
                from pinb.core.file.pi_lock import locked
                with locked({str(path)!r}):
                    print("held", flush=True)
                    time.sleep(600)
                """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        holder.kill()
        holder.wait(timeout=60)
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(timeout=60)
    assert lock.is_dir()
    assert pi_save_themes(pi_install, tmp_path, "light") == [
        "ELOCKED Lock file is already being held"
    ]
    os.utime(lock, (old, old))
    assert pi_save_themes(pi_install, tmp_path, "light") == []
    assert json.loads(path.read_text())["theme"] == "light"
    assert pi_compaction(pi_install, tmp_path, "local/small")["local/small"] == {
        "reserveTokens": 1024,
        "keepRecentTokens": 1024,
    }


def test_a_lock_held_past_the_wait_is_one_line_naming_the_lock(
    pi_install: Path, tmp_path: Path
) -> None:
    path = _settings(tmp_path, theme="dark")
    with PiLockHold(pi_install, path, 600_000) as pi:
        assert "held" in pi.held()
        with pytest.raises(UserFileLockError) as caught:
            edit_json(path, lambda data: data.update(theme="light"), wait=0.5)
    message = str(caught.value)
    assert message.startswith(f"{path}: still locked after waiting 0.5 s (its lock {path}.lock")
    assert "a running Pi or another pinb" in message and "\n" not in message
    assert caught.value.path == path
    assert json.loads(path.read_text()) == {"theme": "dark"}


def test_pinb_writers_in_threads_take_turns(tmp_path: Path) -> None:
    """The lock is a folder, so it excludes threads of one process as well as processes."""
    path = _settings(tmp_path)
    inside = 0
    most = 0
    guard = threading.Lock()

    def hold() -> None:
        nonlocal inside, most
        with locked(path):
            with guard:
                inside += 1
                most = max(most, inside)
            time.sleep(0.02)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=hold) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert most == 1 and not lock_path(path).exists()
