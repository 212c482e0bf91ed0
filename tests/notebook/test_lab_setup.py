"""A newcomer's first ``bash .ci/lab``: it says what it is doing, and no warning they cannot act on.

The install step runs against a stand-in ``python3`` whose pip talks as pip 26 does (its
progress, an index warning, a build backend's ``!!`` box), so the script's own account of
it is checked in a second; the real build backend is checked on its own: an editable
install of this checkout with today's pip prints no warning box.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
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


def _checkout(tmp_path: Path, pip_fails: bool = False) -> Path:
    """A copy of the scripts, and a ``python3`` on PATH whose venv holds a talking pip."""
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / ".ci", checkout / ".ci")
    shutil.copy(REPO / "pyproject.toml", checkout / "pyproject.toml")
    collecting = "\n".join(f"Collecting package-{i}>=1.0" for i in range(1, 46))
    said = _PIP_SAYS.format(collecting=collecting)
    if pip_fails:
        said = (
            said.split("Installing collected")[0]
            + "ERROR: No matching distribution found for dask\n"
        )
    (checkout / "pip-says.txt").write_text(said)
    venv_python = textwrap.dedent(f"""\
        #!/bin/sh
        # pip: talk as pip does; `install --upgrade pip` says nothing with --quiet.
        case "$*" in
            *"--upgrade pip"*) echo "WARNING: Location 'file:///opt/x' is ignored" >&2; exit 0 ;;
        esac
        cat {checkout / "pip-says.txt"}
        exit {1 if pip_fails else 0}
        """)
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text(
        textwrap.dedent(f"""\
        #!/bin/sh
        # python3 -m venv .venv: a venv whose python is the talking pip, with a jupyter.
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


def _lab(checkout: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", ".ci/lab", "--no-browser"],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard
        stdin=subprocess.DEVNULL,
    )


def test_the_first_start_says_what_it_does_and_no_warning(tmp_path: Path) -> None:
    checkout = _checkout(tmp_path)
    done = _lab(checkout, tmp_path)
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert said[0].startswith("First start: installing pinb and JupyterLab into .venv")
    assert [line.strip() for line in said[1:]] == [
        "1/3 creating .venv",
        "2/3 updating pip",
        "3/3 installing pinb with JupyterLab, pandas, matplotlib and dask",
        "collecting packages: 1 (package-1>=1.0)",
        "collecting packages: 21 (package-21>=1.0)",
        "collecting packages: 41 (package-41>=1.0)",
        "installing 45 packages (the longest step)...",
        "done",
        "Installed. Starting JupyterLab...",
    ]
    assert done.stdout.startswith("jupyter lab ") and "--no-browser" in done.stdout
    assert (checkout / ".venv" / ".pinb-lab-installed").exists()
    log = (checkout / ".venv" / "pinb-install.log").read_text()
    assert "BuildBackendWarning" in log  # pip's whole account is kept, not shown
    # The second start installs nothing and says nothing.
    again = _lab(checkout, tmp_path)
    assert again.returncode == 0 and again.stderr == ""


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


@pytest.mark.slow
def test_an_editable_install_of_the_checkout_warns_of_nothing(tmp_path: Path) -> None:
    """Today's pip shows a build backend's warnings; setuptools has none for pinb's layout."""
    checkout = tmp_path / "pinb-checkout"
    checkout.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, checkout / name)
    shutil.copytree(REPO / "pinb", checkout / "pinb", ignore=shutil.ignore_patterns("__pycache__"))
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
    where = subprocess.run(
        [python, "-c", "import pinb; print(pinb.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    ).stdout
    assert Path(where.strip()).is_relative_to(checkout)
