"""Exports of hostile or odd session files: no crash, no live HTML or script, no lost output file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import mistune
import pytest

from pinb.analysis.export import write_export
from pinb.errors import UsageError

# No "img": a picture the model links to is a link (nothing in an export is fetched).
_SAFE_TAGS = {"p", "h1", "h2", "h3", "em", "strong", "code", "pre", "a", "ul", "ol", "li",
              "blockquote", "hr", "br"}  # fmt: skip
_SCRIPT_SCHEMES = ("javascript:", "vbscript:", "data:")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _assert_inert(html_text: str) -> None:
    """What a Markdown renderer that passes raw HTML (as nbconvert's does) makes of it."""
    parser = _Tags()
    parser.feed(html_text)
    for tag, attrs in parser.tags:
        assert tag in _SAFE_TAGS, (tag, attrs)
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, attrs)
            url = "".join((value or "").split()).lower()
            assert not url.startswith(_SCRIPT_SCHEMES), (tag, attrs)


def _write(path: Path, header: dict[str, Any], entries: list[dict[str, Any]]) -> Path:
    lines = [json.dumps({"type": "session", "version": 3, "timestamp": "2025-01-01T00:00:00.000Z",
                         **header})]  # fmt: skip
    lines += [json.dumps(e) for e in entries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _message(entry_id: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": entry_id, "parentId": parent,
            "timestamp": "2025-01-01T00:00:01.000Z", "message": message}  # fmt: skip


HOSTILE_TEXT = (
    "[click](javascript:alert(1)) [two](JavaScript:alert(2)) ![img](data:text/html,<b>x</b>)\n\n"
    "[ref]: vbscript:msgbox(3)\n\n<img src=x onerror=alert(4)> <script>alert(5)</script>"
)


@pytest.fixture
def hostile_file(tmp_path: Path) -> Path:
    call = {"type": "toolCall", "id": "c1", "name": "bash\nimport os; os.system('rm -rf ~')",
            "arguments": {"command": "ls"}}  # fmt: skip
    return _write(
        tmp_path / "hostile.jsonl",
        {"id": "s`1\n\n<img src=x onerror=alert(0)>", "cwd": "/p\n\n<script>alert(6)</script>"},
        [
            _message(
                "a1",
                None,
                {
                    "role": "<img src=x onerror=alert(7)>",
                    "content": [{"type": "text", "text": HOSTILE_TEXT}],
                    "timestamp": 1,
                },
            ),
            _message(
                "a2",
                "a1",
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": HOSTILE_TEXT}, call],
                    "model": "m<script>alert(8)</script>",
                    "stopReason": "toolUse",
                    "timestamp": 2,
                },
            ),
            _message(
                "a3",
                "a2",
                {
                    "role": "toolResult",
                    "toolCallId": "c1",
                    "toolName": "bash",
                    "isError": False,
                    "content": [
                        {"type": "image", "mimeType": "image/png", "data": 'x" onerror="alert(9)'}
                    ],
                    "timestamp": 3,
                },
            ),
        ],
    )


def test_markdown_export_renders_without_live_html_or_script_links(hostile_file: Path) -> None:
    text = write_export(hostile_file, "md")
    _assert_inert(mistune.html(text))


def test_notebook_markdown_cells_render_without_live_html_or_script_links(
    hostile_file: Path,
) -> None:
    notebook = json.loads(write_export(hostile_file, "ipynb"))
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            _assert_inert(mistune.html(source))
        else:
            # Running the cell never runs anything: a comment line, then a JSON literal.
            first, rest = source.split("\n", 1)
            assert first.startswith("# tool call:")
            json.loads(rest)
            for output in cell["outputs"]:
                assert output["output_type"] == "stream"  # the forged image is not embedded


def _odd_file(tmp_path: Path) -> Path:
    # A label that is an object and content that is a number or an object used to crash.
    return _write(
        tmp_path / "odd.jsonl",
        {"id": "s-odd", "cwd": "/p"},
        [
            _message("a1", None, {"role": "user", "content": 5, "timestamp": 1}),
            {
                "type": "label",
                "id": "l1",
                "parentId": "a1",
                "timestamp": "2025-01-01T00:00:02.000Z",
                "targetId": "a1",
                "label": {"nested": ["x"]},
            },
            _message(
                "a2",
                "l1",
                {"role": "assistant", "content": {"text": "an object"}, "model": 7, "timestamp": 2},
            ),
            {
                "type": "compaction",
                "id": "c1",
                "parentId": "a2",
                "timestamp": 99e99,
                "summary": ["not", "text"],
                "firstKeptEntryId": "a2",
                "tokensBefore": {"n": 1},
            },
            {
                "type": "session_info",
                "id": "i1",
                "parentId": "c1",
                "timestamp": "2025-01-01T00:00:03.000Z",
                "name": 12,
            },
        ],
    )


@pytest.mark.parametrize("fmt", ["html", "md", "ipynb"])
def test_odd_field_types_export(tmp_path: Path, fmt: str) -> None:
    text = write_export(_odd_file(tmp_path), fmt, whole_tree=True)
    assert "s-odd" in text
    if fmt == "ipynb":
        json.loads(text)


@pytest.mark.parametrize("fmt", ["--html", "--md", "--ipynb"])
def test_cli_export_of_odd_files_prints_no_traceback(
    tmp_path: Path, hostile_file: Path, fmt: str
) -> None:
    for path in (hostile_file, _odd_file(tmp_path)):
        result = subprocess.run(
            [sys.executable, "-m", "pinb.cli", "export", str(path), fmt, "--tree"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,  # the export is written into exports/ here, named after the session
        )
        assert result.returncode == 0 and result.stderr == "", result.stderr
        assert (
            result.stdout.startswith("wrote ") and (tmp_path / result.stdout[6:].strip()).is_file()
        )


def _surrogate_session(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "s.jsonl",
        {"id": "s-sur", "cwd": "/p"},
        [_message("a1", None, {"role": "user", "content": "hi \ud83d there", "timestamp": 1})],
    )


def test_a_lone_surrogate_exports_as_a_replacement_character(tmp_path: Path) -> None:
    session = _surrogate_session(tmp_path)
    keep = tmp_path / "keep.html"
    keep.write_text("old export\n")
    result = subprocess.run(
        [sys.executable, "-m", "pinb.cli", "export", str(session), "--html", "-o", str(keep)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "hi \ufffd there" in keep.read_text(encoding="utf-8")
    for fmt in ("md", "ipynb"):
        assert "hi \ufffd there" in json.dumps(write_export(session, fmt), ensure_ascii=False)


def test_output_keeps_its_mode_and_its_symlink(tmp_path: Path) -> None:
    session = _surrogate_session(tmp_path)
    real = tmp_path / "exports" / "real.md"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o600)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    write_export(session, "md", link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "hi \ufffd there" in real.read_text(encoding="utf-8")
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert sorted(p.name for p in real.parent.iterdir()) == ["real.md"]  # no temp file left


def test_a_failed_write_leaves_the_old_output_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = _surrogate_session(tmp_path)
    keep = tmp_path / "keep.md"
    keep.write_text("old export\n")

    def disk_full(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pinb.core.file.atomic.os.replace", disk_full)
    with pytest.raises(OSError, match="No space"):
        write_export(session, "md", keep)
    assert keep.read_text() == "old export\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_exporting_over_the_session_itself_is_refused(tmp_path: Path) -> None:
    session = _surrogate_session(tmp_path)
    before = session.read_bytes()
    with pytest.raises(UsageError, match="is the session being exported"):
        write_export(session, "md", session)
    assert session.read_bytes() == before
