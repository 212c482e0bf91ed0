"""``%pi compactions``: the mixin's command, before it is wired into ``PiMagics``."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import magics_class

from pinb.errors import PinbError
from pinb.notebook.magics.compactions import CompactionsCommands
from pinb.views import RetentionView
from tests.analysis.retention_story import write_story


@magics_class
class _Commands(CompactionsCommands):
    """The mixin alone, registered as IPython wants a magics class to be."""


def test_compactions_of_a_file_and_of_one_entry(tmp_path: Path) -> None:
    session, ids = write_story(tmp_path)
    commands = _Commands(shell=InteractiveShell.instance())
    view = commands._cmd_compactions([str(session.path)])
    assert isinstance(view, RetentionView) and len(view.reports) == 2
    one = commands._cmd_compactions([str(session.path), "--id", ids["c2"][:6], "--rows", "5"])
    assert [r.compaction_id for r in one.reports] == [ids["c2"]] and one.max_rows == 5
    with pytest.raises(PinbError, match="not a compaction"):
        commands._cmd_compactions([str(session.path), "--id", ids["u1"]])
    with pytest.raises(PinbError):
        commands._cmd_compactions([str(tmp_path / "missing.jsonl")])
