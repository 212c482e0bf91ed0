"""A search answered by reading the files agrees with the index: the same entries match,
cited, folded, filtered and snipped alike; its hits come before the index is built, the
index is built meanwhile and used after, and Ctrl-C stops a scan cleanly."""

from __future__ import annotations

import itertools
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from pinb.analysis.searching.building import is_building
from pinb.analysis.searching.hits import SearchHit, SearchResults
from pinb.analysis.searching.index import SCAN_ABOVE, SessionCatalog, default_index_path, search
from pinb.analysis.searching.query import parse_query
from pinb.analysis.searching.scan import scan_search
from pinb.analysis.searching.scanfiles import Finder
from pinb.cli.main import main
from pinb.core import Session
from pinb.core.file.paths import sessions_root
from pinb.core.forks import clone_session, fork_session
from pinb.testing import SessionShape, generate_session
from pinb.testing.story import write_story_session
from tests.samples import CASE_FILES, LEGACY, TREES

from ..builders import assistant, build_demo, tool_result, user

pytestmark = pytest.mark.slow  # scheduled first: see tests/conftest.py

#: Queries of every kind: words (common, rare, in any case, only in JSON keys), phrases,
#: prefixes, exclusions, every filter alone and with words, negated filters.
QUERIES = (
    "parser",
    "PARSER",
    "Parser Cache",
    "median",
    "the",
    "hello",
    "checkpoint",
    "content",
    "usage",
    "text",
    "assistant",
    "call",
    "zzzz-not-there",
    '"empty list"',
    '"fix the"',
    '"parser cache"',
    "summar*",
    "refact*",
    "pa*",
    "parser -cache",
    "median -test",
    "-parser",
    '-"empty list" role:user',
    "role:user",
    "role:toolResult",
    "role:assistant parser",
    "role:compactionSummary",
    "role:branchSummary",
    "role:custom",
    "role:bashExecution",
    "role:user role:assistant cache",
    "-role:user cache",
    "tool:bash",
    "tool:read",
    "tool:BASH error",
    "-tool:bash parser",
    "file:app.py",
    "file:src/app.py",
    "file:./tests/test_app.py tree",
    "after:2025-03-02",
    "before:2025-03-02 parser",
    "after:2025-03-01T10:00 before:2025-03-03 -role:toolResult",
    "demo session",
    "<script>",
    "naïve café",
    "日本",
    "ünïcode",
)


def _corpus() -> Path:
    """Sessions of every shape under the sessions root: stories with forks and clones,
    generated trees with compactions and branch summaries, the project's samples (odd
    cases, version 1 and 2 files), hand-made entries of every role, and a file that is
    not a session. Returns the root."""
    root = sessions_root()
    for seed in (3, 4):
        story = write_story_session(root / "--stories--", seed=seed, cwd="/home/dev/stories")
        users = [e.id for e in story.entries if e.role == "user"]
        fork_session(story, users[len(users) // 2])
        clone_session(story)
    for seed in range(4):
        generate_session(
            root / f"--gen{seed % 2}--" / f"g{seed}.jsonl",
            SessionShape(entries=150, main_depth=90, compaction_every=40, branch_every=25),
            seed=seed,
        )
    for path in [*CASE_FILES.values(), *TREES, *LEGACY.values()]:
        target = root / "--samples--" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    build_demo(root / "--demo--")
    _odd_roles(root / "--roles--")
    (root / "--roles--" / "not-a-session.jsonl").write_text(
        json.dumps({"type": "message", "message": user("parser cache in no session")}) + "\n"
    )
    return root


def _odd_roles(folder: Path) -> None:
    """Entries of the other roles, repeats, accents, key-only words, far-away tool calls."""
    s = Session.create("/home/dev/roles", folder)
    s.append_message(user("Parser CACHE naïve café 日本 ünïcode, the usage of text content"))
    call = ("far-call", "bash", {"command": "pytest tests/test_app.py", "cwd": "src"})
    s.append_message(assistant("running the parser tests", calls=(call,)))
    s.append_message(user("meanwhile: parser cache"))
    s.append_message(tool_result("far-call", "bash", "1 failed: parser error in the cache"))
    s.append_message(user("Parser CACHE naïve café 日本 ünïcode, the usage of text content"))
    s.append_custom_message("note", "a custom parser note")
    s.append_message(
        {
            "role": "bashExecution",
            "command": "grep parser src/app.py",
            "output": "src/app.py: parser = cache()",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": 1_700_000_010_000,
        }
    )
    s.set_name("roles and parser names")


def _seen(hits: SearchResults) -> set[tuple[Any, ...]]:
    """Everything a hit shows: citation, copies, role, time, snippet, session row."""
    return {
        (h.cite, tuple(map(str, h.copies)), h.role, h.timestamp, h.snippet, h.info) for h in hits
    }


def test_a_scan_finds_what_the_index_finds_for_every_kind_of_query() -> None:
    _corpus()
    with SessionCatalog(build=None) as catalog:
        catalog.search("parser", using="index")  # the whole index, built once
        empty = set()
        for query in QUERIES:
            for fold in (True, False):
                index = catalog.search(query, limit=100_000, fold=fold, using="index")
                scan = catalog.search(query, limit=100_000, fold=fold, using="scan")
                assert (index.source, scan.source) == ("index", "scan")
                assert _seen(scan) == _seen(index), (query, fold)
                assert scan.complete and scan.building is None
            if not index:
                empty.add(query)
    # Only words that are nowhere find nothing, the two in every line's JSON among them.
    assert empty == {"assistant", "call", "zzzz-not-there"}


def test_a_scan_agrees_with_the_index_on_a_generated_corpus() -> None:
    root = sessions_root()
    for seed in range(12):
        generate_session(
            root / f"--p{seed % 3}--" / f"s{seed:02d}.jsonl",
            SessionShape(entries=200, main_depth=120, compaction_every=60, branch_every=30),
            seed=100 + seed,
        )
    words = ("parser", "cache", "tree", "leaf", "token", "async", "index", "fix", "grep")
    queries = [
        *words,
        *(f"{a} {b}" for a, b in itertools.pairwise(words)),
        *(f'"{a} {b}"' for a, b in zip(words, words[2:], strict=False)),
        *(f"{w[:3]}*" for w in words),
        *(f"{a} -{b}" for a, b in zip(words, words[3:], strict=False)),
        *(f"{w} role:{r}" for w in words[:3] for r in ("user", "assistant", "toolResult")),
        *(f"{w} tool:{t}" for w in words[:3] for t in ("bash", "read", "edit")),
        *(f"{w} file:src/{f}.py" for w in words[:3] for f in ("app", "tree", "cli")),
    ]
    with SessionCatalog(build=None) as catalog:
        for query in queries:
            index = catalog.search(query, limit=100_000, using="index")
            assert index, query
            assert _seen(catalog.search(query, limit=100_000, using="scan")) == _seen(index)


#: Each word's forms, as texts of a session write them and as a query may type them: the
#: capitals and small letters of many scripts, Turkish dotted and dotless i, German sharp s,
#: a ligature, compatibility characters (the Kelvin and Ångström signs, fullwidth, Roman
#: numerals, circled and mathematical letters), accents precomposed and combining.
SCRIPTS = {
    "cyrillic": ("Москва", "МОСКВА", "москва", "мОсКвА"),
    "greek": ("Σίσυφος", "ΣΊΣΥΦΟΣ", "σίσυφος", "σίσυφοσ", "ΣΙΣΥΦΟΣ", "σισυφος"),
    "armenian": ("Երևան", "ԵՐԵՎԱՆ", "երեւան", "երևան"),
    "georgian": ("თბილისი", "ᲗᲑᲘᲚᲘᲡᲘ", "ႧႡႨႪႨႱႨ", "ⴇⴁⴈⴊⴈⴑⴈ"),
    "cherokee": ("ᏣᎳᎩ", "ꮳꮃꭹ", "Ꮳꮃꭹ"),
    "deseret": ("𐐔𐐯𐑅𐐨𐑉𐐯𐐻", "𐐼𐐯𐑅𐐨𐑉𐐯𐐻", "𐐔𐐇𐐝𐐀𐐡𐐇𐐓"),
    "osage": ("𐒰𐓘𐓂𐓏", "𐓘𐓘𐓂𐓏"),
    "turkish": ("İstanbul", "ISTANBUL", "istanbul", "ıstanbul", "İSTANBUL", "i\u0307stanbul"),
    "german": ("Straße", "STRASSE", "strasse", "STRAẞE", "straße"),
    "ligature": ("ﬁle", "file", "FILE", "ﬁ"),
    "kelvin": ("\u212aelvin", "Kelvin", "KELVIN", "kelvin"),
    "angstrom": ("\u212bngström", "Ångström", "angstrom", "ÅNGSTRÖM"),
    "fullwidth": ("ＰＡＲＳＥＲ", "ｐａｒｓｅｒ", "Ｐａｒｓｅｒ"),
    "roman": ("Ⅻ", "ⅻ", "XII"),
    "circled": ("Ⓟⓐⓡⓢⓔⓡ", "ⓟⓐⓡⓢⓔⓡ"),
    "mathematical": ("𝐩𝐚𝐫𝐬𝐞𝐫", "𝐏𝐀𝐑𝐒𝐄𝐑", "𝑝𝑎𝑟𝑠𝑒𝑟"),
    "accents": ("résumé", "RÉSUMÉ", "resume", "Re\u0301sume\u0301", "RE\u0301SUME\u0301"),
    "vietnamese": ("Tiếng Việt", "TIẾNG VIỆT", "tieng viet", "Tie\u0302\u0301ng"),
}


def _scripts(root: Path) -> None:
    """Each form of each word in a session's messages (user, assistant, a tool call's
    command and its result), once as Pi writes the file (UTF-8) and once as an ASCII-only
    writer does (every other character a ``\\u`` escape)."""
    s = Session.create("/home/dev/scripts", root / "--scripts--")
    for n, forms in enumerate(SCRIPTS.values()):
        for k, form in enumerate(forms):
            s.append_message(user(f"the word {form} here"))
            call = (f"c{n}-{k}", "bash", {"command": f"grep -r {form} notes/"})
            s.append_message(assistant(f"{form}: found it", calls=(call,)))
            s.append_message(tool_result(f"c{n}-{k}", "bash", f"notes/{n}.md: {form}"))
    lines = s.require_path().read_text(encoding="utf-8").splitlines()
    escaped = root / "--scripts-escaped--" / "escaped.jsonl"
    escaped.parent.mkdir()
    header = json.loads(lines[0]) | {"id": "escaped-" + json.loads(lines[0])["id"]}
    body = [json.dumps(json.loads(line)) for line in lines[1:]]
    escaped.write_text("\n".join([json.dumps(header), *body]) + "\n", encoding="ascii")


def test_a_scan_folds_every_script_as_the_index_does() -> None:
    _scripts(sessions_root())
    queries = {q for forms in SCRIPTS.values() for f in forms for q in (f, f.lower(), f.upper())}
    queries |= {f"{q[:3]}*" for q in list(queries) if len(q) > 3}
    queries |= {'"tiếng việt"', '"TIENG VIET"', "parser", "word москва", "kelvin -ångström", "ß"}
    found = {}
    with SessionCatalog(build=None) as catalog:
        catalog.search("word", using="index")  # the whole index, built once
        for query in sorted(queries):
            for fold in (True, False):
                index = catalog.search(query, limit=100_000, fold=fold, using="index")
                scan = catalog.search(query, limit=100_000, fold=fold, using="scan")
                assert _seen(scan) == _seen(index), (query, fold)
            found[query] = {h.snippet for h in index}  # each copy its own (not folded)
        # Without numpy, and with the files read in small pieces: the same hits.
        files = [(str(p), p.stat().st_size, p.stat().st_mtime_ns)
                 for p in sessions_root().glob("*/*.jsonl")]  # fmt: skip
        for query in ("москва", "kelvin", "résumé", "σίσυφος", "word", "ß", "istanbul"):
            index = catalog.search(query, limit=100_000, using="index")
            for vectors, batch in ((False, 8 << 20), (True, 700), (False, 700)):
                scan = scan_search(query, parse_query(query), files, root=sessions_root(),
                                   limit=100_000, fold=True, vectors=vectors, batch=batch)  # fmt: skip
                assert _seen(scan) == _seen(index), (query, vectors, batch)

    # The rule itself, as the index has it: case by FTS5's own table, Latin diacritics
    # folded, nothing folded by compatibility or by str.casefold's extra rules.
    def words(query: str) -> set[str]:
        return {hit for hit in found[query] if hit.startswith("the word")}

    assert words("москва") == {f"the word «{f}» here" for f in SCRIPTS["cyrillic"]}
    assert words("kelvin") == {f"the word «{f}» here" for f in SCRIPTS["kelvin"]}
    assert "the word «Re\u0301sume\u0301» here" in words("résumé")
    assert words("istanbul") == {
        f"the word «{f}» here" for f in ("İstanbul", "ISTANBUL", "istanbul", "İSTANBUL",
                                          "i\u0307stanbul")
    }  # fmt: skip
    assert words("straße") == {"the word «Straße» here", "the word «STRAẞE» here",
                               "the word «straße» here"}  # fmt: skip
    assert words("σίσυφος") == {f"the word «{f}» here" for f in SCRIPTS["greek"][:4]}
    assert words("ꮳꮃꭹ") == {"the word «ꮳꮃꭹ» here"}  # FTS5 folds no Cherokee
    assert not words("parser") and not words("ⓟⓐⓡⓢⓔⓡ")  # no compatibility folding
    assert sum(map(len, found.values())) > 500


def test_hits_come_before_the_index_is_built_which_later_searches_use() -> None:
    _corpus()
    index_path = default_index_path()
    streamed: list[tuple[SearchHit, int]] = []

    def entries_indexed() -> int:
        if not index_path.exists():
            return 0
        import sqlite3

        db = sqlite3.connect(index_path)
        try:
            return int(db.execute("SELECT count(*) FROM entries").fetchone()[0])
        except sqlite3.Error:
            return 0
        finally:
            db.close()

    with SessionCatalog(build="thread", scan_above=0) as catalog:
        first = catalog.search(
            "parser", limit=5, on_hit=lambda hit: streamed.append((hit, entries_indexed()))
        )
    assert first.source == "scan" and first.building is not None
    assert [hit.cite for hit, _ in streamed] == [hit.cite for hit in first]
    assert all(indexed == 0 for _, indexed in streamed)  # before the index held an entry
    assert first.building.how == "thread" and first.building.wait(120)
    assert entries_indexed() > 0 and not is_building(index_path)
    with SessionCatalog() as catalog:
        later = catalog.search("parser", limit=100_000)
        scanned = catalog.search("parser", limit=100_000, using="scan")
    assert later.source == "index" and later.building is None
    assert _seen(later) == _seen(scanned)


def test_the_background_build_is_a_process_of_its_own_by_default() -> None:
    _corpus()
    with SessionCatalog(scan_above=0) as catalog:
        first = catalog.search("cache")
    build = first.building
    assert build is not None and build.how == "process" and build.pid is not None
    assert build.wait(120) and build.done()
    assert "done" in repr(build)
    with SessionCatalog() as catalog:
        assert catalog.search("cache").source == "index"


def test_a_search_lacking_little_of_the_index_brings_it_up_to_date_instead() -> None:
    _corpus()
    assert search("parser", using="index")
    s = Session.create("/home/dev/late", sessions_root() / "--late--")
    s.append_message(user("a late parser question"))
    later = search("parser", limit=100_000)
    assert later.source == "index" and later.building is None
    assert any(h.path == s.path for h in later)


def test_ctrl_c_during_a_scan_stops_it_cleanly() -> None:
    _corpus()
    index_path = default_index_path()

    def interrupt(_: SearchHit) -> None:
        raise KeyboardInterrupt

    with SessionCatalog(scan_above=0) as catalog:
        with pytest.raises(KeyboardInterrupt):
            catalog.search("parser", on_hit=interrupt)
        # No reading thread is left behind, no build was started, and the catalog works.
        assert not [t for t in threading.enumerate() if t.name.startswith("pinb-scan")]
        assert not is_building(index_path)
        assert catalog.search("parser", using="index")


def test_a_large_file_is_read_in_pieces_and_a_scan_stops_at_the_limit() -> None:
    # Pieces of about 600 bytes: tool results far from their calls, lines across pieces.
    s = Session.create("/home/dev/big", sessions_root() / "--big--")
    for n in range(40):
        call = (f"c{n}", "read" if n % 2 else "bash", {"path": f"src/m{n}.py"})
        s.append_message(assistant(f"reading module {n}", calls=(call,)))
        s.append_message(user(f"note {n}: " + "padding " * 30))
        s.append_message(tool_result(f"c{n}", "read", f"module {n} holds the parser"))
    files = [(str(s.path), s.path.stat().st_size, s.path.stat().st_mtime_ns)]
    with SessionCatalog(":memory:", build=None) as catalog:
        for query in ("parser", "parser tool:bash", "module file:src/m7.py", "tool:read"):
            index = catalog.search(query, limit=1000, using="index")
            scan = scan_search(
                query, parse_query(query), files, root=None, limit=1000, fold=True, batch=600
            )
            assert index and _seen(scan) == _seen(index), query
    few = scan_search("parser", parse_query("parser"), files, root=None, limit=3, fold=True)
    assert len(few) == 3 and few.complete  # one file: read whole before it stops
    assert [h.line for h in few] == sorted((h.line for h in few), reverse=True)  # last first


def test_a_scan_past_its_time_is_stopped() -> None:
    from pinb.analysis.searching.index import SearchTimeoutError

    _corpus()
    with SessionCatalog(build=None) as catalog, pytest.raises(SearchTimeoutError, match="scan"):
        catalog.search("parser", using="scan", timeout=0)


def test_the_word_finder_with_and_without_vectors() -> None:
    data = b'{"a":"ZyZzYva zyzzyva"}\nzyzzyvA\xc3\xa9 \xc3\x9azyzzyva 9zyzzyva9 zyzzy\n'
    for word in (b"zyzzyva", b"9zyzzyva9", b"a", b"zz"):
        fast = Finder(word).positions(memoryview(data))
        plain = Finder(word, vectors=False).positions(memoryview(data))
        assert fast == plain and fast, word
    assert Finder(b"zyzzyva", vectors=False).positions(memoryview(data)) == [6, 14, 24, 36, 45]


def test_the_cli_prints_hits_as_a_scan_finds_them_then_ranks_once_indexed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pinb.testing.generate import generate_session as generate

    root = sessions_root()
    # Over the scan threshold: a few MB of sessions, one of them with the word.
    for seed in range(3):
        generate(
            root / "--p--" / f"s{seed}.jsonl",
            SessionShape(entries=1500, main_depth=900, tool_result_chars=3000),
            seed=seed,
        )
    assert sum(p.stat().st_size for p in root.glob("*/*.jsonl")) > SCAN_ABOVE
    demo = Session.create("/home/dev/p", root / "--p--")
    demo.append_message(user("where is the quokka"))
    assert main(["search", "quokka", "--all"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(f"{demo.path}:2#{demo.entries[0].id}")
    assert out[-1].startswith("1 hit(s) for 'quokka', as a scan of the files found them")
    assert "the search index is being built" in out[-1]
    with SessionCatalog(build=None) as catalog:  # waits for the builder it started
        for _ in range(600):
            if catalog.search("quokka").source == "index":
                break
            threading.Event().wait(0.2)
    assert main(["search", "quokka", "--all"]) == 0
    ranked = capsys.readouterr().out.splitlines()
    assert ranked[0] == "1 hit(s) for 'quokka'" and ranked[1].endswith(out[0][-40:])
