"""SessionExplorer driven as the frontend would drive it, through a recording comm."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from pinb.core import ExtractiveSummarizer, Session
from pinb.errors import EntryNotFoundError
from pinb.views import SessionExplorer
from tests.views.builders import Demo, assistant, frontend_update, long_chain_session, user


def _index(explorer: SessionExplorer, value: tuple[str, str]) -> int:
    return [v for _, v in explorer.tree.options].index(value)


def test_explorer_opens_on_the_leaf(demo: Demo, comms: list[Any]) -> None:
    explorer = SessionExplorer(demo.session)
    assert comms, "widgets opened comms to the (dummy) frontend"
    assert explorer.selected_id == demo.ids["a7"]
    assert explorer.tree.value == ("entry", demo.ids["a7"])
    labels = [label for label, _ in explorer.tree.options]
    assert len(labels) == len(demo.session.entries) - 2  # no `leaf` records
    leaf_line = labels[_index(explorer, ("entry", demo.ids["a7"]))]
    assert leaf_line.lstrip().startswith("● assistant") and leaf_line.endswith("← leaf")
    assert any("[alternative]" in label for label in labels)
    assert any(label.lstrip().startswith("◆ compaction") for label in labels)
    assert any("◇ branch_summary" in label for label in labels)
    assert any(label.startswith("├ ") for label in labels)  # branches are indented
    assert demo.ids["a7"] in explorer.details.value
    assert "What the model sees" in explorer.context_panel.value
    assert explorer.tokens_panel.value == "" and explorer.picture.value == ""  # lazy tabs
    assert "Demo session" in explorer.header.value


def test_clicking_a_node_shows_its_details(demo: Demo, comms: list[Any]) -> None:
    explorer = SessionExplorer(demo.session)
    target = demo.ids["a1"]
    sent_before = sum(len(c.messages) for c in comms)
    frontend_update(explorer.tree, index=_index(explorer, ("entry", target)))
    assert explorer.selected_id == target
    assert target in explorer.details.value and "src/config.py" in explorer.details.value
    assert sum(len(c.messages) for c in comms) > sent_before  # details synced to the browser
    explorer.tabs.selected_index = 2
    assert "<svg" in explorer.picture.value and 'stroke="#fb8500"' in explorer.picture.value
    explorer.tabs.selected_index = 1
    assert "By role" in explorer.tokens_panel.value


def test_continue_from_here_moves_the_leaf_and_updates_panels(demo: Demo, comms: list[Any]) -> None:
    s = demo.session
    explorer = SessionExplorer(s)
    before = explorer.context_panel.value
    count = len(s.entries)
    explorer.select(demo.ids["a4"])
    explorer.continue_button.click()
    assert s.leaf_id == demo.ids["a4"]
    assert len(s.entries) == count + 1 and s.entries[-1].is_navigation  # persisted for Pi
    assert explorer.context_panel.value != before
    assert "All tests pass" in explorer.context_panel.value
    assert f"Leaf moved to {demo.ids['a4']}" in explorer.status.value
    assert Session.open(s.path).leaf_id == demo.ids["a4"]  # type: ignore[arg-type]


def test_summary_needs_a_summarizer(demo: Demo, comms: list[Any]) -> None:
    s = demo.session
    explorer = SessionExplorer(s)
    explorer.select(demo.ids["a4"])
    explorer.summary_button.click()
    assert "needs a summarizer" in explorer.status.value
    assert s.leaf_id == demo.ids["a7"]


def test_summary_with_pinb_navigation(demo: Demo, comms: list[Any]) -> None:
    s = demo.session
    explorer = SessionExplorer(s, summarizer=ExtractiveSummarizer())
    explorer.select(demo.ids["a4"])
    explorer.summary_button.click()
    leaf = s.leaf
    assert leaf is not None and leaf.type == "branch_summary", explorer.status.value
    assert leaf.parent_id == demo.ids["a4"]
    assert "with a branch summary" in explorer.status.value
    assert "branch_summary" in explorer.context_panel.value


def test_navigate_callable_is_used_for_both_continue_actions(demo: Demo, comms: list[Any]) -> None:
    calls: list[tuple[str, bool]] = []

    def navigate(session: Session, target: str, summarize: bool) -> Any:
        calls.append((target, summarize))
        if summarize:
            session.branch_with_summary(target, "summary of the branch left")
        else:
            session.branch(target)
        return type("Report", (), {"editor_text": "edit me"})()

    s = demo.session
    explorer = SessionExplorer(s, navigate=navigate)
    explorer.select(demo.ids["a4"])
    explorer.summary_button.click()
    assert calls == [(demo.ids["a4"], True)]
    assert s.leaf is not None and s.leaf.type == "branch_summary"
    assert "with a branch summary" in explorer.status.value
    assert "summary of the branch left" in explorer.context_panel.value
    explorer.select(demo.ids["a2"])
    explorer.continue_button.click()
    assert calls[-1] == (demo.ids["a2"], False)
    assert "edit me" in explorer.status.value


def test_label_and_fork_actions(demo: Demo, comms: list[Any]) -> None:
    s = demo.session
    forks: list[str] = []

    def fork(session: Session, entry_id: str) -> Any:
        forks.append(entry_id)
        return type("Forked", (), {"path": "/sessions/new.jsonl"})()

    explorer = SessionExplorer(s)
    explorer.select(demo.ids["u2"])
    explorer.label_text.value = "first try"
    explorer.label_button.click()
    assert s.label(demo.ids["u2"]) == "first try"
    assert any("[first try]" in label for label, _ in explorer.tree.options)
    assert explorer.selected_id == demo.ids["u2"]
    explorer.set_label("")
    assert s.label(demo.ids["u2"]) is None and "cleared" in explorer.status.value
    explorer.fork_button.click()  # default: the path up to u2 copied into a new file
    copies = [p for p in s.path.parent.glob("*.jsonl") if p != s.path]  # type: ignore[union-attr]
    assert len(copies) == 1
    copy = Session.open(copies[0])
    assert copy.leaf_id == demo.ids["u2"] and copy.parent_session == str(s.path)
    assert str(copies[0]) in explorer.status.value
    explorer.fork_callable = fork
    explorer.fork()
    assert forks == [demo.ids["u2"]] and "/sessions/new.jsonl" in explorer.status.value


def test_errors_are_shown_not_raised(demo: Demo, comms: list[Any]) -> None:
    def failing(session: Session, target: str, summarize: bool) -> Any:
        raise EntryNotFoundError("gone")

    explorer = SessionExplorer(demo.session, navigate=failing)
    explorer.select(demo.ids["u2"])
    explorer.continue_here()
    assert "EntryNotFoundError" in explorer.status.value
    explorer.selected_id = None
    explorer.continue_here()
    assert "Select an entry" in explorer.status.value
    with pytest.raises(KeyError):
        explorer.select("nope")


def test_refresh_sees_what_another_writer_appended(demo: Demo, comms: list[Any]) -> None:
    s = demo.session
    explorer = SessionExplorer(s)
    other = Session.open(s.path)  # type: ignore[arg-type]  # e.g. Pi itself
    other.append_message(user("written by someone else"))
    other.append_message(assistant("and answered there"))
    assert not any("someone else" in label for label, _ in explorer.tree.options)
    new = explorer.refresh()
    assert len(new) == 2
    assert any("someone else" in label for label, _ in explorer.tree.options)
    assert "and answered there" in explorer.context_panel.value  # the leaf followed
    assert explorer.refresh() == []
    s.append_message(user("typed in this kernel"))  # a %%pi cell in the same process
    explorer.refresh()
    assert any("typed in this kernel" in label for label, _ in explorer.tree.options)
    explorer.refresh_button.click()
    assert f"{len(s.entries):,} entries" in explorer.header.value


def test_polling_refreshes_on_the_event_loop(demo: Demo, comms: list[Any]) -> None:
    s = demo.session
    explorer = SessionExplorer(s)
    with pytest.raises(RuntimeError, match="event loop"):
        explorer.start_polling(0.05)

    async def scenario() -> None:
        explorer.start_polling(0.02)
        assert explorer.polling
        Session.open(s.path).append_message(user("polled in"))  # type: ignore[arg-type]
        for _ in range(100):
            await asyncio.sleep(0.02)
            if any("polled in" in label for label, _ in explorer.tree.options):
                break
        explorer.close()
        assert not explorer.polling

    asyncio.run(scenario())
    assert any("polled in" in label for label, _ in explorer.tree.options)


def test_large_trees_stay_small_in_the_list(comms: list[Any]) -> None:
    s = long_chain_session(10_000, branch_every=1000)
    start = time.perf_counter()
    explorer = SessionExplorer(s)
    elapsed = time.perf_counter() - start
    options = explorer.tree.options
    assert len(options) < 150 and elapsed < 5
    chain = next(value for label, value in options if value[0] == "chain")
    frontend_update(explorer.tree, index=_index(explorer, chain))  # "click" the chain
    assert len(explorer.tree.options) > len(options)
    assert explorer.tree.value == ("entry", chain[1]) and explorer.selected_id == chain[1]
    deep = s.entries[5555].id
    explorer.select(deep)  # an entry inside a collapsed chain opens it
    assert explorer.tree.value == ("entry", deep)


def test_a_replaced_file_is_reported_in_the_panel(demo: Demo, comms: list[Any]) -> None:
    s = demo.session
    explorer = SessionExplorer(s)
    path = s.path
    assert path is not None
    copy = path.with_suffix(".tmp")
    copy.write_bytes(path.read_bytes())
    copy.replace(path)  # another program rewrote the file
    assert explorer.refresh() == []
    assert "replaced" in explorer.status.value
