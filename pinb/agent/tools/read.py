"""The ``read`` tool: a text file's lines (with offset/limit and truncation) or an image."""

from __future__ import annotations

import base64
import copy
import io
import os
from collections.abc import Iterator
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from ...core.file.special import SpecialFileError, open_regular
from ..tool import ToolContext, ToolResult
from .paths import (
    ToolInputError,
    is_cancelled,
    optional_int,
    required_str,
    resolve_read_path,
    tool_cwd,
)
from .truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    TruncationResult,
    format_size,
    truncate_head,
    utf8_len,
)

__all__ = [
    "COUNT_LIMIT",
    "IMAGE_MAX_BYTES",
    "IMAGE_MAX_SIDE",
    "IMAGE_MIME_TYPES",
    "IMAGE_READ_LIMIT",
    "WHOLE_READ_LIMIT",
    "ReadTool",
    "detect_image_mime",
    "fit_image",
]

#: Largest image side sent to the model, in pixels (Pi's default).
IMAGE_MAX_SIDE = 2000
#: Largest image sent to the model, in bytes: 4.5 MiB, below Anthropic's 5 MB limit.
IMAGE_MAX_BYTES = int(4.5 * 1024 * 1024)

#: Files up to this size are read whole (the exact Pi output); larger ones are streamed.
WHOLE_READ_LIMIT = 8 * 1024 * 1024
#: A streamed file's lines are counted for its notice up to this many bytes.
COUNT_LIMIT = 512 * 1024 * 1024
#: Largest image file read at all (it is shrunk to `IMAGE_MAX_BYTES` before sending).
IMAGE_READ_LIMIT = 64 * 1024 * 1024

#: Image types the read tool sends to the model as image blocks, by file extension.
IMAGE_MIME_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


def detect_image_mime(head: bytes, suffix: str = "") -> str | None:
    """The MIME type of a supported image (png, jpeg, gif, webp), or None.

    The magic bytes decide. The extension only counts for content that is not text, so a
    ``notes.png`` that holds text is read as text rather than sent as a broken image.

    Parameters
    ----------
    head:
        The first bytes of the file (16 are enough).
    suffix:
        The file's extension, such as ``".png"``.
    """
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    by_extension = IMAGE_MIME_TYPES.get(suffix.lower())
    if by_extension and head and not _looks_like_text(head):
        return by_extension
    return None


def _looks_like_text(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A character cut at the end of the sample is still text.
        return exc.start >= len(data) - 3 and exc.reason == "unexpected end of data"
    return True


_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Path of the file to read, relative to the working directory or absolute",
        },
        "offset": {
            "type": "number",
            "description": "First line to read, counting from 1 (default: 1)",
        },
        "limit": {
            "type": "number",
            "description": "Most lines to read (default: until the output limit)",
        },
    },
    "required": ["path"],
}


def fit_image(data: bytes, mime: str) -> tuple[bytes, str, str | None]:
    """Shrink an image to at most 2000x2000 pixels and 4.5 MiB, as Pi does before sending it.

    Needs Pillow (installed with the notebook extra); without it, or for an image Pillow
    cannot open, the data comes back unchanged. A resized image is PNG or JPEG, whichever
    is smaller, and the note tells the model how to map coordinates back.

    Returns
    -------
    tuple[bytes, str, str | None]
        The image data, its MIME type and the dimension note (None when not resized).
    """
    try:
        from PIL import Image
    except ImportError:
        return data, mime, None
    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if (
                width <= IMAGE_MAX_SIDE
                and height <= IMAGE_MAX_SIDE
                and len(data) <= IMAGE_MAX_BYTES
            ):
                return data, mime, None
            fit = min(1.0, IMAGE_MAX_SIDE / width, IMAGE_MAX_SIDE / height)
            has_alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
            pixels = image.convert("RGBA" if has_alpha else "RGB")
            best: tuple[bytes, str, int, int] | None = None
            for group in _shrunk(pixels, round(width * fit), round(height * fit)):
                smallest = min(group, key=lambda candidate: len(candidate[0]))
                if best is None or len(smallest[0]) < len(best[0]):
                    best = smallest
                if len(best[0]) <= IMAGE_MAX_BYTES:
                    break
    except (OSError, ValueError, Image.DecompressionBombError):
        return data, mime, None
    assert best is not None
    blob, kind, new_width, new_height = best
    factor = Decimal(width / new_width).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    note = (
        f"[Image: original {width}x{height}, displayed at {new_width}x{new_height}. "
        f"Multiply coordinates by {factor} to map to original image.]"
    )
    return blob, kind, note


def _shrunk(pixels: Any, width: int, height: int) -> Iterator[list[tuple[bytes, str, int, int]]]:
    """Encodings to choose from, ever smaller: each scale as PNG and JPEG, then lower qualities."""
    from PIL import Image

    for step in (1.0, 0.75, 0.5, 0.35, 0.25):
        size = (max(1, round(width * step)), max(1, round(height * step)))
        if step < 1.0 and min(size) < 100:
            return
        resized = pixels.resize(size, Image.Resampling.LANCZOS)
        rgb = resized.convert("RGB")
        yield [
            (_encode(resized, "PNG"), "image/png", *size),
            (_encode(rgb, "JPEG", quality=80), "image/jpeg", *size),
        ]
        for quality in (55, 40):
            yield [(_encode(rgb, "JPEG", quality=quality), "image/jpeg", *size)]


def _encode(image: Any, image_format: str, **options: Any) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=image_format, **options)
    return buffer.getvalue()


class ReadTool:
    """Read a file for the model: numbered ranges of text, or an image attachment.

    Text is cut to the first 2000 lines or 50 KiB from ``offset`` (whichever comes first)
    and a notice tells the model which ``offset`` continues; ``details`` then holds
    ``{"truncation": ...}``. Images become a ``Read image file [<mime>]`` text block and an
    image block, as Pi writes them; with Pillow installed, images over 2000x2000 pixels or
    4.5 MiB are shrunk first (`fit_image`), and one too big to send is an error result.

    Parameters
    ----------
    cwd:
        Pin the tool to this folder; by default it works in the run's ``context.cwd``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "a.txt").write_text("one\\ntwo\\nthree\\n")
    >>> result = ReadTool().execute({"path": "a.txt", "offset": 2, "limit": 1}, ToolContext(folder))
    >>> print(result.content[0]["text"])
    two
    <BLANKLINE>
    [2 more lines in file. Use offset=3 to continue.]
    """

    name = "read"
    description = (
        "Read a file. Text files come back as their lines; images (png, jpg, gif, webp) come "
        f"back as image attachments. Text output stops after {DEFAULT_MAX_LINES} lines or "
        f"{DEFAULT_MAX_BYTES // 1024}KB, whichever comes first; the end of the output then says "
        "which offset to use next. Use offset and limit to read a part of a large file, and keep "
        "reading with the suggested offset when you need all of it."
    )

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.parameters: dict[str, Any] = copy.deepcopy(_PARAMETERS)
        self.cwd = Path(cwd) if cwd is not None else None

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """Read the file named by ``arguments["path"]``; see the class docstring."""
        try:
            path = required_str(arguments, "path")
            offset = optional_int(arguments, "offset")
            limit = optional_int(arguments, "limit", minimum=0)
        except ToolInputError as exc:
            return ToolResult.error(str(exc))
        target = resolve_read_path(path, tool_cwd(self.cwd, context.cwd))
        if not target.exists():
            return ToolResult.error(f"File not found: {target}")
        if target.is_dir():
            return ToolResult.error(
                f"{target} is a directory, not a file. Use ls to list its contents."
            )
        try:
            with open_regular(target) as handle:
                size = os.fstat(handle.fileno()).st_size
                head = handle.read(16) or b""
                mime = detect_image_mime(head, target.suffix)
                if mime is not None:
                    if size > IMAGE_READ_LIMIT:
                        return ToolResult.error(
                            f"Image {target} is {format_size(size)}, too large to read "
                            f"(limit {format_size(IMAGE_READ_LIMIT)}). Make a smaller copy with "
                            "bash and read that."
                        )
                    return _read_image(head + _read_rest(handle), mime, target)
                if 0 < size <= WHOLE_READ_LIMIT:
                    text = (head + _read_rest(handle)).decode("utf-8", "replace")
                    return _read_text(text, path, offset, limit)
                # A large file, or a kernel file of size 0 (/proc): read it as a stream.
                return _read_stream(handle, head, path, offset, limit, context.cancel)
        except SpecialFileError as exc:
            return ToolResult.error(str(exc))
        except PermissionError:
            return ToolResult.error(f"Permission denied: {target}")
        except BlockingIOError:
            return ToolResult.error(f"{target} has nothing to read now (it would wait); not read")


def _read_rest(handle: Any) -> bytes:
    return handle.read() or b""  # None: a non-blocking kernel file with nothing to say yet


def _read_stream(
    handle: Any, head: bytes, path: str, offset: int | None, limit: int | None, cancel: Any
) -> ToolResult:
    """Lines ``offset``.. of a file too large to hold, and its line count, in bounded memory.

    Only the lines the answer can show are kept (Pi's 2000 lines / 50 KiB, each line cut
    past 50 KiB); the rest is counted, up to `COUNT_LIMIT` bytes, so the notice can say
    how many lines there are ("more than N" past that).
    """
    start = max(0, offset - 1) if offset else 0
    stop = None if limit is None else start + limit  # first line index not wanted
    keep_lines = DEFAULT_MAX_LINES + 1
    keep_bytes = DEFAULT_MAX_BYTES + 1
    kept: list[bytearray] = []
    kept_bytes = 0
    first_size = 0  # the full size of line `start`
    line = 0  # index of the line being read
    scanned = 0
    complete = True
    chunk = head
    while True:
        if not chunk:
            chunk = handle.read(1 << 20) or b""
            if not chunk:
                break
        scanned += len(chunk)
        position = 0
        while True:
            collecting = (
                (stop is None or line < stop)
                and len(kept) <= keep_lines
                and kept_bytes <= keep_bytes
            )
            if not collecting and line > start:  # only counting from here on
                line += chunk.count(b"\n", position)
                break
            newline = chunk.find(b"\n", position)
            piece_end = len(chunk) if newline < 0 else newline
            if line >= start:
                size = piece_end - position
                if line == start:
                    first_size += size
                if collecting:
                    if len(kept) == line - start:
                        kept.append(bytearray())
                    room = keep_bytes - len(kept[-1])
                    if room > 0:
                        kept[-1] += chunk[position : position + min(size, room)]
                        kept_bytes += min(size, room)
            if newline < 0:
                break
            line += 1
            position = newline + 1
        chunk = b""
        if is_cancelled(cancel):
            return ToolResult.error("Operation aborted")
        if scanned >= COUNT_LIMIT:
            complete = False
            break
    total = line + 1
    if start >= total:
        if not complete:
            return ToolResult.error(
                f"Offset {offset} is beyond the first {format_size(COUNT_LIMIT)} of the file "
                f"({total} lines); read it with bash (sed -n '{offset},+100p' {path})"
            )
        return ToolResult.error(f"Offset {offset} is beyond end of file ({total} lines total)")
    end = total if stop is None else min(stop, total)
    text = "\n".join(bytes(b).decode("utf-8", "replace") for b in kept)
    first = start + 1
    truncation = truncate_head(text)
    shown_total = f"{total}" if complete else f"more than {total}"
    if truncation.first_line_exceeds_limit or first_size > DEFAULT_MAX_BYTES:
        at_least = "more than " if not complete and line == start else ""
        return _line_too_long(truncation, first, f"{at_least}{format_size(first_size)}", path)
    if truncation.truncated:
        return _showing(truncation, first, shown_total)
    if end < total or not complete:
        more = (
            f"{total - end} more lines in file"
            if complete
            else f"More lines in file (only its first {format_size(COUNT_LIMIT)} were counted)"
        )
        output = f"{truncation.content}\n\n[{more}. Use offset={end + 1} to continue.]"
        return ToolResult.text(output)
    return ToolResult.text(truncation.content)


def _line_too_long(truncation: TruncationResult, first: int, size: str, path: str) -> ToolResult:
    """Pi's notice for a first line longer than the byte limit (whole or streamed read)."""
    output = (
        f"[Line {first} is {size}, exceeds {format_size(DEFAULT_MAX_BYTES)} limit. "
        f"Use bash: sed -n '{first}p' {path} | head -c {DEFAULT_MAX_BYTES}]"
    )
    return ToolResult.text(output, details={"truncation": truncation.to_details()})


def _showing(truncation: TruncationResult, first: int, total: str) -> ToolResult:
    """Pi's notice for a read cut by the line or byte limit (whole or streamed read)."""
    last = first + truncation.output_lines - 1
    why = "" if truncation.truncated_by == "lines" else f" ({format_size(DEFAULT_MAX_BYTES)} limit)"
    output = (
        f"{truncation.content}\n\n[Showing lines {first}-{last} of {total}{why}. "
        f"Use offset={last + 1} to continue.]"
    )
    return ToolResult.text(output, details={"truncation": truncation.to_details()})


def _read_image(data: bytes, mime: str, target: Path) -> ToolResult:
    data, mime, note = fit_image(data, mime)
    if len(data) > IMAGE_MAX_BYTES:
        # Sent as is, it would make every later request of the conversation fail.
        return ToolResult.error(
            f"Image {target} is {format_size(len(data))}, more than the {format_size(IMAGE_MAX_BYTES)} "
            "a model accepts, and it could not be shrunk here. Make a smaller copy with bash "
            "(for example ImageMagick: convert IN -resize 2000x2000 OUT.jpg) and read that."
        )
    text = f"Read image file [{mime}]" + (f"\n{note}" if note else "")
    encoded = base64.b64encode(data).decode("ascii")
    return ToolResult(
        [{"type": "text", "text": text}, {"type": "image", "data": encoded, "mimeType": mime}]
    )


def _read_text(text: str, path: str, offset: int | None, limit: int | None) -> ToolResult:
    all_lines = text.split("\n")
    total = len(all_lines)
    start = max(0, offset - 1) if offset else 0
    if start >= total:
        return ToolResult.error(f"Offset {offset} is beyond end of file ({total} lines total)")
    end = total if limit is None else min(start + limit, total)
    truncation = truncate_head("\n".join(all_lines[start:end]))
    first = start + 1

    if truncation.first_line_exceeds_limit:
        return _line_too_long(truncation, first, format_size(utf8_len(all_lines[start])), path)
    if truncation.truncated:
        return _showing(truncation, first, str(total))
    if limit is not None and end < total:
        output = f"{truncation.content}\n\n[{total - end} more lines in file. Use offset={end + 1} to continue.]"
        return ToolResult.text(output)
    return ToolResult.text(truncation.content)
