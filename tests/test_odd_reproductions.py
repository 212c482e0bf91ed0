"""The seven reproductions of issue 23, each as it was reported, each now holding.

1. Lines Pi reads and pinb skipped (deep nesting, huge integers) and an upgrade that
   dropped them: ``tests/core/test_odd_json_differential.py`` (against the real Pi).
2. Files nested 991–1,024 deep (and deeper) crashed every command.
3. A ``system`` message whose tool name is not a string broke every context.
4. An entry id holding ``\\r\\n`` or U+0085 broke the tree's PNG.
5. ``pinb rm ../FILE`` from a subfolder moved the file into the agent folder.
6. A forged removal note made ``pinb restore`` write anywhere.
7. A memory database with flipped bits failed every memory command and every ``%%pi``;
   a read-only one could not even be listed.
"""

from __future__ import annotations

import io
import json
import logging
import random
import sqlite3
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from pinb.cli import main
from pinb.core import Session
from pinb.core.context.build import current_system_message
from pinb.core.file.paths import sessions_root
from pinb.core.js.wire import dumps, loads
from pinb.memory import MemoryStore, memory_prompt_section
from pinb.memory.records import default_db_path
from pinb.testing.conformance import answer
from tests.fuzz_ops import OPERATIONS, run_all
from tests.pi.reference import PiReference

HEADER = {"type": "session", "version": 3, "id": "odd-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"}  # fmt: skip


def _message(entry_id: str, parent: str | None, message: dict[str, Any], second: int) -> str:
    entry = {"type": "message", "id": entry_id, "parentId": parent,
             "timestamp": f"2025-01-01T00:00:{second:02d}.000Z", "message": message}  # fmt: skip
    return json.dumps(entry)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# -- 2 ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
@pytest.mark.parametrize("depth", [995, 1024, 1500, 20_000])
def test_deeply_nested_values_break_nothing(depth: int, tmp_path: Path) -> None:
    deep = "[" * depth + '"x"' + "]" * depth
    obj = '{"a":' * depth + "1" + "}" * depth
    lines = [
        json.dumps(HEADER),
        _message("u1", None, {"role": "user", "content": "hi", "timestamp": 1}, 1),
        # Tool arguments, content, details, a label and a name, all nested `depth` deep.
        '{"type":"message","id":"a1","parentId":"u1","timestamp":"2025-01-01T00:00:02.000Z",'
        '"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"read",'
        f'"arguments":{{"path":{deep}}}}}],"usage":{{"input":1,"output":1,"totalTokens":2}},'
        '"stopReason":"toolUse","timestamp":2}}',
        '{"type":"message","id":"r1","parentId":"a1","timestamp":"2025-01-01T00:00:03.000Z",'
        '"message":{"role":"toolResult","toolCallId":"c","toolName":"read","content":'
        f'[{{"type":"text","text":"out"}}],"details":{obj},"isError":false,"timestamp":3}}}}',
        f'{{"type":"label","id":"l1","parentId":"r1","timestamp":"2025-01-01T00:00:04.000Z","targetId":"r1","label":{deep}}}',
        f'{{"type":"session_info","id":"n1","parentId":"l1","timestamp":"2025-01-01T00:00:05.000Z","name":{deep}}}',
        _message("u2", "n1", {"role": "user", "content": "x", "timestamp": 6}, 6)[:-2]
        + f',"extra":{obj}}}}}',
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    session = Session.open(path)
    assert len(session.build_context().messages) == 4
    # The label and the name are lists, not text: read as Pi reads them, and said once.
    assert [(p.kind, p.line, p.message.split(";")[0]) for p in session.problems] == [
        ("odd-field", 5, "label is a list, not text"),
        ("odd-field", 6, "name is a list, not text"),
    ]
    operations = OPERATIONS if depth <= 1500 else {k: OPERATIONS[k] for k in ("core", "views")}
    failures = run_all([path], operations)
    assert not failures, "\n".join(map(str, failures))
    code, out, _ = _run("tree", str(path))
    assert code == 0 and "[[[[" in out and "…" in out  # shown cut, with a visible ellipsis


# -- 3 ------------------------------------------------------------------------------------


def test_a_tool_name_that_is_not_text_builds_a_context(pi16: PiReference, tmp_path: Path) -> None:
    system = {"role": "system", "content": "Base.", "timestamp": 1,
              "toolsAdded": [{"name": {}}, {"name": {}}, {"name": [1]}, {"name": True},
                             {"name": 1}, {"name": "read", "description": "r"}],
              "toolsRemoved": [{"name": {}}, {"name": 1}]}  # fmt: skip
    later = {"role": "system", "content": "", "timestamp": 3, "toolsRemoved": [{"name": 1}]}
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join([json.dumps(HEADER), _message("s1", None, system, 1),
                   _message("u1", "s1", {"role": "user", "content": "hi", "timestamp": 2}, 2),
                   _message("s2", "u1", later, 3)])
        + "\n"
    )  # fmt: skip
    head = current_system_message(Session.open(path).build_context().messages)
    assert head is not None
    # As Pi's Map keeps them: objects by identity (both {} stay, no {} removes one), true
    # is not 1, removals before additions within a message; the later message removes 1.
    assert head["toolsAdded"] == [{"name": {}}, {"name": {}}, {"name": [1]}, {"name": True},
                                  {"name": "read", "description": "r"}]  # fmt: skip
    # Pi counts the merged system message in its compaction plan: the same numbers.
    query = {"target": "pi-1.6.0", "leaves": [{"key": "@default"}], "plans": ["tiny"],
             "planPresets": {"tiny": {"reserve": 100, "keep": 150, "window": 1000}}}  # fmt: skip
    pi = loads(pi16.answer_text(query, path))["@default"]
    ours = loads(dumps(answer(query, path)))["@default"]
    assert ours == pi
    for command in (["context"], ["tokens"], ["tree"], ["compact", "--plan"]):
        code, _, err = _run(command[0], str(path), *command[1:])
        assert code == 0, err


# -- 4 ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")
@pytest.mark.parametrize("odd", ["ab\r\ncd", "ab\u0085cd", "ab\u2028cd", "a\x00\x1b[31m", "\ud83d"])
def test_every_picture_draws_an_odd_id(odd: str, tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from pinb.render import build_graph, draw_tree, row_layout, tree_picture_svg, tree_text
    from pinb.render.tree.raster import tree_png_pillow
    from pinb.views import TreeView

    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join([json.dumps(HEADER),
                   _message(odd, None, {"role": odd, "content": odd, "timestamp": 1}, 1),
                   json.dumps({"type": "label", "id": "l1", "parentId": odd, "targetId": odd,
                               "label": odd, "timestamp": "2025-01-01T00:00:02.000Z"})])
        + "\n"
    )  # fmt: skip
    session = Session.open(path)
    layout = row_layout(build_graph(session), collapse=False)
    escaped = odd.encode("unicode_escape").decode("ascii")[:7]  # the id column shows 8
    text = tree_text(layout)
    svg = tree_picture_svg(layout)
    assert escaped in text and escaped in svg
    assert not any(c in text for c in "\r\x85\u2028\x00\x1b")
    png, width, height = tree_png_pillow(layout, scale=1.0)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and width > 0 and height > 0
    figure = Figure()
    draw_tree(layout, figure.add_subplot())
    figure.savefig(io.BytesIO(), format="png")
    assert TreeView(session).to_png()[:8] == b"\x89PNG\r\n\x1a\n"  # what untrusted notebooks show


# -- 5 and 6 ------------------------------------------------------------------------------


def _session_file(folder: Path, name: str = "s.jsonl") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(HEADER) + "\n" + _message("u1", None, {"role": "user", "content": "hi", "timestamp": 1}, 1) + "\n")  # fmt: skip
    return path


def test_rm_of_a_relative_path_from_a_subfolder(monkeypatch: pytest.MonkeyPatch) -> None:
    project = sessions_root() / "--home-dev-proj--"
    path = _session_file(project)
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")
    code, _out, err = _run("rm", "../s.jsonl")
    assert code == 0, err
    assert not path.exists()
    agent = sessions_root().parent
    assert not (agent / "s.jsonl").exists()  # it used to land in the agent folder itself
    trashed = agent / "trash" / "--home-dev-proj--" / "s.jsonl"
    assert trashed.is_file()
    note = json.loads((trashed.parent / "s.jsonl.removed.json").read_text())
    assert note["originalPath"] == str(path)
    code, _, err = _run("restore", "../s.jsonl")
    assert code == 0, err
    assert path.is_file() and not trashed.exists()


def test_restore_refuses_a_forged_note(tmp_path: Path) -> None:
    trash = sessions_root().parent / "trash" / "--x--"
    victim = tmp_path / "outside" / "owned.jsonl"
    session = _session_file(trash, "forged.jsonl")
    note = {"originalPath": str(victim), "removedAt": "2026-01-01T00:00:00Z",
            "parentSession": None, "relinked": [str(tmp_path / "other.jsonl")]}  # fmt: skip
    (trash / "forged.jsonl.removed.json").write_text(json.dumps(note))
    for name in ("forged", str(victim)):
        code, _, err = _run("restore", name)
        assert code == 1
        assert "outside the sessions folder" in err and str(sessions_root()) in err
        assert "internal error" not in err
    assert not victim.exists() and not victim.parent.exists()
    assert session.is_file()  # left in the trash, untouched
    # A relative or dot-dot path in a note is no way around it.
    note["originalPath"] = str(sessions_root() / ".." / ".." / "escaped.jsonl")
    (trash / "forged.jsonl.removed.json").write_text(json.dumps(note))
    code, _, err = _run("restore", "forged")
    assert code == 1 and "outside the sessions folder" in err
    assert not (sessions_root().parent.parent / "escaped.jsonl").exists()


# -- 7 ------------------------------------------------------------------------------------

MEMORY_COMMANDS = [
    ["memory", "list"],
    ["memory", "list", "--all-projects"],
    ["memory", "recall", "tox"],
    ["memory", "save", "hello"],
    ["memory", "forget", "1", "--reason", "x"],
    ["memory", "edit", "1", "--text", "y"],
    ["memory", "promote", "1"],
    ["memory", "inject"],
    ["memory", "inject", "preview"],
]


def _filled_store() -> Path:
    store = MemoryStore()
    for number in range(3):
        store.save(f"We deploy with tox, note {number} é")
    path = default_db_path()
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "text":  # one UTF-8 character of every note made invalid
        at = data.find("é".encode())
        while at != -1:
            data[at] = 0xFF
            at = data.find("é".encode(), at + 1)
    else:  # 200 bits flipped at random places: SQLite's own message is no longer UTF-8
        rng = random.Random(3)
        for _ in range(200):
            data[rng.randrange(100, len(data))] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["text", "bits"])
def test_a_damaged_memory_database_is_one_clear_message(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the notes and the commands are of one project
    _damage(_filled_store(), how)
    for argv in MEMORY_COMMANDS:
        code, _, err = _run(*argv)
        assert "internal error" not in err and "Traceback" not in err, (argv, err)
        if code:
            assert code == 1, (argv, err)
            assert len(err.strip().splitlines()) == 1, err
            assert "damaged" in err or "not a pinb memory file" in err, err
    # The memory step of %%pi warns in one line and lets the run go on.
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logging.getLogger("pinb.memory").addHandler(handler)
    try:
        assert memory_prompt_section(force=True) is None
    finally:
        logging.getLogger("pinb.memory").removeHandler(handler)
    assert len(records) == 1 and "not injected" in records[0].getMessage()


def test_pi_cells_run_with_a_damaged_memory_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    _damage(_filled_store(), "bits")
    monkeypatch.chdir(tmp_path)
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "pinb")
    magics = shell.magics_manager.registry["PiMagics"]
    magics.session = None
    magics._model = None
    try:
        with capture_output() as captured:
            reply = shell.run_cell_magic("pi", "--model offline --no-tools", "hello there")
        assert reply is not None and reply.text.startswith("[offline demo model")
        assert "Traceback" not in captured.stderr
    finally:
        magics.session = None
        magics._model = None


def test_a_read_only_memory_database_lists_and_recalls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = _filled_store()
    path.chmod(0o444)
    try:
        code, out, err = _run("memory", "list")
        assert code == 0, err
        assert out.count("We deploy with tox") == 3
        code, out, err = _run("memory", "recall", "tox")
        assert code == 0 and "note" in out, err
        code, _, err = _run("memory", "save", "more")
        assert code == 1 and "read-only" in err and "internal error" not in err
        assert MemoryStore().read_only
        assert len(MemoryStore().records(all_projects=True)) == 3
    finally:
        path.chmod(0o644)
