"""The write and edit tools: Pi's result texts, diffs, line endings and every error path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pinb.agent.tool import ToolContext, ToolResult
from pinb.agent.tools import EditTool, WriteTool
from pinb.agent.tools.edit import diff_text

NOT_FOUND = (
    "Could not find the exact text in {path}. The old text must match exactly including all "
    "whitespace and newlines."
)


def text(result: ToolResult) -> str:
    return str(result.content[0]["text"])


def write(context: ToolContext, **arguments: object) -> ToolResult:
    return WriteTool().execute(dict(arguments), context)


def edit(context: ToolContext, path: str, old: str, new: str) -> ToolResult:
    return EditTool().execute({"path": path, "oldText": old, "newText": new}, context)


# --- write ---------------------------------------------------------------------------


def test_write_creates_parents_and_reports_pis_text(workdir: Path, context: ToolContext) -> None:
    result = write(context, path="deep/er/a.txt", content="hello\n")
    assert result.content == [
        {"type": "text", "text": "Successfully wrote 6 bytes to deep/er/a.txt"}
    ]
    assert result.details is None and not result.is_error
    assert (workdir / "deep/er/a.txt").read_text() == "hello\n"


def test_write_counts_javascript_string_length(workdir: Path, context: ToolContext) -> None:
    # "é" is one UTF-16 unit (two UTF-8 bytes); "😀" is two units (four bytes).
    assert (
        text(write(context, path="u.txt", content="é😀")) == "Successfully wrote 3 bytes to u.txt"
    )
    assert (workdir / "u.txt").read_bytes() == "é😀".encode()


def test_write_keeps_content_byte_exact_and_overwrites(workdir: Path, context: ToolContext) -> None:
    write(context, path="f.txt", content="old content that is long")
    write(context, path="f.txt", content="a\r\nb\n")
    assert (workdir / "f.txt").read_bytes() == b"a\r\nb\n"


def test_write_turns_lone_surrogates_into_replacement_characters(
    workdir: Path, context: ToolContext
) -> None:
    assert not write(context, path="s.txt", content="x\ud800y").is_error
    assert (workdir / "s.txt").read_text(encoding="utf-8") == "x\ufffdy"


def test_write_to_an_absolute_path(tmp_path: Path, context: ToolContext) -> None:
    target = tmp_path / "elsewhere" / "b.txt"
    assert (
        text(write(context, path=str(target), content=""))
        == f"Successfully wrote 0 bytes to {target}"
    )
    assert target.read_text() == ""


def test_write_errors(workdir: Path, context: ToolContext) -> None:
    (workdir / "folder").mkdir()
    result = write(context, path="folder", content="x")
    assert result.is_error and result.details == {} and "is a directory" in text(result)
    (workdir / "file").write_text("x")
    result = write(context, path="file/child.txt", content="x")
    assert result.is_error and "parent of it is a file" in text(result)
    assert text(write(context, path="a.txt")) == "Missing required argument 'content'."
    assert text(write(context, content="x")) == "Missing required argument 'path'."


# --- edit ----------------------------------------------------------------------------


def test_edit_replaces_and_reports_a_diff(workdir: Path, context: ToolContext) -> None:
    (workdir / "m.py").write_text("def f():\n    return 1\n\nprint(f())\n")
    result = edit(context, "m.py", "    return 1\n", "    value = 2\n    return value\n")
    assert result.content == [{"type": "text", "text": "Successfully replaced text in m.py."}]
    assert (
        workdir / "m.py"
    ).read_text() == "def f():\n    value = 2\n    return value\n\nprint(f())\n"
    assert (
        result.details
        == {
            "diff": " 1 def f():\n-2     return 1\n+2     value = 2\n+3     return value\n 3 \n 4 print(f())",  # context: old numbers
            "firstChangedLine": 2,
        }
    )
    json.dumps(result.details)


def test_edit_takes_replacement_text_literally(workdir: Path, context: ToolContext) -> None:
    (workdir / "r.txt").write_text("price: X\n")
    edit(context, "r.txt", "X", r"$1 \1 \g<0>")
    assert (workdir / "r.txt").read_text() == "price: $1 \\1 \\g<0>\n"


def test_edit_not_found_names_the_path_and_what_to_do(workdir: Path, context: ToolContext) -> None:
    (workdir / "a.txt").write_text("alpha\nbeta\n")
    result = edit(context, "a.txt", "alpha  beta", "x")
    assert result.is_error and result.details == {}
    assert text(result) == NOT_FOUND.format(path="a.txt")
    assert (workdir / "a.txt").read_text() == "alpha\nbeta\n"


def test_edit_refuses_ambiguous_text_and_counts_it(workdir: Path, context: ToolContext) -> None:
    (workdir / "a.txt").write_text("x = 1\ny = 1\nz = 1\n")
    result = edit(context, "a.txt", "= 1", "= 2")
    assert result.is_error
    assert text(result) == (
        "Found 3 occurrences of the text in a.txt. The text must be unique. "
        "Please provide more context to make it unique."
    )
    assert not edit(context, "a.txt", "y = 1", "y = 2").is_error
    assert (workdir / "a.txt").read_text() == "x = 1\ny = 2\nz = 1\n"


def test_edit_refuses_a_change_that_changes_nothing(workdir: Path, context: ToolContext) -> None:
    (workdir / "a.txt").write_text("same\n")
    result = edit(context, "a.txt", "same", "same")
    assert result.is_error and text(result).startswith("No changes made to a.txt.")


def test_edit_keeps_crlf_and_bom(workdir: Path, context: ToolContext) -> None:
    target = workdir / "win.txt"
    target.write_bytes("\ufeffone\r\ntwo\r\nthree\r\n".encode())
    result = edit(context, "win.txt", "two\nthree", "2\n3")  # the model writes "\n"
    assert not result.is_error
    assert target.read_bytes() == "\ufeffone\r\n2\r\n3\r\n".encode()
    assert result.details["firstChangedLine"] == 2
    assert "\r" not in result.details["diff"]


def test_edit_error_paths(workdir: Path, context: ToolContext) -> None:
    result = edit(context, "missing.txt", "a", "b")
    assert result.is_error and text(result) == "File not found: missing.txt"
    (workdir / "dir").mkdir()
    assert "is a directory" in text(edit(context, "dir", "a", "b"))
    (workdir / "blob.bin").write_bytes(b"\xff\xfe\x00binary")
    assert "not UTF-8 text" in text(edit(context, "blob.bin", "a", "b"))
    (workdir / "a.txt").write_text("abc")
    assert "oldText is empty" in text(edit(context, "a.txt", "", "x"))
    result = EditTool().execute({"path": "a.txt", "oldText": "abc"}, context)
    assert result.is_error and text(result) == "Missing required argument 'newText'."


def test_edit_unicode_text(workdir: Path, context: ToolContext) -> None:
    (workdir / "u.md").write_text("# Café 😀\nfin\n", encoding="utf-8")
    assert not edit(context, "u.md", "Café 😀", "Crème brûlée").is_error
    assert (workdir / "u.md").read_text(encoding="utf-8") == "# Crème brûlée\nfin\n"


# --- diff ----------------------------------------------------------------------------


def test_diff_shows_four_context_lines_and_elides_the_rest() -> None:
    old = "".join(f"line {n}\n" for n in range(1, 21))
    new = old.replace("line 10\n", "LINE TEN\n")
    diff, first = diff_text(old, new)
    assert first == 10
    assert diff.splitlines() == [
        "    ...",
        "  6 line 6",
        "  7 line 7",
        "  8 line 8",
        "  9 line 9",
        "-10 line 10",
        "+10 LINE TEN",
        " 11 line 11",
        " 12 line 12",
        " 13 line 13",
        " 14 line 14",
        "    ...",
    ]


def test_diff_of_pure_insertions_and_deletions() -> None:
    diff, first = diff_text("a\nb\n", "a\nx\nb\n")
    assert (diff, first) == (" 1 a\n+2 x\n 2 b", 2)
    diff, first = diff_text("a\nb\nc", "a\nc")
    assert (diff, first) == (" 1 a\n-2 b\n 3 c", 2)
    assert diff_text("same\n", "same\n") == ("", None)


def test_diff_does_not_split_on_unicode_line_separators() -> None:
    diff, first = diff_text("a\u2028b\nc\n", "a\u2028b\nC\n")
    assert (diff, first) == (" 1 a\u2028b\n-2 c\n+2 C", 2)


@pytest.mark.parametrize("newline_at_end", [True, False])
def test_diff_first_changed_line_at_the_end(newline_at_end: bool) -> None:
    end = "\n" if newline_at_end else ""
    _, first = diff_text(f"a\nb{end}", f"a\nB{end}")
    assert first == 2
