"""The ``find`` tool, and the tree walk it shares with ``grep``: globs, ``.gitignore``, skipped folders."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pathspec import GitIgnoreSpec

from ...core.file.special import read_regular
from ..tool import ToolContext, ToolResult
from .paths import (
    ToolInputError,
    expand_path,
    is_cancelled,
    optional_int,
    optional_str,
    required_str,
    tool_cwd,
)
from .truncate import DEFAULT_MAX_BYTES, UNLIMITED_LINES, format_size, truncate_head

#: A .gitignore larger than this is read only this far.
_GITIGNORE_LIMIT = 1024 * 1024

__all__ = [
    "SKIPPED_DIRECTORIES",
    "FindTool",
    "GitIgnore",
    "WalkAborted",
    "glob_matcher",
    "listing_result",
    "path_matches",
    "walk",
]

#: Folders never searched: version-control data, dependencies and virtual environments.
SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn", "node_modules", ".venv"})


class WalkAborted(Exception):
    """The run was cancelled while a tree was being walked."""


def _glob_to_regex(pattern: str) -> str:
    """Translate a glob (``*``, ``**``, ``?``, ``[...]``, ``{a,b}``) to a regex over ``/`` paths."""
    out: list[str] = []
    i, n = 0, len(pattern)
    depth = 0  # inside {...}
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == n:
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body[0] in "!^":
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif c == "{":
            depth += 1
            out.append("(?:")
            i += 1
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
            i += 1
        elif c == "," and depth:
            out.append("|")
            i += 1
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    out.extend(")" * depth)
    return "".join(out)


@lru_cache(maxsize=256)
def glob_matcher(pattern: str) -> re.Pattern[str]:
    """A compiled regex that fully matches the ``/``-separated paths ``pattern`` describes.

    >>> bool(glob_matcher("**/*.py").fullmatch("a.py")), bool(glob_matcher("src/*.{ts,js}").fullmatch("src/x.js"))
    (True, True)
    """
    return re.compile(_glob_to_regex(pattern), re.DOTALL)


def path_matches(pattern: str, rel: str) -> bool:
    """Whether the relative ``/`` path ``rel`` matches the glob ``pattern`` (see `FindTool`)."""
    # A pattern without "/" names files at any depth; with "/" it is a path from the root.
    pattern = pattern.removeprefix("./")
    if "/" in pattern.rstrip("/"):
        return glob_matcher(pattern.lstrip("/")).fullmatch(rel) is not None
    return glob_matcher(pattern).fullmatch(rel.rsplit("/", 1)[-1]) is not None


class GitIgnore:
    """The ``.gitignore`` rules in force in one folder (its own and its parents').

    Each file's patterns are read as git reads them, by ``pathspec``'s ``GitIgnoreSpec``
    (escapes, trailing spaces, ``**``, ``dir/`` and ``!`` re-includes, braces taken
    literally): within a file the last matching pattern wins, and a deeper file's match
    wins over its parents'. A file inside an ignored folder is never seen, since `walk`
    does not enter the folder, so a ``!`` cannot bring it back, as in git.
    """

    def __init__(self, layers: tuple[tuple[str, GitIgnoreSpec], ...] = ()) -> None:
        #: ``(folder with a trailing "/", its patterns)``, from the top folder down.
        self.layers = layers

    @classmethod
    def for_root(cls, root: Path) -> GitIgnore:
        """Rules for walking ``root``: the ``.gitignore`` files from the enclosing repository's top down."""
        chain: list[Path] = []
        folder = root
        while True:
            chain.append(folder)
            if (folder / ".git").exists() or folder.parent == folder:
                break
            folder = folder.parent
        if not (chain[-1] / ".git").exists():
            chain = [root]  # not in a repository: only the searched tree's own files count
        ignore = cls()
        for folder in reversed(chain):
            ignore = ignore.enter(folder)
        return ignore

    def enter(self, folder: Path) -> GitIgnore:
        """The rules for ``folder``: these plus the folder's own ``.gitignore``, if any."""
        try:
            data = read_regular(folder / ".gitignore", _GITIGNORE_LIMIT)  # never a FIFO's wait
        except OSError:
            return self
        spec = GitIgnoreSpec.from_lines(data.decode("utf-8", "replace").splitlines())
        if not any(pattern.include is not None for pattern in spec.patterns):
            return self  # only comments and blank lines
        base = str(folder).rstrip("/") + "/"
        return GitIgnore((*self.layers, (base, spec)))

    def ignores(self, path: str, is_dir: bool) -> bool:
        """Whether the absolute ``path`` is ignored."""
        for base, spec in reversed(self.layers):
            if not path.startswith(base):
                continue
            rel = path[len(base) :] + ("/" if is_dir else "")  # "dir/" patterns need the "/"
            verdict = spec.check_file(rel).include
            if verdict is not None:
                return verdict
        return False


def walk(root: Path, cancel: Any = None) -> Iterator[tuple[str, Path, bool]]:
    """Every file and folder under ``root`` that is not skipped or git-ignored.

    Yields ``(relative posix path, absolute path, is_dir)``. Hidden files are included;
    `SKIPPED_DIRECTORIES` are not; symlinked folders are listed but not entered.
    Raises `WalkAborted` when ``cancel`` is cancelled.
    """
    stack: list[tuple[Path, str, GitIgnore]] = [(root, "", GitIgnore.for_root(root))]
    while stack:
        if is_cancelled(cancel):
            raise WalkAborted
        folder, prefix, ignore = stack.pop()
        try:
            with os.scandir(folder) as entries:
                items = list(entries)
        except OSError:
            continue
        for entry in items:
            try:
                is_dir = entry.is_dir()
                real_dir = is_dir and not entry.is_symlink()
            except OSError:
                continue
            if is_dir and entry.name in SKIPPED_DIRECTORIES:
                continue
            if ignore.ignores(entry.path, is_dir):
                continue
            rel = prefix + entry.name
            yield rel, Path(entry.path), is_dir
            if real_dir:
                child = Path(entry.path)
                stack.append((child, rel + "/", ignore.enter(child)))


def listing_result(
    lines: list[str],
    *,
    empty: str,
    limit_hit: tuple[str, str, int] | None = None,
    extra: Sequence[tuple[str, str, Any]] = (),
) -> ToolResult:
    """The shared shape of ``find``/``ls``/``grep`` output, as Pi writes it.

    The lines are cut at 50 KiB (no line limit: the tools limit entries themselves), then
    ``[notice. notice]`` follows: ``limit_hit`` first, the size cut, then ``extra``. Each
    notice is ``(text, details key, details value)``; ``details`` is None when empty.
    """
    if not lines:
        return ToolResult.text(empty)
    truncation = truncate_head("\n".join(lines), max_lines=UNLIMITED_LINES)
    details: dict[str, Any] = {}
    notices: list[str] = []
    if limit_hit is not None:
        notices.append(limit_hit[0])
        details[limit_hit[1]] = limit_hit[2]
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.to_details()
    for notice, key, value in extra:
        notices.append(notice)
        details[key] = value
    text = truncation.content
    if notices:
        text += f"\n\n[{'. '.join(notices)}]"
    return ToolResult.text(text, details=details or None)


_DEFAULT_LIMIT = 1000
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "description": "Glob pattern to match, e.g. '*.py', '**/*.json' or 'src/**/test_*.py'",
        },
        "path": {
            "type": "string",
            "description": "Directory to search in (default: current directory)",
        },
        "limit": {
            "type": "number",
            "description": f"Maximum number of results (default: {_DEFAULT_LIMIT})",
        },
    },
    "required": ["pattern"],
}


class FindTool:
    """Find files and folders by glob, in pure Python (no ``fd`` needed).

    A pattern without ``/`` matches names at any depth (``*.py``); one with ``/`` matches
    paths from the searched folder (``src/**/*.py``). Results are relative to that
    folder, sorted, with ``/`` after folder names. ``.git``, ``node_modules`` and ``.venv``
    are skipped and ``.gitignore`` is honoured. Past ``limit`` (default 1000) results the
    output says so and ``details`` holds ``{"resultLimitReached": limit}``.

    Parameters
    ----------
    cwd:
        Pin the tool to this folder; by default it works in the run's ``context.cwd``.
    """

    name = "find"
    default_limit = _DEFAULT_LIMIT
    description = (
        "Search for files by glob pattern. Returns matching paths relative to the search "
        "directory, sorted; directories end with '/'. Respects .gitignore and skips .git, "
        f"node_modules and .venv. Output is limited to {default_limit} results or "
        f"{DEFAULT_MAX_BYTES // 1024}KB, whichever comes first."
    )

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.parameters: dict[str, Any] = copy.deepcopy(_PARAMETERS)
        self.cwd = Path(cwd) if cwd is not None else None

    def execute(self, arguments: dict[str, Any], context: ToolContext) -> ToolResult:
        """List the paths under ``arguments["path"]`` that match ``arguments["pattern"]``."""
        try:
            pattern = required_str(arguments, "pattern")
            where = optional_str(arguments, "path") or "."
            limit = optional_int(arguments, "limit", minimum=1) or self.default_limit
        except ToolInputError as exc:
            return ToolResult.error(str(exc))
        root = expand_path(where, tool_cwd(self.cwd, context.cwd))
        if not root.exists():
            return ToolResult.error(f"Path not found: {root}")
        if not root.is_dir():
            return ToolResult.error(f"Not a directory: {root}")
        try:
            found = sorted(
                rel + "/" if is_dir else rel
                for rel, _, is_dir in walk(root, context.cancel)
                if path_matches(pattern, rel)
            )
        except WalkAborted:
            return ToolResult.error("Operation aborted")
        notice = f"{limit} results limit reached. Use limit={limit * 2} for more, or refine pattern"
        return listing_result(
            found[:limit],
            empty="No files found matching pattern",
            limit_hit=(notice, "resultLimitReached", limit) if len(found) > limit else None,
        )
