"""The explorer's fork follows one rule with ``%pi fork`` and the real Pi 1.6.0, and names
the leaf once: the new files' entries, the button's words before a click, the ids it says."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pinb.core import Session
from pinb.views import SessionExplorer
from tests.pi.reference import PiReference
from tests.shells import pi_shell
from tests.views.builders import Demo, frontend_update
from tests.views.test_widgets import action


def _entries(path: Path) -> list[dict[str, Any]]:
    """A session file's entries; a re-created label by what it says (its id is new)."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    out = []
    for raw in lines[1:]:
        if raw["type"] == "label":
            raw = {"type": "label", "targetId": raw["targetId"], "label": raw["label"]}
        out.append(raw)
    return out


def _new_file(folder: Path, before: set[Path]) -> Path:
    made = set(folder.glob("*.jsonl")) - before
    assert len(made) == 1, made
    return made.pop()


@pytest.mark.parametrize("landmark", ["u3", "u2", "a5", "compaction"])
def test_the_explorer_forks_as_pi_fork_does(landmark: str, demo: Demo, comms: list[Any]) -> None:
    """On the same entry the explorer's button and ``%pi fork ID`` write the same entries,
    and the button said which of the two forks it would make before it was pressed."""
    s, ids = demo.session, demo.ids
    folder = s.require_path().parent
    target = ids[landmark]
    user = s[target].role == "user"
    widget = SessionExplorer(s)
    frontend_update(widget, selected_id=target)
    label, tooltip = widget.fork_hint
    assert label == (
        "Fork before this message" if user else "Copy the path to here into a new file"
    )
    assert ("/fork" if user else "/clone") in tooltip
    before = set(folder.glob("*.jsonl"))
    action(widget, action="fork", id=target)
    explorer_file = _new_file(folder, before)
    before.add(explorer_file)
    with pi_shell() as shell:
        shell.run_line_magic("pi", f"open {s.path}")
        shell.run_line_magic("pi", f"fork {target} --stay")
    magic_file = _new_file(folder, before)
    entries = _entries(explorer_file)
    assert entries == _entries(magic_file)
    copied = [e["id"] for e in entries if e["type"] != "label"]
    path = [e.id for e in s.path_to(target) if e.type != "label"]  # labels come after
    # Before the user message (its text given back to edit), or up to and including it.
    assert copied == (path[:-1] if user else path)
    text = s[target].message["content"][0]["text"] if user else ""
    assert widget.editor_text == text and bool(widget.editor_note) == user
    assert (
        f"Forked before the user message {target}" if user else f"Copied the path up to {target}"
    ) in widget.status


def test_the_explorer_forks_as_the_real_pi_does(
    pi16: PiReference, tmp_path: Path, comms: list[Any]
) -> None:
    """A file the real Pi 1.6.0 wrote: the explorer's fork before a user message holds the
    entries Pi's own ``/fork`` copies (``createBranchedSession`` at its parent), and its
    copy at an assistant message those of Pi's ``/clone`` there."""

    def message(role: str, text: str, at: int) -> dict[str, Any]:
        if role == "user":
            return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": at}
        return {
            "role": "assistant", "content": [{"type": "text", "text": text}], "api": "x",
            "provider": "p", "model": "m", "stopReason": "stop", "timestamp": at,
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                      "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                 "cacheWrite": 0, "total": 0}},
        }  # fmt: skip

    texts = [("user", "first"), ("assistant", "one"), ("user", "second"), ("assistant", "two")]
    steps = [
        {"method": "appendMessage", "args": [message(role, text, i + 1)]}
        for i, (role, text) in enumerate(texts)
    ]
    steps.insert(2, {"method": "appendLabelChange", "args": [{"$ref": 1}, "answered"]})
    built = pi16.build(steps, dir=str(tmp_path / "pi"), cwd="/proj")
    original = Path(built["file"])
    session = Session.open(original)
    second_user = [e for e in session.entries if e.role == "user"][1]
    first_answer = next(e.id for e in session.entries if e.role == "assistant")
    # Pi's /fork copies up to the message's parent: here the label Pi appended at the leaf.
    before_user = second_user.parent_id
    assert before_user is not None and session[before_user].type == "label"
    folder = original.parent
    for target, pi_leaf in ((second_user.id, before_user), (first_answer, first_answer)):
        widget = SessionExplorer(Session.open(original))
        before = set(folder.glob("*.jsonl"))
        action(widget, action="fork", id=target)
        mine = _new_file(folder, before)
        pis = pi16.build(
            [{"method": "createBranchedSession", "args": [pi_leaf]}],
            dir=str(tmp_path / f"pi-{target}"),
            cwd="/proj",
            create={"mode": "open", "path": str(original)},
        )
        entries = _entries(mine)
        assert entries == _entries(Path(pis["file"]))
        # The fork ends before the user message; the copy holds the assistant's answer.
        held = [e.get("id") for e in entries]
        assert (target in held) == (target == first_answer) and first_answer in held
        assert {"type": "label", "targetId": first_answer, "label": "answered"} in entries
        assert Session.open(mine).parent_session == str(original)


_LEAF = re.compile(r"\bleaf (?:moved to )?([0-9a-f]{8})\b", re.IGNORECASE)


def _leaves_named(widget: SessionExplorer) -> set[str]:
    """Every id the explorer calls "the leaf": its header, status line and panels."""
    text = " ".join([widget.summary, widget.status, widget.details, widget.context_html])
    return set(_LEAF.findall(re.sub(r"<[^>]+>", " ", text)))


def test_the_explorer_names_one_leaf(demo: Demo, comms: list[Any]) -> None:
    """After continuing at a user message (Pi's /tree: the leaf goes to its parent) the
    header, the status line and the context panel name one leaf, the file's."""
    s, ids = demo.session, demo.ids
    widget = SessionExplorer(s)
    frontend_update(widget, tab="context_html")
    assert _leaves_named(widget) == {ids["a7"]}
    action(widget, action="continue", id=ids["u2"])
    assert s.leaf_id == ids["a2"] == Session.open(s.require_path()).leaf_id
    assert widget.selected_id == ids["u2"]  # still selected, its panels shown
    assert ids["u2"] in widget.details and f"Context from {ids['u2']}" in widget.context_html
    assert widget.status.startswith(f"Leaf moved to {ids['a2']}, before the message {ids['u2']}")
    assert widget.editor_text == "Also run the tests "
    assert _leaves_named(widget) == {ids["a2"]}
    frontend_update(widget, selected_id=ids["a1"])  # the panel of another entry: no "leaf"
    assert f"Context from {ids['a1']}" in widget.context_html
    assert _leaves_named(widget) == {ids["a2"]}
    frontend_update(widget, selected_id=ids["a2"])
    assert f"Context at leaf {ids['a2']}" in widget.context_html
    assert _leaves_named(widget) == {ids["a2"]}
