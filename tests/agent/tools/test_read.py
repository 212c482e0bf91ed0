"""The read tool: text ranges, continuation notices, truncation, images and errors."""

from __future__ import annotations

import base64
import io
import json
import struct
import sys
import zlib
from pathlib import Path

import pytest

from pinb.agent.tool import ToolContext, ToolResult
from pinb.agent.tools import ReadTool
from pinb.agent.tools.read import detect_image_mime


def read(context: ToolContext, **arguments: object) -> ToolResult:
    return ReadTool().execute(dict(arguments), context)


def text(result: ToolResult) -> str:
    assert result.content[0]["type"] == "text"
    return str(result.content[0]["text"])


def tiny_png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def test_reads_a_small_file_whole_without_details(workdir: Path, context: ToolContext) -> None:
    (workdir / "a.txt").write_text("héllo 😀\nsecond\n", encoding="utf-8")
    result = read(context, path="a.txt")
    assert not result.is_error and result.details is None
    assert result.content == [{"type": "text", "text": "héllo 😀\nsecond\n"}]


def test_offset_and_limit_select_lines_and_say_where_to_continue(
    workdir: Path, context: ToolContext
) -> None:
    (workdir / "a.txt").write_text("\n".join(f"l{n}" for n in range(1, 11)))
    result = read(context, path="a.txt", offset=3, limit=2)
    assert text(result) == "l3\nl4\n\n[6 more lines in file. Use offset=5 to continue.]"
    assert result.details is None
    assert text(read(context, path="a.txt", offset=9)) == "l9\nl10"
    assert (
        text(read(context, path="a.txt", offset="9", limit="1.0"))
        == "l9\n\n[1 more lines in file. Use offset=10 to continue.]"
    )


def test_offset_past_the_end_is_an_error(workdir: Path, context: ToolContext) -> None:
    (workdir / "a.txt").write_text("one\ntwo")
    result = read(context, path="a.txt", offset=5)
    assert result.is_error and text(result) == "Offset 5 is beyond end of file (2 lines total)"


def test_long_files_stop_at_2000_lines_with_the_next_offset(
    workdir: Path, context: ToolContext
) -> None:
    (workdir / "long.txt").write_text("\n".join(f"row {n}" for n in range(1, 2501)))
    result = read(context, path="long.txt")
    body, notice = text(result).rsplit("\n\n", 1)
    assert body.splitlines()[-1] == "row 2000"
    assert notice == "[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]"
    truncation = result.details["truncation"]
    assert truncation["truncatedBy"] == "lines" and truncation["outputLines"] == 2000
    follow = read(context, path="long.txt", offset=2001)
    assert follow.details is None and text(follow).splitlines()[-1] == "row 2500"


def test_wide_files_stop_at_50_kib_and_say_so(workdir: Path, context: ToolContext) -> None:
    (workdir / "wide.txt").write_text("\n".join("x" * 100 for _ in range(1000)))
    result = read(context, path="wide.txt", offset=11)
    assert text(result).endswith(
        "\n\n[Showing lines 11-516 of 1000 (50.0KB limit). Use offset=517 to continue.]"
    )
    assert result.details["truncation"]["truncatedBy"] == "bytes"
    json.dumps(result.details)  # details go into the session file as they are


def test_a_first_line_over_the_limit_points_to_bash(workdir: Path, context: ToolContext) -> None:
    (workdir / "min.js").write_text("a" * 60000 + "\nnext\n")
    result = read(context, path="min.js")
    assert not result.is_error
    assert (
        text(result)
        == "[Line 1 is 58.6KB, exceeds 50.0KB limit. Use bash: sed -n '1p' min.js | head -c 51200]"
    )
    assert result.details["truncation"]["firstLineExceedsLimit"] is True


def test_invalid_utf8_is_replaced_not_fatal(workdir: Path, context: ToolContext) -> None:
    (workdir / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    assert text(read(context, path="latin1.txt")) == "caf\ufffd\n"


def test_images_become_a_note_and_an_image_block(workdir: Path, context: ToolContext) -> None:
    png = tiny_png()
    (workdir / "dot.png").write_bytes(png)
    result = read(context, path="dot.png")
    assert result.content == [
        {"type": "text", "text": "Read image file [image/png]"},
        {"type": "image", "data": base64.b64encode(png).decode(), "mimeType": "image/png"},
    ]
    assert result.details is None and not result.is_error


def test_image_type_comes_from_magic_bytes_before_the_extension(
    workdir: Path, context: ToolContext
) -> None:
    (workdir / "snapshot.bin").write_bytes(tiny_png())
    assert read(context, path="snapshot.bin").content[1]["mimeType"] == "image/png"
    (workdir / "notes.png").write_text("not an image at all\n")
    assert read(context, path="notes.png").content == [
        {"type": "text", "text": "not an image at all\n"}
    ]


@pytest.mark.parametrize(
    ("head", "suffix", "mime"),
    [
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "", "image/jpeg"),
        (b"GIF89a\x01\x00", ".txt", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "", "image/webp"),
        (b"\x00\x01\x02binary", ".jpg", "image/jpeg"),
        (b"\x00\x01\x02binary", ".dat", None),
        (b"plain text", ".webp", None),
        (b"caf\xc3", ".gif", None),  # text cut inside a character is still text
    ],
)
def test_detect_image_mime(head: bytes, suffix: str, mime: str | None) -> None:
    assert detect_image_mime(head, suffix) == mime


def test_missing_files_and_directories_are_errors(workdir: Path, context: ToolContext) -> None:
    missing = read(context, path="nope.txt")
    assert missing.is_error and missing.details == {}
    assert text(missing) == f"File not found: {workdir / 'nope.txt'}"
    (workdir / "sub").mkdir()
    folder = read(context, path="sub")
    assert folder.is_error and "is a directory" in text(folder) and "ls" in text(folder)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "Missing required argument 'path'."),
        ({"path": 3}, "Argument 'path' must be a string, got a number."),
        ({"path": "a.txt", "offset": "abc"}, "Argument 'offset' must be a number, got 'abc'."),
        ({"path": "a.txt", "limit": -1}, "Argument 'limit' must be at least 0, got -1."),
    ],
)
def test_bad_arguments_are_clear_errors(
    context: ToolContext, arguments: dict[str, object], message: str
) -> None:
    result = ReadTool().execute(arguments, context)
    assert result.is_error and text(result) == message


def test_absolute_home_and_at_prefixed_paths(
    workdir: Path, tmp_path: Path, context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside")
    assert text(read(context, path=str(outside))) == "outside"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert text(read(context, path="~/outside.txt")) == "outside"
    (workdir / "a.txt").write_text("mentioned")
    assert text(read(context, path="@a.txt")) == "mentioned"


def test_a_pinned_cwd_wins_over_the_context(tmp_path: Path, context: ToolContext) -> None:
    (tmp_path / "pinned.txt").write_text("pinned")
    assert text(ReadTool(cwd=tmp_path).execute({"path": "pinned.txt"}, context)) == "pinned"


def test_big_images_are_shrunk_with_a_coordinate_note(workdir: Path, context: ToolContext) -> None:
    import PIL.Image as image_module

    image_module.new("RGB", (2500, 100), (200, 30, 30)).save(workdir / "wide.png")
    result = read(context, path="wide.png")
    note = text(result)
    mime = result.content[1]["mimeType"]
    assert note == (
        f"Read image file [{mime}]\n[Image: original 2500x100, displayed at 2000x80. "
        "Multiply coordinates by 1.25 to map to original image.]"
    )
    with image_module.open(io.BytesIO(base64.b64decode(result.content[1]["data"]))) as shrunk:
        assert shrunk.size == (2000, 80)


def test_small_images_pass_through_without_pillow(
    workdir: Path, context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)  # as if Pillow were not installed
    (workdir / "dot.png").write_bytes(tiny_png())
    assert read(context, path="dot.png").content[1]["data"] == base64.b64encode(tiny_png()).decode()


def test_an_image_too_big_to_send_is_refused(workdir: Path, context: ToolContext) -> None:
    # PNG magic, then 5 MB that no image library can decode, so it cannot be shrunk.
    (workdir / "huge.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(5 * 1024 * 1024))
    result = read(context, path="huge.png")
    assert result.is_error and len(result.content) == 1
    assert text(result).startswith(f"Image {workdir / 'huge.png'} is 5.0MB, more than the 4.5MB")
