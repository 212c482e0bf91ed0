"""HTML, Markdown and notebook exports: structure, content, and untrusted text kept as text."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import mistune
import pytest

from pinb.analysis.export import (
    default_export_path,
    export_html,
    export_ipynb,
    export_markdown,
    shown_path,
    write_export,
)
from pinb.core import Session
from pinb.errors import EntryNotFoundError, UsageError

from .builders import CASES, SCRIPT, assistant, tool_result, user


class _Collector(HTMLParser):
    """Collects tags, attributes and text, as a browser would parse them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: str) -> _Collector:
    parser = _Collector()
    parser.feed(page)
    return parser


@pytest.fixture
def hostile(tmp_path: Path) -> Session:
    s = Session.create("/x", tmp_path)
    s.append_message(user(f"{SCRIPT} & <b onclick=evil()>bold</b>"))
    s.append_message(
        assistant(
            f"reply {SCRIPT}",
            calls=(("c1", "<img src=x onerror=alert(1)>", {"k": SCRIPT}),),
            total=5,
            thinking=f"think {SCRIPT}",
        )
    )
    message = tool_result("c1", "bash", f"out {SCRIPT}")
    message["content"].append({"type": "image", "mimeType": "text/html", "data": "PHNjcmlwdD4="})
    message["content"].append({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
    s.append_message(message)
    s.append_message(assistant("```\nfenced\n```", total=6))
    s.set_name(f"name {SCRIPT}")
    return s


def test_html_is_escaped_and_shows_tree_and_path(hostile: Session) -> None:
    page = export_html(hostile)
    parsed = _parse(page)
    tags = [tag for tag, _ in parsed.tags]
    assert "script" not in tags and "b" not in tags
    assert all(not k.startswith("on") for _, attrs in parsed.tags for k in attrs)
    # Only the well-formed PNG is embedded; the text/html "image" is not.
    images = [attrs["src"] for tag, attrs in parsed.tags if tag == "img"]
    assert images == ["data:image/png;base64,iVBORw0KGgo="]
    text = "".join(parsed.text)
    assert SCRIPT in text and "<img src=x onerror=alert(1)>" in text  # shown as text
    assert "Content-Security-Policy" in page
    assert tags.count("article") == 5  # four messages and the session_info entry
    assert tags.count("li") == 5  # the tree lists every entry


def test_html_of_a_branch_and_the_whole_tree() -> None:
    case = next(p for p in CASES if p.name == "legacy-v2.jsonl")
    session = Session.open(case)
    path_page = _parse(export_html(session))
    tree_page = _parse(export_html(session, whole_tree=True))
    articles = lambda p: sum(1 for tag, _ in p.tags if tag == "article")  # noqa: E731
    visible = [e for e in session.entries if not e.is_navigation]
    assert articles(tree_page) == len(visible)
    assert articles(path_page) == len([e for e in session.path_to() if not e.is_navigation])
    summarized = [
        a for t, a in path_page.tags if t == "article" and "summarized" in (a.get("class") or "")
    ]
    context = session.build_context()
    on_path_messages = [e for e in context.path if e.type in ("message", "custom_message")]
    assert len(summarized) == len(
        [e for e in on_path_messages if not any(e is s for s in context.sources)]
    )
    leaf = session.entries[5].id
    one = _parse(export_html(session, leaf=leaf))
    assert articles(one) == len([e for e in session.path_to(leaf) if not e.is_navigation])
    with pytest.raises(EntryNotFoundError):
        export_html(session, leaf="nope")


def test_markdown_neutralises_html_and_fences_code(hostile: Session) -> None:
    text = export_markdown(hostile)
    # Outside code (which Markdown shows literally) no raw HTML is left.
    prose = re.sub(r"(`{3,})[a-z]*\n.*?\n\1", "", text, flags=re.S)
    prose = re.sub(r"`[^`\n]*`", "", prose)
    assert "<" not in prose
    assert "&lt;script&gt;" in prose and "&lt;b onclick=evil()&gt;" in prose
    assert '```json\n{\n "k": "<script>' in text  # tool arguments are fenced, readable
    assert "\n```\nfenced\n```\n" in text  # the model's own Markdown stays Markdown
    assert text.count("## ") == 4


def test_ipynb_cells_are_messages_and_tool_calls(hostile: Session) -> None:
    import nbformat

    notebook = export_ipynb(hostile)
    nbformat.validate(nbformat.from_dict(notebook))
    kinds = [cell["cell_type"] for cell in notebook["cells"]]
    # title, user, assistant, tool call (code), final assistant; the result is the call's output
    assert kinds == ["markdown", "markdown", "markdown", "code", "markdown"]
    code = notebook["cells"][3]
    assert code["metadata"]["pinb"]["toolCallId"] == "c1"
    assert "".join(code["source"]).startswith("# tool call: <img")
    assert json.loads("".join(code["source"]).split("\n", 1)[1]) == {"k": SCRIPT}
    outputs = code["outputs"]
    assert outputs[0]["output_type"] == "stream" and "".join(outputs[0]["text"]).startswith("out ")
    assert [o["output_type"] for o in outputs[1:]] == ["display_data"]
    assert "text/html" not in json.dumps([o.get("data") for o in outputs])
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            assert "<script>" not in "".join(cell["source"])


def test_write_export_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "case.ipynb"
    text = write_export(CASES[0], "ipynb", out, whole_tree=True)
    assert json.loads(out.read_text()) == json.loads(text)
    with pytest.raises(UsageError):
        write_export(CASES[0], "pdf")
    # A folder that does not exist is named, not a temporary file's path; nothing is made.
    missing = tmp_path / "no-such-folder" / "case.md"
    with pytest.raises(UsageError, match=r"case\.md: its folder .*no-such-folder does not exist"):
        write_export(CASES[0], "md", missing)
    assert not missing.parent.exists()


def _rendered_text(markdown: str) -> tuple[list[str], list[str], list[str]]:
    """(paragraph texts, code block texts, heading tags) of Markdown as a renderer shows it."""
    page = mistune.html(markdown)
    assert isinstance(page, str)
    code = [html.unescape(c) for c in re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", page, re.S)]
    paragraphs = [
        html.unescape(re.sub(r"<br />\n?", "\n", p))
        for p in re.findall(r"<p>(.*?)</p>", page, re.S)
    ]
    return paragraphs, code, re.findall(r"<h[1-6]>", page)


def test_markdown_shows_tool_output_and_prompts_as_the_session_holds_them(tmp_path: Path) -> None:
    readme = "# textstats\n\nSmall *helpers*:\n\n- `median`\n- <b>word_count</b>\n    indented\n"
    prompt = "# Not a heading\nfix __init__ and *args, see [docs](x) & 1. <i>now</i>\n  two spaces"
    s = Session.create("/x", tmp_path)
    s.append_message(user(prompt))
    s.append_message(assistant("Reading it.", calls=(("c1", "read", {"path": "README.md"}),)))
    s.append_message(tool_result("c1", "read", readme))
    s.append_message(assistant("The README has **one** heading.", total=6))
    paragraphs, code, headings = _rendered_text(export_markdown(s))
    assert readme in code  # fenced: the README's heading and list stay text
    assert prompt in paragraphs  # every character, line break and leading space
    assert "The README has one heading." not in paragraphs  # the model's Markdown renders
    # Headings: the title, one per message, none from the README or the prompt.
    assert len(headings) == 1 + 4
    notebook = export_ipynb(s)
    markdown = "\n\n".join(
        "".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown"
    )
    paragraphs, _, headings = _rendered_text(markdown)
    assert prompt in paragraphs and len(headings) == 1


def test_markdown_escapes_only_what_would_make_markdown(tmp_path: Path) -> None:
    plain = "pinb/offline-demo ran word_count (3.5 s); it's fine: x.y, a-b!"
    marked = "*not bold* _nor this_ [no link](x) `no code` | ~~no strike~~ $no maths$"
    starts = "# no heading\n- no item\n1. no number\n+ no plus\n==="
    s = Session.create("/x", tmp_path)
    for text in (plain, marked, starts):
        s.append_message(user(text))
    text = export_markdown(s)
    assert plain in text  # nothing in it makes Markdown: no backslash at all
    paragraphs, code, headings = _rendered_text(text)
    assert {plain, marked, starts} <= set(paragraphs)
    assert len(headings) == 1 + 3 and not code


def test_every_entry_kind_is_drawn_a_system_prompt_included(tmp_path: Path) -> None:
    s = Session.create("/x", tmp_path)
    tool = {"name": "read", "description": "Read a file", "parameters": {"type": "object"}}
    s.append_message(
        {
            "role": "system",
            "content": "",
            "sections": {"preamble": "You are a careful coding agent.", "rules": None},
            "toolsAdded": [tool],
            "timestamp": 1,
        }
    )
    s.append_message(user("hi"))
    body = " ".join(_parse(export_html(s)).text)
    assert "You are a careful coding agent." in body and "read: Read a file" in body
    text = export_markdown(s)
    assert "You are a careful coding agent." in text and "section rules" in text


def test_the_default_export_path_is_a_short_name_in_a_folder_of_its_own(tmp_path: Path) -> None:
    session = Session.create(tmp_path / "project", tmp_path / "sessions")
    session.append_message(user("first"))
    folder = tmp_path / "notebooks" / "exports"
    # Unnamed: the id's first 8 characters, not the file's long timestamped stem.
    first = default_export_path(session, "html", folder)
    assert first == folder / f"{session.id[:8]}.html"
    assert session.path is not None and session.path.stem not in first.name
    assert not folder.exists()  # choosing a name makes nothing; the write makes the folder
    write_export(session, "html", first, make_folder=True)
    assert folder.is_dir() and first.read_text().startswith("<!DOCTYPE html>")
    first.write_text("earlier export\n")
    second = default_export_path(session, "html", folder)
    assert second == folder / f"{session.id[:8]}-2.html"
    assert first.read_text() == "earlier export\n"  # choosing a name never touches a file
    assert default_export_path(session, "md", folder) == folder / f"{session.id[:8]}.md"
    # Named (Pi's session_info): the name as a slug.
    session.set_name("Fix the login bug!")
    assert default_export_path(session, "html", folder) == folder / "fix-the-login-bug.html"
    # A name with nothing a file name can keep falls back to the id.
    session.set_name("修复 ✓")
    assert default_export_path(session, "ipynb", folder) == folder / f"{session.id[:8]}.ipynb"
    with pytest.raises(UsageError, match="unknown export format"):
        default_export_path(session, "pdf", folder)


def test_the_default_export_folder_is_exports_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    session = Session.create(tmp_path / "project", tmp_path / "sessions")
    session.set_name("demo")
    target = default_export_path(session, "md")
    assert target == Path("exports") / "demo.md"
    assert shown_path(target.resolve()) == str(Path("exports") / "demo.md")
    outside = tmp_path.parent / "elsewhere.md"
    assert shown_path(outside) == str(outside.resolve())
    # A failed export leaves no empty folder behind: the folder is made after rendering.
    with pytest.raises(EntryNotFoundError):
        write_export(session, "md", target, leaf="missing", make_folder=True)
    assert not (tmp_path / "exports").exists()
    # A file where the folder should be: one line saying what to do, not a traceback.
    (tmp_path / "blocked").write_text("a file\n")
    blocked = default_export_path(session, "md", tmp_path / "blocked")
    with pytest.raises(UsageError, match="blocked: cannot make the export folder"):
        write_export(session, "md", blocked, make_folder=True)
    assert (tmp_path / "blocked").read_text() == "a file\n"


def test_the_export_magic_writes_into_exports_beside_the_notebook_or_where_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.utils.io import capture_output

    from tests.shells import pi_shell

    notebook_folder = tmp_path / "notebooks"
    notebook_folder.mkdir()
    (notebook_folder / "01-start.ipynb").write_text("{}\n")
    monkeypatch.chdir(notebook_folder)  # JupyterLab starts the kernel in the notebook's folder
    session = Session.create(tmp_path / "project", tmp_path / "sessions")
    session.append_message(user("pinb/offline-demo said word_count is fine"))
    session.append_message(assistant("Yes.", total=5))
    with pi_shell() as ip:
        ip.magics_manager.registry["PiMagics"].session = session
        with capture_output() as shown:
            ip.run_line_magic("pi", "export md")
        written = notebook_folder / "exports" / f"{session.id[:8]}.md"
        assert shown.stdout.startswith(f"wrote exports/{written.name} ")
        assert "pinb/offline-demo said word_count is fine" in written.read_text()
        session.set_name("Word count check")
        with capture_output() as shown:
            ip.run_line_magic("pi", "export html")
            ip.run_line_magic("pi", "export html")
        assert "wrote exports/word-count-check.html " in shown.stdout
        assert "wrote exports/word-count-check-2.html " in shown.stdout
        # Nothing but the notebook and the exports folder beside the notebook.
        assert sorted(p.name for p in notebook_folder.iterdir()) == ["01-start.ipynb", "exports"]
        assert sorted(p.name for p in (notebook_folder / "exports").iterdir()) == [
            written.name,
            "word-count-check-2.html",
            "word-count-check.html",
        ]
        elsewhere = tmp_path / "out"
        elsewhere.mkdir()
        with capture_output() as shown:
            ip.run_line_magic("pi", f"export html -o {elsewhere}")
            ip.run_line_magic("pi", f"export html -o {elsewhere / 'named.html'} --tree")
        assert sorted(p.name for p in elsewhere.iterdir()) == [
            "named.html",
            "word-count-check.html",
        ]
        assert f"wrote {elsewhere / 'named.html'}" in shown.stdout  # outside the cwd: in full
        assert not list(tmp_path.glob("*.html"))


def test_the_models_markdown_renders_in_every_export_and_fetches_nothing(tmp_path: Path) -> None:
    reply = (
        "**Done**: see ![chart](http://203.0.113.7/c.png?d=1) and ![ref][r].\n\n"
        "[r]: http://203.0.113.7/r.png?d=2\n\n<img src=http://203.0.113.7/raw.png>"
    )
    s = Session.create("/x", tmp_path)
    s.append_message(user("![not markdown](http://203.0.113.7/u.png)"))
    s.append_message(assistant(reply, total=5, thinking="thought ![t](http://203.0.113.7/t.png)"))
    page = _parse(export_html(s))
    assert [tag for tag, _ in page.tags if tag in ("img", "iframe")] == []
    links = {attrs.get("href") for tag, attrs in page.tags if tag == "a"}
    assert {"http://203.0.113.7/c.png?d=1", "http://203.0.113.7/r.png?d=2"} <= links
    assert "http://203.0.113.7/t.png" in links  # thinking is the model's Markdown too
    assert "strong" in [tag for tag, _ in page.tags]
    text = "".join(page.text)
    assert "image: chart" in text and "<img src=http://203.0.113.7/raw.png>" in text
    assert "![not markdown](http://203.0.113.7/u.png)" in text  # the prompt, as written
    markdown = export_markdown(s)
    cells = ["".join(c["source"]) for c in export_ipynb(s)["cells"] if c["cell_type"] == "markdown"]
    for source in (markdown, *cells):
        rendered = mistune.html(source)
        assert isinstance(rendered, str) and "<img" not in rendered
    assert "[image: chart](http://203.0.113.7/c.png?d=1)" in markdown
    assert "[image: ref](http://203.0.113.7/r.png?d=2)" in markdown


class _Sections(HTMLParser):
    """Per ``<h2>`` of the page's main part: the anchors of its articles and of its links."""

    def __init__(self) -> None:
        super().__init__()
        self.articles: dict[str, list[str]] = {}
        self.links: dict[str, list[str]] = {}
        self._heading: str | None = None
        self._in_h2 = False
        self._in_main = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "main":
            self._in_main = True
        elif tag == "h2" and self._in_main:
            self._in_h2, self._heading = True, ""
        elif tag == "article" and self._heading is not None:
            self.articles[self._heading].append(found["id"] or "")
        elif tag == "a" and self._heading is not None and self._in_main:
            self.links[self._heading].append((found["href"] or "").lstrip("#"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2" and self._in_h2:
            self._in_h2 = False
            assert self._heading is not None
            self.articles[self._heading] = []
            self.links[self._heading] = []

    def handle_data(self, data: str) -> None:
        if self._in_h2:
            self._heading = (self._heading or "") + data


def test_the_html_context_path_is_what_the_model_reads_after_a_compaction(
    tmp_path: Path,
) -> None:
    from pinb.core import CompactionSettings, ExtractiveSummarizer
    from pinb.testing.work import write_work_session

    session = write_work_session(tmp_path / "s", turns=8)
    settings = CompactionSettings(reserve_tokens=2000, keep_recent_tokens=400)
    session.compact(ExtractiveSummarizer(), settings=settings)
    for turn in range(4):
        session.append_message(user(f"Now rename reader {turn}."))
        session.append_message(assistant(f"Renamed reader {turn}. " + "Checked. " * 120, total=5))
    session.compact(ExtractiveSummarizer(), settings=settings)  # the last one on the path counts
    session.append_message(user("And the tests?"))
    session.append_message(assistant("They pass.", total=5))
    context = session.build_context()
    entry_of = {f"e{i}": e for i, e in enumerate(session.entries)}
    page = _Sections()
    page.feed(export_html(session))
    whole_path = "Whole path, root to leaf (summarized entries included)"
    assert list(page.articles) == ["Context path", whole_path]
    # The context path is the core's context entries, in the context's order: the last
    # compaction's summary first, then the kept entries, then what follows.
    drawn = [entry_of[anchor] for anchor in page.articles["Context path"]]
    expected = [e for e in context.sources if not e.is_navigation]
    assert [e.id for e in drawn] == [e.id for e in expected]
    assert (
        drawn[0] is context.compaction and drawn[1].id == context.compaction.raw["firstKeptEntryId"]
    )
    summarized = [e for e in context.path if not any(e is s for s in context.sources)]
    assert len(summarized) > 10 and any(e.type == "compaction" for e in summarized)
    assert not {e.id for e in summarized} & {e.id for e in drawn}
    # The whole path follows, named as such: the summarized entries in full, each context
    # entry a link up to its one article; together, every entry of the path once.
    rest = [entry_of[anchor] for anchor in page.articles[whole_path]]
    assert [e.id for e in rest] == [e.id for e in summarized if not e.is_navigation]
    linked = [entry_of[anchor] for anchor in page.links[whole_path]]
    in_path_order = [e for e in context.path if any(e is s for s in expected)]
    assert [e.id for e in linked] == [e.id for e in in_path_order]
    assert in_path_order[-3] is context.compaction  # the summary sits after what it kept
    # Without a compaction the context is the whole path: one section, nothing repeated.
    plain = Session.create(tmp_path / "p", tmp_path / "p" / "s")
    plain.append_message(user("hi"))
    plain.append_message(assistant("hello", total=5))
    one = _Sections()
    one.feed(export_html(plain))
    assert one.articles == {"Context path": ["e0", "e1"]} and one.links == {"Context path": []}
