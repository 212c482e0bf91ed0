"""A newcomer's first ``bash .ci/lab``: it says what it is doing, and no warning they cannot act on;
two starts at once (or two ``.ci/test`` setups) install once at a time.

The install step runs against a stand-in ``python3`` whose pip talks as pip 26 does (its
progress, an index warning, a build backend's ``!!`` box) and whose uv as uv 0.13 does, so
the script's account of either, and its choice between them, is checked in a second. The
real things are checked on their own: an editable install of this checkout with today's pip
prints no warning box, and the real first start with uv installs and starts JupyterLab.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: What pip 26 writes while installing pinb[all] (cut down), warnings and the box included.
_PIP_SAYS = """\
Obtaining file:///checkout
WARNING: Location 'file:///opt/pypi-more/simple/pip/' is ignored: it is neither a file nor a directory.
  Installing build dependencies: started
{collecting}
  /tmp/pip-build-env/overlay/setuptools/command/editable_wheel.py:354: BuildBackendWarning: Editable installation.
  !!

          ********************************************************************************
          Please be careful with folders in your working directory with the same
          name as your package as they may take precedence during imports.
          ********************************************************************************

  !!
Installing collected packages: pinb, jupyterlab
Successfully installed jupyterlab-4.6.6 pinb-0.1.0
"""


#: What uv 0.13 writes while installing pinb[all] (cut down).
_UV_SAYS = """\
Using Python 3.11.7 environment at: .venv
Resolved 134 packages in 2.01s
   Building pinb @ file:///checkout
      Built pinb @ file:///checkout
Prepared 41 packages in 6.20s
Installed 134 packages in 219ms
Bytecode compiled 11730 files in 9.82s
 + annotated-types==0.8.0
 + pinb==0.1.0 (from file:///checkout)
"""

#: A pip configured by its user (a file or a PIP_* variable), as `pip config list` says it.
_CONFIGURED = "global.index-url='https://pypi.example.org/simple'\n"


#: What pip 26 says when it breaks mid-install (two installs into one .venv at once).
_PIP_BREAKS = """\
ERROR: Exception:
Traceback (most recent call last):
  File "/checkout/.venv/lib/python3.11/site-packages/pip/_internal/cli/base_command.py", line 107, in _run_wrapper
    status = _inner_run()
  File "/checkout/.venv/lib/python3.11/site-packages/pip/_internal/operations/install/wheel.py", line 640, in _install_wheel
    os.makedirs(dest)
FileExistsError: [Errno 17] File exists: '/checkout/.venv/lib/python3.11/site-packages/pip'
"""


def _checkout(
    tmp_path: Path,
    pip_fails: bool = False,
    pip_config: str = _CONFIGURED,
    uv: str | None = None,
    pip_failure: str = "ERROR: No matching distribution found for dask\n",
    upgrade_fails: bool = False,
    delay: float = 0,
) -> Path:
    """A copy of the scripts, and a ``python3`` on PATH whose venv holds a talking pip.

    ``pip_config``: what its ``pip config list`` prints. ``uv``: what ``pip install uv``
    brings: ``None`` (it fails), ``"works"`` or ``"fails"`` (a uv that talks as uv does and
    installs, or stops at a resolution error). ``pip_failure``: what a failing install
    says at its end; ``upgrade_fails``: ``pip install --upgrade pip`` breaks (saying
    :data:`_PIP_BREAKS`). ``delay``: seconds the install of pinb takes. Each ``python3 -m
    venv`` adds a line to ``venv-made.txt``.
    """
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / ".ci", checkout / ".ci")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    collecting = "\n".join(f"Collecting package-{i}>=1.0" for i in range(1, 46))
    said = _PIP_SAYS.format(collecting=collecting)
    if pip_fails:
        said = said.split("Installing collected")[0] + pip_failure
    (checkout / "pip-breaks.txt").write_text(_PIP_BREAKS)
    (checkout / "pip-says.txt").write_text(said)
    (checkout / "pip-config.txt").write_text(pip_config)
    uv_says = (
        _UV_SAYS if uv == "works" else "error: No solution found when resolving dependencies\n"
    )
    (checkout / "uv-says.txt").write_text(uv_says)
    fake_uv = f'#!/bin/sh\necho "uv $*" >> {checkout / "uv-ran.txt"}\n'
    fake_uv += f"cat {checkout / 'uv-says.txt'} >&2\nexit {0 if uv == 'works' else 1}\n"
    (checkout / "fake-uv").write_text(fake_uv)
    fetch_uv = (
        f"cp {checkout / 'fake-uv'} .venv/bin/uv; chmod +x .venv/bin/uv; exit 0"
        if uv
        else "echo 'ERROR: Could not find a version that satisfies the requirement uv' >&2; exit 1"
    )
    upgrade = (
        f"cat {checkout / 'pip-breaks.txt'} >&2; exit 2"
        if upgrade_fails
        else "echo \"WARNING: Location 'file:///opt/x' is ignored\" >&2; exit 0"
    )
    venv_python = textwrap.dedent(f"""\
        #!/bin/sh
        # pip: talk as pip does; `install --upgrade pip` says nothing with --quiet.
        case "$*" in
            *"config list"*) cat {checkout / "pip-config.txt"}; exit 0 ;;
            *"install --quiet --disable-pip-version-check uv"*) {fetch_uv} ;;
            *"--upgrade pip"*) {upgrade} ;;
        esac
        cat {checkout / "pip-says.txt"}
        sleep {delay}
        exit {1 if pip_fails else 0}
        """)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        # python3 -m venv .venv: a venv whose python is the talking pip, with a jupyter.
        echo "venv $$" >> {checkout / "venv-made.txt"}
        mkdir -p .venv/bin
        cat > .venv/bin/python <<'PY'
        {textwrap.indent(venv_python, "        ").strip()}
        PY
        printf '#!/bin/sh\\necho "jupyter $*"\\n' > .venv/bin/jupyter
        chmod +x .venv/bin/python .venv/bin/jupyter
        """)
    )
    (fake / "python3").chmod(0o755)
    return checkout


def _start_lab(checkout: Path, tmp_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.Popen(
        ["bash", ".ci/lab", "--no-browser"],
        cwd=checkout,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def _finished(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = process.communicate(timeout=120)  # a hang guard
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _lab(checkout: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return _finished(_start_lab(checkout, tmp_path))


#: What the first start says while pip installs (the stand-in's account, told short).
_PIP_STEPS = [
    "2/3 updating pip",
    "3/3 installing pinb with JupyterLab, pandas, matplotlib and dask (pip: a few minutes)",
    "collecting packages: 1 (package-1>=1.0)",
    "collecting packages: 21 (package-21>=1.0)",
    "collecting packages: 41 (package-41>=1.0)",
    "installing 45 packages (the longest step)...",
    "done",
]


def _steps(said: str) -> list[str]:
    lines = said.splitlines()
    assert lines[0].startswith("First start: installing pinb and JupyterLab into .venv")
    return [line.strip() for line in lines[1:]]


@pytest.mark.parametrize(
    "config",
    [
        _CONFIGURED,
        ":env:.find-links='/opt/wheels'\n",
        ":env:.default-timeout='180'\nglobal.cert='/etc/ssl/certs/ca-certificates.crt'\n",
        "global.constraint='/etc/xdg/pip/constraints.txt'\n",
    ],
)
def test_the_first_start_says_what_it_does_and_no_warning(tmp_path: Path, config: str) -> None:
    """A pip its user configured installs, as configured: uv is not fetched."""
    checkout = _checkout(tmp_path, pip_config=config, uv="works")
    done = _lab(checkout, tmp_path)
    assert done.returncode == 0, done.stderr
    assert _steps(done.stderr) == [
        "1/3 creating .venv",
        *_PIP_STEPS,
        "Installed. Starting JupyterLab...",
    ]
    assert not (checkout / ".venv" / "bin" / "uv").exists()
    assert done.stdout.startswith("jupyter lab ") and "--no-browser" in done.stdout
    assert (checkout / ".venv" / ".pinb-lab-installed").exists()
    log = (checkout / ".venv" / "pinb-install.log").read_text()
    assert "BuildBackendWarning" in log  # pip's whole account is kept, not shown
    # The second start installs nothing and says nothing.
    again = _lab(checkout, tmp_path)
    assert again.returncode == 0 and again.stderr == ""


@pytest.mark.parametrize("config", ["", ":env:.default-timeout='180'\n:env:.no-cache-dir='1'\n"])
def test_with_pip_unconfigured_uv_installs_and_says_what_it_did(
    tmp_path: Path, config: str
) -> None:
    """Nothing in pip's configuration says where packages come from: uv installs them."""
    checkout = _checkout(tmp_path, pip_config=config, uv="works")
    done = _lab(checkout, tmp_path)
    assert done.returncode == 0, done.stderr
    assert _steps(done.stderr) == [
        "1/3 creating .venv",
        "2/3 fetching uv (it installs in seconds where pip takes minutes)",
        "3/3 installing pinb with JupyterLab, pandas, matplotlib and dask",
        "resolved 134 packages",
        "prepared 41 packages",
        "installed 134 packages",
        "Installed. Starting JupyterLab...",
    ]
    ran = (checkout / "uv-ran.txt").read_text()
    assert "pip install --compile-bytecode --python .venv/bin/python -e .[all]" in ran
    assert "Bytecode compiled" in (checkout / ".venv" / "pinb-install-uv.log").read_text()
    assert done.stdout.startswith("jupyter lab ")
    again = _lab(checkout, tmp_path)
    assert again.returncode == 0 and again.stderr == ""


@pytest.mark.parametrize("uv", [None, "fails"])
def test_when_uv_cannot_be_had_or_fails_pip_installs(tmp_path: Path, uv: str | None) -> None:
    checkout = _checkout(tmp_path, pip_config="", uv=uv)
    done = _lab(checkout, tmp_path)
    assert done.returncode == 0, done.stderr
    if uv is None:
        why = ["2/3 fetching uv (it installs in seconds where pip takes minutes)",
               "uv could not be fetched; pip installs instead (a few minutes)"]  # fmt: skip
    else:
        why = ["2/3 fetching uv (it installs in seconds where pip takes minutes)",
               "3/3 installing pinb with JupyterLab, pandas, matplotlib and dask",
               "uv could not install (its account is in .venv/pinb-install-uv.log);"
               " pip installs instead. uv said:",
               "error: No solution found when resolving dependencies"]  # fmt: skip
    assert _steps(done.stderr) == [
        "1/3 creating .venv",
        *why,
        *_PIP_STEPS,
        "Installed. Starting JupyterLab...",
    ]
    assert (checkout / ".venv" / ".pinb-lab-installed").exists()


def test_a_failed_install_shows_pips_error(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path, pip_fails=True)
    done = _lab(checkout, tmp_path)
    assert done.returncode == 1
    assert "ERROR: No matching distribution found for dask" in done.stderr
    assert (
        "The install failed. pip's last lines (all of its output is in .venv/pinb-install.log):"
        in (done.stderr)
    )
    assert done.stdout == "" and not (checkout / ".venv" / ".pinb-lab-installed").exists()


def test_a_pip_that_breaks_is_shown_in_its_own_words(tmp_path: Path) -> None:
    """A pip that cannot update itself, then fails the install with a traceback: both
    accounts are shown, down to the exception's own line, not only ``ERROR: Exception:``."""
    checkout = _checkout(tmp_path, pip_fails=True, pip_failure=_PIP_BREAKS, upgrade_fails=True)
    done = _lab(checkout, tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    lines = [line.strip() for line in done.stderr.splitlines()]
    update = lines.index(
        "pip could not update itself; the pip there is installs. pip said (all of it is in "
        ".venv/pinb-pip-update.log):"
    )
    broken = [line.strip() for line in _PIP_BREAKS.splitlines()]
    assert lines[update + 1 : update + 1 + len(broken)] == broken
    failed = lines.index(
        "The install failed. pip's last lines (all of its output is in .venv/pinb-install.log):"
    )
    assert lines[-len(broken) :] == broken and failed < len(lines) - len(broken)
    assert not (checkout / ".venv" / ".pinb-lab-installed").exists()


def test_two_starts_at_once_install_once_and_both_start(tmp_path: Path) -> None:
    """The second start waits for the first one's install (a lock beside .venv), then
    starts JupyterLab on it: one .venv made, both start, no error."""
    checkout = _checkout(tmp_path, delay=2)
    first = _start_lab(checkout, tmp_path)
    made = checkout / "venv-made.txt"
    deadline = time.monotonic() + 60
    while not made.exists():  # the first start holds the lock and is installing
        assert time.monotonic() < deadline and first.poll() is None, _finished(first).stderr
        time.sleep(0.02)
    second = _lab(checkout, tmp_path)
    first_done = _finished(first)
    assert first_done.returncode == 0, first_done.stderr
    assert second.returncode == 0, second.stderr
    assert _steps(first_done.stderr)[0] == "1/3 creating .venv"
    assert second.stderr.splitlines() == [
        "Another start is installing pinb into .venv; waiting for it to finish...",
        "The other start has installed it. Starting JupyterLab...",
    ]
    assert len(made.read_text().splitlines()) == 1  # .venv was made once
    for done in (first_done, second):
        assert done.stdout.startswith("jupyter lab ") and "--no-browser" in done.stdout
    assert (checkout / ".venv" / ".pinb-lab-installed").exists()


def _test_checkout(tmp_path: Path) -> Path:
    """A copy of the scripts and stand-ins for what ``.ci/test`` runs: ``python3`` (its venv,
    the Pi install), the venv's pip, a uv whose install takes a second, pytest; and the
    Debian tools it looks for, so it asks apt for nothing. Each step adds a line to
    ``events.txt``."""
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / ".ci", checkout / ".ci")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    events = checkout / "events.txt"
    fake = tmp_path / "bin"
    fake.mkdir()
    for tool in ("chromium", "npm", "openssl"):
        (fake / tool).write_text("#!/bin/sh\nexit 0\n")
    uv = f'#!/bin/sh\necho "uv start" >> {events}\nsleep 1\necho "uv end" >> {events}\n'
    (checkout / "fake-uv").write_text(uv)
    venv_python = textwrap.dedent(f"""\
        #!/bin/sh
        case "$*" in
            *"install --quiet uv"*) cp {checkout / "fake-uv"} .venv/bin/uv; chmod +x .venv/bin/uv ;;
            *"-m pytest"*) echo "pytest $*" ;;
        esac
        exit 0
        """)
    (checkout / "venv-python").write_text(venv_python)
    (fake / "python3").write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        # python3 -m tests.pi.reference (the Pi install): nothing to do;
        # python3 -m venv .venv: a stand-in venv.
        if [ "$2" = "tests.pi.reference" ]; then exit 0; fi
        echo "venv" >> {events}
        mkdir -p .venv/bin
        cp {checkout / "venv-python"} .venv/bin/python
        chmod +x .venv/bin/python
        """)
    )
    for tool in fake.iterdir():
        tool.chmod(0o755)
    return checkout


def test_two_test_setups_at_once_take_turns(tmp_path: Path) -> None:
    """``.ci/test`` makes and fills .venv under the same lock: a second run's setup starts
    only once the first one's has ended, then both run the tests."""
    checkout = _test_checkout(tmp_path)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            ["bash", ".ci/test", "-k", "x"],
            cwd=checkout,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )

    first = start()
    events = checkout / "events.txt"
    deadline = time.monotonic() + 60
    while not events.exists():
        assert time.monotonic() < deadline and first.poll() is None, _finished(first).stderr
        time.sleep(0.02)
    second = _finished(start())
    first_done = _finished(first)
    for done in (first_done, second):
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("pytest -m pytest -q -n ") and done.stdout.rstrip().endswith(
            "-k x"
        )
    assert "Another setup of .venv is running; waiting for it to finish..." in second.stderr
    assert events.read_text().splitlines() == ["venv", "uv start", "uv end"] * 2


def _copy_checkout(checkout: Path, *folders: str) -> Path:
    """A copy of what installing pinb reads (and ``folders``), without bytecode caches."""
    checkout.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, checkout / name)
    for folder in ("pinb", *folders):
        shutil.copytree(
            REPO / folder, checkout / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    return checkout


def _pinb_imported_by(python: str, env: dict[str, str], cwd: Path) -> Path:
    """Where ``python`` imports pinb from."""
    where = subprocess.run(
        [python, "-c", "import pinb; print(pinb.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=cwd,
        env=env,
    ).stdout
    return Path(where.strip())


@pytest.mark.slow
def test_an_editable_install_of_the_checkout_warns_of_nothing(tmp_path: Path) -> None:
    """Today's pip shows a build backend's warnings; setuptools has none for pinb's layout."""
    checkout = _copy_checkout(tmp_path / "pinb-checkout")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    upgrade = subprocess.run(
        [*pip, "install", "--quiet", "--upgrade", "pip>=25"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert upgrade.returncode == 0, upgrade.stderr
    done = subprocess.run(
        [*pip, "install", "--no-deps", "-e", str(checkout)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "!!" not in said and "BuildBackendWarning" not in said, said
    assert "Editable installation" not in said, said
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert _pinb_imported_by(python, env, tmp_path).is_relative_to(checkout)


@pytest.mark.slow(seconds=30)
def test_the_real_first_start_with_uv(tmp_path: Path) -> None:
    """The real thing: ``.ci/lab`` in a copy of this checkout, pip without configuration,
    fetches uv, installs pinb[all] with it and starts JupyterLab (``--version``)."""
    checkout = _copy_checkout(tmp_path / "pinb-checkout", ".ci")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    env["PIP_CONFIG_FILE"] = os.devnull  # no configuration file is read
    done = subprocess.run(
        ["bash", ".ci/lab", "--version"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,  # a hang guard
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    steps = _steps(done.stderr)
    assert steps[:3] == [
        "1/3 creating .venv",
        "2/3 fetching uv (it installs in seconds where pip takes minutes)",
        "3/3 installing pinb with JupyterLab, pandas, matplotlib and dask",
    ], done.stderr
    assert steps[-1] == "Installed. Starting JupyterLab..."
    assert any(re.fullmatch(r"installed \d+ packages", step) for step in steps), steps
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", done.stdout.strip()), done.stdout
    python = str(checkout / ".venv" / "bin" / "python")
    assert _pinb_imported_by(python, env, tmp_path).is_relative_to(checkout)
    # JupyterLab's news (a notification, and requests to jupyter.org) is off in this .venv.
    page_config = checkout / ".venv" / "etc" / "jupyter" / "labconfig" / "page_config.json"
    disabled = json.loads(page_config.read_text())["disabledExtensions"]
    assert disabled == {"@jupyterlab/apputils-extension:announcements": True}
