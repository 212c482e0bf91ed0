"""The link between a chat, a session file and a notebook (``pinb.chat.link``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pinb.chat.link import (
    LINK_FOLDER,
    METADATA_KEY,
    ChatLink,
    ChatLinkError,
    default_chat_path,
    ensure_chat_file,
    kernel_notebook,
    link_chat,
    notebook_link,
    open_link,
    read_link,
    record_path,
)


def test_linking_writes_the_record_and_a_new_chat_with_the_link(tmp_path: Path) -> None:
    chat = tmp_path / "work" / "analysis.chat"
    chat.parent.mkdir()
    session = tmp_path / "sessions" / "s.jsonl"
    link = link_chat(chat, session, notebook=chat.parent / "analysis.ipynb")
    assert record_path(chat) == chat.parent / LINK_FOLDER / "analysis.chat.json"
    record = json.loads(record_path(chat).read_text())
    document = json.loads(chat.read_text())
    # jupyterlab-chat's format: messages, users, attachments, metadata with the chat's id.
    assert set(document) == {"messages", "users", "attachments", "metadata"}
    assert document["metadata"]["id"] and document["metadata"][METADATA_KEY] == record
    assert record == {
        "session": str(session),
        "notebook": "analysis.ipynb",  # relative to the chat: the pair moves together
        "linked_at": link.linked_at,
        "linked_by": "notebook",
    }
    assert read_link(chat) == link


def test_an_existing_chat_is_never_rewritten_and_the_newer_link_wins(tmp_path: Path) -> None:
    chat = tmp_path / "team.chat"
    original = {"messages": [{"id": "m1", "body": "hi"}], "users": {}, "attachments": {}}
    chat.write_text(json.dumps({**original, "metadata": {"id": "c1"}}))
    before = chat.read_bytes()
    first = link_chat(chat, tmp_path / "a.jsonl", linked_by="chat")
    assert chat.read_bytes() == before  # the server may hold it open: only the record moves
    assert read_link(chat) == first
    # The persona copied the first link into the chat's metadata; a notebook links again.
    second = link_chat(chat, tmp_path / "b.jsonl", notebook=tmp_path / "nb.ipynb")
    assert read_link(chat, first.to_metadata()) == second  # the record is newer
    assert second.linked_at > first.linked_at
    # A chat copied elsewhere without its record still carries its own link.
    record_path(chat).unlink()
    assert read_link(chat, second.to_metadata()) == second
    assert read_link(chat) is None  # the file itself never got it


def test_ensure_chat_file_creates_only(tmp_path: Path) -> None:
    chat = tmp_path / "new.chat"
    assert ensure_chat_file(chat) is True
    made = chat.read_text()
    assert ensure_chat_file(chat) is False and chat.read_text() == made


@pytest.mark.parametrize(
    "data",
    [None, {}, {"session": 3}, ["session"], "a string", {"notebook": "x.ipynb"}],
)
def test_odd_metadata_is_no_link(tmp_path: Path, data: object) -> None:
    assert ChatLink.from_metadata(tmp_path / "c.chat", data) is None
    (tmp_path / "c.chat").write_text("{not json")
    assert read_link(tmp_path / "c.chat", data) is None


def test_the_notebook_a_kernel_runs_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert kernel_notebook({}) is None
    assert kernel_notebook({"__session__": "/w/analysis.ipynb"}) == Path("/w/analysis.ipynb")
    assert kernel_notebook({"__session__": "/w/console-1"}) is None  # a console, not a notebook
    monkeypatch.setenv("JPY_SESSION_NAME", os.fspath(tmp_path / "n.ipynb"))
    assert kernel_notebook(None) == tmp_path / "n.ipynb"


def test_the_default_chat_is_named_after_its_session_and_never_another_chats(
    tmp_path: Path,
) -> None:
    session = tmp_path / "sessions" / "2026-01-01T00-00-00-000Z_01a2502e-9ee5-74df.jsonl"
    uid = "01a2502e-9ee5-74df"
    first = default_chat_path(tmp_path, session, uid)
    assert first == tmp_path / "session-01a2502e.chat"
    assert default_chat_path(tmp_path, session, uid, "Fix the parser: v2!") == (
        tmp_path / "fix-the-parser-v2.chat"
    )
    # A chat of that name that is no chat of this session is left alone: the next name.
    ensure_chat_file(first)
    second = default_chat_path(tmp_path, session, uid)
    assert second == tmp_path / "session-01a2502e-2.chat"
    other = tmp_path / "sessions" / "2026-01-01T00-00-09-000Z_01a2502e-ffff.jsonl"
    link_chat(second, other)
    assert default_chat_path(tmp_path, session, uid) == tmp_path / "session-01a2502e-3.chat"
    # The chat already linked to this session is this session's chat.
    link_chat(tmp_path / "session-01a2502e-3.chat", session)
    assert default_chat_path(tmp_path, session, uid) == tmp_path / "session-01a2502e-3.chat"
    assert json.loads(first.read_text())["messages"] == []  # untouched


def test_the_notebook_keeps_the_last_link_it_showed(tmp_path: Path) -> None:
    def output(chat: str) -> dict[str, object]:
        data = {"text/plain": "linked", "application/vnd.pinb.chat-link+json": {"chat": chat}}
        return {"output_type": "execute_result", "data": data, "metadata": {}}

    cells = [
        {"cell_type": "markdown", "source": "x"},
        {"cell_type": "code", "outputs": [output("/w/first.chat")]},
        {"cell_type": "code", "outputs": [{"output_type": "stream", "text": "…"}]},
        {"cell_type": "code", "outputs": [output("/w/second.chat")]},
    ]
    notebook = tmp_path / "n.ipynb"
    notebook.write_text(json.dumps({"cells": cells}))
    assert notebook_link(notebook) == {"chat": "/w/second.chat"}
    notebook.write_text("not a notebook")
    assert notebook_link(notebook) is None
    assert notebook_link(tmp_path / "missing.ipynb") is None


def test_a_relative_link_is_taken_from_the_chats_folder_and_kept_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = tmp_path / "work" / "team.chat"
    elsewhere = tmp_path / "server-cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the Jupyter server's working folder: never the base
    data = {"session": "sessions/s.jsonl", "linked_at": "2026-01-01T00:00:00.000000+00:00"}
    link = ChatLink.from_metadata(chat, data)
    assert link is not None
    assert link.session == tmp_path / "work" / "sessions" / "s.jsonl"
    assert link.to_metadata()["session"] == "sessions/s.jsonl"  # written back as it was
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    home = ChatLink.from_metadata(chat, {"session": "~/s.jsonl"})
    assert home is not None and home.session == tmp_path / "home" / "s.jsonl"
    assert home.shown == "~/s.jsonl"


def test_a_link_that_names_no_session_is_one_line_naming_it_as_written(tmp_path: Path) -> None:
    chat = tmp_path / "team.chat"
    (tmp_path / "folder").mkdir()
    cases = {
        "folder": "is a folder, not a session file",
        "gone.jsonl": "no such file",
        "two\nlines.jsonl": "no such file",  # shown on one line
    }
    for named, reason in cases.items():
        link = ChatLink.from_metadata(chat, {"session": named, "notebook": "nb.ipynb"})
        assert link is not None
        with pytest.raises(ChatLinkError) as refused:
            open_link(link)
        shown = named.replace("\n", "\\n")
        assert str(refused.value) == (
            f"this chat's link names {shown}: {reason}; `%pi chat` in nb.ipynb links it again "
            "(or `/session open PATH` or `/session new` here)"
        )
        assert refused.value.reason == reason and refused.value.link is link


def test_the_chat_is_named_as_the_server_that_started_the_kernel_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``server_path`` reads the server's own ``jpserver-<pid>.json``: the chat relative to
    its root, ``None`` outside it or for a kernel no server started; the view's link opens
    that path in the chat side panel, the name escaped."""
    from pinb.chat.link import ChatLink, server_path
    from pinb.chat.linkview import ChatLinkView
    from pinb.render.html import escape

    runtime = tmp_path / "runtime"
    runtime.mkdir()
    root = tmp_path / "root"
    chat = root / "work" / 'a"<b>.chat'
    chat.parent.mkdir(parents=True)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv("JPY_PARENT_PID", raising=False)
    assert server_path(chat) is None  # no server started this kernel
    monkeypatch.setenv("JPY_PARENT_PID", "4242")
    assert server_path(chat) is None  # no such server's file
    (runtime / "jpserver-4242.json").write_text(json.dumps({"root_dir": str(root)}))
    assert server_path(chat) == 'work/a"<b>.chat'
    assert server_path(tmp_path / "elsewhere.chat") is None
    session = tmp_path / "s.jsonl"
    session.write_text("")
    html = ChatLinkView(ChatLink(chat=chat, session=session))._repr_mimebundle_()[0]["text/html"]
    assert 'data-commandlinker-command="jupyterlab-chat:open"' in html
    args = json.dumps({"filepath": 'work/a"<b>.chat', "inSidePanel": True})
    assert f'data-commandlinker-args="{escape(args)}"' in html
    assert "<b>" not in html
