"""The ls, find and grep tools: sorting, skipped folders, .gitignore, limits and errors."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pinb.agent.tool import ToolContext, ToolResult
from pinb.agent.tools import FindTool, GrepTool, LsTool
from pinb.agent.tools.find import GitIgnore, glob_matcher, path_matches, walk
from pinb.llm import CancelToken


def text(result: ToolResult) -> str:
    assert len(result.content) == 1 and result.content[0]["type"] == "text"
    return str(result.content[0]["text"])


def make(root: Path, files: dict[str, str | bytes]) -> None:
    for name, body in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            target.write_bytes(body)
        else:
            target.write_text(body, encoding="utf-8")


@pytest.fixture
def project(workdir: Path) -> Path:
    make(
        workdir,
        {
            "README.md": "# Demo\nTODO: write docs\n",
            "src/app.py": "import os\n\ndef main():\n    # TODO: implement\n    return os.getcwd()\n",
            "src/util.py": "def helper():\n    return 42\n",
            "src/nested/deep.py": "VALUE = 'todo lower case'\n",
            "tests/test_app.py": "def test_main():\n    assert True\n",
            ".hidden.cfg": "TODO = hidden but searched\n",
            ".git/config": "TODO in git data\n",
            "node_modules/pkg/index.js": "// TODO in a dependency\n",
            ".venv/lib/site.py": "# TODO in the venv\n",
            "build/out.py": "# TODO in build output\n",
            "debug.log": "TODO in a log\n",
            ".gitignore": "build/\n*.log\n",
            "logo.bin": b"\x89PNG\x00\x00TODO binary",
        },
    )
    return workdir


# --- ls ------------------------------------------------------------------------------


def test_ls_lists_everything_sorted_with_folder_slashes(
    project: Path, context: ToolContext
) -> None:
    result = LsTool().execute({}, context)
    assert result.details is None
    assert text(result).splitlines() == [
        ".git/",
        ".gitignore",
        ".hidden.cfg",
        ".venv/",
        "build/",
        "debug.log",
        "logo.bin",
        "node_modules/",
        "README.md",
        "src/",
        "tests/",
    ]
    assert text(LsTool().execute({"path": "src"}, context)) == "app.py\nnested/\nutil.py"


def test_ls_limit_and_notice(project: Path, context: ToolContext) -> None:
    result = LsTool().execute({"path": ".", "limit": 3}, context)
    assert (
        text(result)
        == ".git/\n.gitignore\n.hidden.cfg\n\n[3 entries limit reached. Use limit=6 for more]"
    )
    assert result.details == {"entryLimitReached": 3}


def test_ls_empty_missing_and_file(workdir: Path, context: ToolContext) -> None:
    (workdir / "empty").mkdir()
    (workdir / "file.txt").write_text("x")
    assert text(LsTool().execute({"path": "empty"}, context)) == "(empty directory)"
    missing = LsTool().execute({"path": "nope"}, context)
    assert missing.is_error and text(missing) == f"Path not found: {workdir / 'nope'}"
    not_dir = LsTool().execute({"path": "file.txt"}, context)
    assert not_dir.is_error and text(not_dir) == f"Not a directory: {workdir / 'file.txt'}"
    assert (
        text(LsTool().execute({"limit": "many"}, context))
        == "Argument 'limit' must be a number, got 'many'."
    )


def test_ls_cuts_at_50_kib(workdir: Path, context: ToolContext) -> None:
    for n in range(400):
        (workdir / f"{n:03d}-{'n' * 200}").touch()
    result = LsTool().execute({}, context)
    assert text(result).endswith("\n\n[50.0KB limit reached]")
    assert result.details["truncation"]["truncatedBy"] == "bytes"
    assert result.details["truncation"]["maxLines"] == 2**53 - 1


# --- find ----------------------------------------------------------------------------


def test_find_matches_names_at_any_depth_relative_and_sorted(
    project: Path, context: ToolContext
) -> None:
    result = FindTool().execute({"pattern": "*.py"}, context)
    assert result.details is None
    assert text(result) == "src/app.py\nsrc/nested/deep.py\nsrc/util.py\ntests/test_app.py"


def test_find_path_patterns_and_search_folder(project: Path, context: ToolContext) -> None:
    assert text(FindTool().execute({"pattern": "src/**/*.py"}, context)) == (
        "src/app.py\nsrc/nested/deep.py\nsrc/util.py"
    )
    assert (
        text(FindTool().execute({"pattern": "**/deep.py", "path": "src"}, context))
        == "nested/deep.py"
    )
    assert text(FindTool().execute({"pattern": "*.{md,cfg}"}, context)) == ".hidden.cfg\nREADME.md"
    assert text(FindTool().execute({"pattern": "nest*"}, context)) == "src/nested/"


def test_find_skips_vcs_dependencies_venvs_and_gitignored(
    project: Path, context: ToolContext
) -> None:
    everything = text(FindTool().execute({"pattern": "**"}, context)).splitlines()
    for hidden in (".git", "node_modules", ".venv", "build", "debug.log"):
        assert not any(line.split("/")[0] == hidden or line == hidden for line in everything), (
            hidden
        )
    assert ".hidden.cfg" in everything and ".gitignore" in everything


def test_find_limit_notice_and_empty_result(project: Path, context: ToolContext) -> None:
    result = FindTool().execute({"pattern": "*.py", "limit": 2}, context)
    assert text(result) == (
        "src/app.py\nsrc/nested/deep.py\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    )
    assert result.details == {"resultLimitReached": 2}
    exact = FindTool().execute({"pattern": "*.py", "limit": 4}, context)
    assert exact.details is None and "limit reached" not in text(exact)
    assert (
        text(FindTool().execute({"pattern": "*.rs"}, context)) == "No files found matching pattern"
    )


def test_find_errors(workdir: Path, context: ToolContext) -> None:
    (workdir / "f.txt").write_text("x")
    assert (
        text(FindTool().execute({"pattern": "*", "path": "nope"}, context))
        == f"Path not found: {workdir / 'nope'}"
    )
    assert (
        text(FindTool().execute({"pattern": "*", "path": "f.txt"}, context))
        == f"Not a directory: {workdir / 'f.txt'}"
    )
    assert text(FindTool().execute({}, context)) == "Missing required argument 'pattern'."


def test_gitignore_rules(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            ".gitignore": "# comment\n\n*.tmp\n!keep.tmp\n/top-only\ndocs/*.html\n**/cache\ndist/\n",
            "a.tmp": "",
            "keep.tmp": "",
            "top-only": "",
            "sub/top-only": "",
            "docs/a.html": "",
            "docs/deeper/b.html": "",
            "x/y/cache/z": "",
            "dist/bundle.js": "",
        },
    )
    ignore = GitIgnore.for_root(tmp_path)
    base = str(tmp_path)

    def ignored(rel: str, is_dir: bool = False) -> bool:
        return ignore.ignores(f"{base}/{rel}", is_dir)

    assert ignored("a.tmp") and ignored("sub/b.tmp") and not ignored("keep.tmp")
    assert ignored("top-only") and not ignored("sub/top-only")
    assert ignored("docs/a.html") and not ignored("docs/deeper/b.html")
    assert ignored("x/y/cache", is_dir=True)
    assert ignored("dist", is_dir=True) and not ignored("dist")  # "dist/" names folders only


#: A .gitignore in the forms git documents, the tricky ones included: escapes, trailing
#: spaces (escaped and not), braces (literal in git), character classes, "**" at the start,
#: the middle and the end, anchored and folder-only patterns, and re-includes.
_GIT_PATTERNS = (
    "# comment\n\n*.tmp\n!keep.tmp\n/top-only\ndocs/*.html\n**/cache\ndist/\n{a,b}.txt\n"
    "\\#hash.txt\n\\!bang.txt\ntrailing.txt\\ \nspaced.txt   \nlogs/**\n!logs/keep/\n"
    "a/**/z.txt\n*.o\n!important.o\nbuild\nout/*\n!out/kept\n[0-9].num\nq?.txt\n"
    "**/deep/**/x.md\n\\*star.txt\n x.txt\n**/foo2/bar\n*/only-dirs/\n[!a]z.txt\n/infra/helm/*\n"
)
_GIT_FILES = (
    "a.tmp",
    "keep.tmp",
    "top-only",
    "sub/top-only",
    "docs/a.html",
    "docs/deeper/b.html",
    "x/y/cache/z",
    "cache",
    "dist/bundle.js",
    "{a,b}.txt",
    "a.txt",
    "b.txt",
    "#hash.txt",
    "!bang.txt",
    "trailing.txt",
    "spaced.txt",
    "logs/x.log",
    "logs/keep/y.log",
    "a/z.txt",
    "a/b/c/z.txt",
    "m.o",
    "important.o",
    "sub/important.o",
    "build/x",
    "sub/build",
    "out/a",
    "out/kept",
    "out/kept2",
    "5.num",
    "55.num",
    "q1.txt",
    "q12.txt",
    "p/deep/x.md",
    "p/deep/q/r/x.md",
    "deep/x.md",
    "sub/b.tmp",
    "sub/local.txt",
    "sub/anchored.txt",
    "sub/inner/anchored.txt",
    "sub/inner/local.txt",
    "plain.py",
    "*star.txt",
    "zstar.txt",
    "x.txt",
    "foo2/bar",
    "q/foo2/bar",
    "q/r/foo2/bar",
    "m/only-dirs/f",
    "m/n/only-dirs/f",
    "only-dirs/f",
    "bz.txt",
    "az.txt",
    "infra/helm/v.yaml",
    "infra/helm/abc/c.yaml",
    "trailing.txt ",
    " x.txt",
)


def test_gitignore_answers_as_git_does(tmp_path: Path) -> None:
    """The files a walk keeps are the untracked files git does not ignore, by real git.

    Two forms are left out, where ``pathspec`` (and the hand-written matching before it)
    ignore the folder itself while git ignores only what is inside it: ``foo/**/`` and
    ``abc/**`` followed by ``!abc/keep.txt``.
    """
    git = shutil.which("git")
    assert git is not None, "these tests need git on PATH"
    make(
        tmp_path,
        {
            ".gitignore": _GIT_PATTERNS,
            "sub/.gitignore": "!*.tmp\nlocal.txt\n/anchored.txt\n*.o\n",
            **dict.fromkeys(_GIT_FILES, ""),
        },
    )
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run([git, "init", "-q", str(tmp_path)], check=True, env=env, timeout=60)
    listed = subprocess.run(
        [git, "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    ).stdout.decode()
    kept_by_git = sorted(name for name in listed.split("\0") if name)
    kept = sorted(rel for rel, _, is_dir in walk(tmp_path) if not is_dir)
    assert kept == kept_by_git
    # The forms the hand-written matching got wrong, answered as git does.
    assert {"a.txt", "b.txt"} <= set(kept)  # braces are literal
    assert not {"{a,b}.txt", "trailing.txt "} & set(kept)  # an escaped trailing space counts


def test_gitignore_of_the_enclosing_repository_applies_to_subfolders(tmp_path: Path) -> None:
    make(
        tmp_path,
        {".git/HEAD": "ref\n", ".gitignore": "*.gen.py\n", "pkg/a.py": "", "pkg/a.gen.py": ""},
    )
    result = FindTool().execute({"pattern": "*.py"}, ToolContext(cwd=tmp_path / "pkg"))
    assert text(result) == "a.py"


def test_nested_gitignore_files_apply_below_their_folder(
    workdir: Path, context: ToolContext
) -> None:
    make(workdir, {"a/.gitignore": "secret.txt\n", "a/secret.txt": "", "b/secret.txt": ""})
    assert text(FindTool().execute({"pattern": "secret.txt"}, context)) == "b/secret.txt"


@pytest.mark.parametrize(
    ("pattern", "rel", "matches"),
    [
        ("*.py", "a/b/c.py", True),
        ("*.py", "a/b/c.pyc", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("./src/**", "src/x/a.py", True),
        ("test_?.py", "t/test_1.py", True),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("*.{js,ts}", "web/app.ts", True),
        ("a+b(c).txt", "a+b(c).txt", True),
    ],
)
def test_glob_semantics(pattern: str, rel: str, matches: bool) -> None:
    assert path_matches(pattern, rel) is matches


def test_glob_matcher_is_cached_and_compiled() -> None:
    assert glob_matcher("**/*.md") is glob_matcher("**/*.md")


# --- grep ----------------------------------------------------------------------------


def test_grep_finds_lines_with_paths_and_numbers(project: Path, context: ToolContext) -> None:
    result = GrepTool().execute({"pattern": "TODO"}, context)
    assert result.details is None and not result.is_error
    assert (
        text(result)
        == ".hidden.cfg:1: TODO = hidden but searched\nREADME.md:2: TODO: write docs\nsrc/app.py:4:     # TODO: implement"
    )


def test_grep_ignore_case_literal_and_glob(project: Path, context: ToolContext) -> None:
    lowered = text(
        GrepTool().execute({"pattern": "todo", "ignoreCase": True, "glob": "*.py"}, context)
    )
    assert (
        lowered
        == "src/app.py:4:     # TODO: implement\nsrc/nested/deep.py:1: VALUE = 'todo lower case'"
    )
    literal = GrepTool().execute({"pattern": "os.getcwd()", "literal": True}, context)
    assert text(literal) == "src/app.py:5:     return os.getcwd()"
    scoped = GrepTool().execute({"pattern": "def", "glob": "tests/**"}, context)
    assert text(scoped) == "tests/test_app.py:1: def test_main():"


def test_grep_context_lines_merge_overlaps(workdir: Path, context: ToolContext) -> None:
    (workdir / "c.txt").write_text("a\nhit1\nb\nhit2\nc\nd\ne\n")
    result = GrepTool().execute({"pattern": "hit", "context": 1}, context)
    assert text(result) == "c.txt-1- a\nc.txt:2: hit1\nc.txt-3- b\nc.txt:4: hit2\nc.txt-5- c"


def test_grep_a_single_file_shows_its_name(project: Path, context: ToolContext) -> None:
    result = GrepTool().execute({"pattern": "return", "path": "src/util.py"}, context)
    assert text(result) == "util.py:2:     return 42"


def test_grep_limit_and_long_lines(workdir: Path, context: ToolContext) -> None:
    (workdir / "many.txt").write_text("".join(f"match {n}\n" for n in range(10)))
    result = GrepTool().execute({"pattern": "match", "limit": 3}, context)
    assert text(result) == (
        "many.txt:1: match 0\nmany.txt:2: match 1\nmany.txt:3: match 2\n\n"
        "[3 matches limit reached. Use limit=6 for more, or refine pattern]"
    )
    assert result.details == {"matchLimitReached": 3}
    (workdir / "wide.txt").write_text("needle " + "w" * 600 + "\n")
    wide = GrepTool().execute({"pattern": "needle"}, context)
    assert text(wide) == (
        "wide.txt:1: needle " + "w" * 493 + "... [truncated]\n\n"
        "[Some lines truncated to 500 chars. Use read tool to see full lines]"
    )
    assert wide.details == {"linesTruncated": True}
    json.dumps(wide.details)


def test_grep_crlf_and_unicode(workdir: Path, context: ToolContext) -> None:
    (workdir / "w.txt").write_bytes("naïve café\r\nplain\r\n".encode())
    assert text(GrepTool().execute({"pattern": "café$"}, context)) == "w.txt:1: naïve café"


def test_grep_no_match_bad_regex_and_missing_path(project: Path, context: ToolContext) -> None:
    assert (
        text(GrepTool().execute({"pattern": "no such text anywhere"}, context))
        == "No matches found"
    )
    bad = GrepTool().execute({"pattern": "([unclosed"}, context)
    assert (
        bad.is_error
        and text(bad).startswith("Invalid regex pattern '([unclosed'")
        and "literal=true" in text(bad)
    )
    missing = GrepTool().execute({"pattern": "x", "path": "nope"}, context)
    assert missing.is_error and text(missing) == f"Path not found: {project / 'nope'}"
    assert text(GrepTool().execute({"pattern": "x", "ignoreCase": "maybe"}, context)) == (
        "Argument 'ignoreCase' must be true or false, got 'maybe'."
    )


def test_search_tools_stop_when_cancelled(project: Path) -> None:
    token = CancelToken()
    token.cancel()
    context = ToolContext(cwd=project, cancel=token)
    for tool, arguments in ((GrepTool(), {"pattern": "TODO"}), (FindTool(), {"pattern": "*"})):
        result = tool.execute(arguments, context)
        assert result.is_error and text(result) == "Operation aborted"
