"""Comparing two branches: the common ancestor in one file and across forks, the tool diff,
files, usage, endings, the view and the degenerate cases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pinb.analysis import compare
from pinb.analysis.compare import BranchComparison, FailedToolCall, compare_branches
from pinb.core import Session, estimate_tokens
from pinb.core.context.accounting import context_usage
from pinb.core.forks import clone_session, fork_session
from pinb.errors import EntryNotFoundError
from pinb.testing.story import EXTRA_TASKS, story_tasks, write_story_session
from tests.samples import READABLE_CASES, TREES

from .builders import SCRIPT, assistant, tool_result, user
from .safe_html import visible_text

ROOT = Path(__file__).resolve().parents[2]


def story(folder: Path) -> tuple[Session, str]:
    """The demo story (a wrong turn and compactions) and the wrong turn's leaf."""
    session = write_story_session(
        folder, seed=3, context_window=5000, tasks=story_tasks(extras=EXTRA_TASKS)
    )
    summary = next(e for e in session.entries if e.type == "branch_summary")
    return session, str(summary.raw["fromId"])


def calls(
    *pairs: tuple[str, dict[str, Any]], prefix: str
) -> tuple[tuple[str, str, dict[str, Any]], ...]:
    return tuple((f"{prefix}{i}", name, args) for i, (name, args) in enumerate(pairs))


def two_attempts(folder: Path) -> tuple[Session, dict[str, str]]:
    """A prompt answered twice: branch a reads, edits, writes, runs the tests and finishes;
    branch b reads, greps, edits, reads the README, runs the tests (which fail), and its
    last reply is an error."""
    s = Session.create("/home/dev/demo", folder)
    ids = {"root": s.append_message(user("fix the parser")).id}
    a_calls = calls(
        ("read", {"path": "a.py"}),
        ("edit", {"path": "a.py", "oldText": "x", "newText": "y"}),
        ("write", {"path": "notes.md", "content": "n"}),
        ("bash", {"command": "pytest"}),
        prefix="ca",
    )
    s.append_message(assistant("on it", calls=a_calls, total=1000, cost=0.01))
    for call_id, name, _ in a_calls:
        s.append_message(tool_result(call_id, name, "ok"))
    ids["a"] = s.append_message(assistant("done: all green", total=1500, cost=0.02)).id

    s.branch_with_summary(
        ids["root"],
        "tried a first fix",
        {"readFiles": ["docs/x.md"], "modifiedFiles": ["src/y.py"]},
    )
    b_calls = calls(
        ("read", {"path": "a.py"}),
        ("grep", {"pattern": "parse", "path": "."}),
        ("edit", {"path": "a.py", "oldText": "x", "newText": "z"}),
        ("read", {"path": "README.md"}),
        ("bash", {"command": "pytest"}),
        prefix="cb",
    )
    s.append_message(assistant("again", calls=b_calls, total=2000, cost=0.04))
    for call_id, name, _ in b_calls:
        failed = name == "bash"
        s.append_message(tool_result(call_id, name, "1 failed" if failed else "ok", error=failed))
    last = assistant("", total=0, stop="error")
    last["errorMessage"] = "overloaded"
    ids["b"] = s.append_message(last).id
    return s, ids


# -- the common ancestor ---------------------------------------------------------------------


def test_in_file_the_branches_part_where_the_story_went_back(tmp_path: Path) -> None:
    session, wrong = story(tmp_path)
    summary = next(e for e in session.entries if e.type == "branch_summary")
    c = session.compare(wrong, session.leaf_id)
    assert isinstance(c, BranchComparison)
    assert c.relation == "same session"
    # The story navigated back to the summary's parent before trying again.
    assert c.ancestor is not None and c.ancestor.id == summary.parent_id
    path_a = session.path_to(wrong)
    at = [e.id for e in path_a].index(summary.parent_id)
    assert [e.id for e in c.a.entries] == [e.id for e in path_a[at + 1 :]]
    assert c.b.entries[0] is summary
    assert c.shared_entries == at + 1
    assert c.a.leaf_id == wrong and c.b.leaf_id == session.leaf_id
    # What each branch adds, by the same estimate as everywhere else.
    added = sum(estimate_tokens(e.message) for e in c.a.entries if e.message)
    assert c.a.estimated_tokens == added
    assert c.b.context == context_usage(session.build_context(session.leaf_id))
    assert c.a.ending is not None and c.a.ending.entry_id == wrong


def test_across_a_clone_the_shared_run_of_ids_gives_the_same_ancestor(tmp_path: Path) -> None:
    session, wrong = story(tmp_path / "main")
    in_file = session.compare(session.leaf_id, wrong)
    clone = clone_session(session, wrong, sessions_dir=tmp_path / "forks")
    extra = clone.append_message(user("one more thing on this branch")).id
    assert clone.parent_session == str(session.path)

    across = session.compare(session.leaf_id, other=clone.path)
    assert across.relation == "b forked from a"
    assert across.ancestor_id == in_file.ancestor_id
    assert [e.id for e in across.a.entries] == [e.id for e in in_file.a.entries]
    assert [e.id for e in across.b.entries] == [e.id for e in in_file.b.entries] + [extra]
    assert across.b.session_path == str(clone.path)

    back = clone.compare(other=session, b=session.leaf_id)
    assert back.relation == "a forked from b"
    assert back.ancestor_id == in_file.ancestor_id


def test_a_fork_from_a_user_message_parts_at_that_messages_parent(tmp_path: Path) -> None:
    s, ids = two_attempts(tmp_path / "main")
    fork, text = fork_session(s, ids["root"], sessions_dir=tmp_path / "forks")
    assert text == "fix the parser" and not fork.entries  # the first message: an empty fork
    second = s.append_message(user("and now the tests"))
    s.append_message(assistant("on it", total=100))
    fork, _ = fork_session(s, second.id, sessions_dir=tmp_path / "forks")
    fork.append_message(user("and now the docs"))
    fork.append_message(assistant("docs done", total=100))
    c = compare_branches(s, other=fork)
    assert c.relation == "b forked from a"
    assert c.ancestor_id == second.parent_id == ids["b"]
    assert c.a.roles == {"user": 1, "assistant": 1}
    assert c.b.roles == {"user": 1, "assistant": 1}
    assert c.b.ending is not None and c.b.ending.text == "docs done"


def test_labels_dropped_by_a_fork_do_not_end_the_shared_run(tmp_path: Path) -> None:
    s = Session.create("/home/dev/demo", tmp_path / "main")
    first = s.append_message(user("start")).id
    s.append_message(assistant("ok", total=10))
    s.set_label(first, "start here")
    s.append_message(user("go on"))
    end = s.append_message(assistant("went on", total=20)).id
    clone = s.clone(sessions_dir=tmp_path / "forks")
    # Pi re-chains the copy around the dropped label and writes a new label at the end.
    assert [e.type for e in clone.entries][-1] == "label"
    clone.append_message(user("and then"))
    clone.append_message(assistant("and then some", total=30))
    c = s.compare(end, other=clone)
    assert c.ancestor_id == end
    assert c.a.entries == ()
    assert c.b.roles == {"user": 1, "assistant": 1}
    assert c.summary.startswith("a is an ancestor of b")


def test_sibling_forks_and_a_fork_of_a_fork_are_related_through_their_headers(
    tmp_path: Path,
) -> None:
    s, ids = two_attempts(tmp_path / "main")
    first = s.clone(ids["a"], sessions_dir=tmp_path / "forks")
    second = s.clone(ids["b"], sessions_dir=tmp_path / "forks")
    siblings = first.compare(other=second)
    assert siblings.relation == "forks of one session"
    assert siblings.ancestor_id == ids["root"]
    grandchild = first.clone(sessions_dir=tmp_path / "forks2")
    grandchild.append_message(user("a third try"))
    c = s.compare(ids["a"], other=grandchild)
    assert c.relation == "b forked from a"
    assert c.ancestor_id == ids["a"] and c.b.roles == {"user": 1}


def test_files_without_a_header_link_compare_as_whole_paths(tmp_path: Path) -> None:
    one = Session.create("/p", tmp_path / "one")
    one.append_message(user("a"))
    one.append_message(assistant("b", total=5))
    two = Session.create("/p", tmp_path / "two")
    two.append_message(user("c"))
    c = one.compare(other=two)
    assert c.relation == "no parentSession link"
    assert c.ancestor is None and c.shared_entries == 0
    assert len(c.a.entries) == 2 and len(c.b.entries) == 1
    assert "share no entry" in c.summary


# -- what each branch did ----------------------------------------------------------------------


def test_tool_calls_diff_as_equal_insert_delete_and_replace(tmp_path: Path) -> None:
    s, ids = two_attempts(tmp_path)
    c = s.compare(ids["a"], ids["b"])
    assert c.ancestor_id == ids["root"]
    steps = [
        (op.tag, [(t.name, t.key) for t in op.a], [(t.name, t.key) for t in op.b])
        for op in c.tool_diff
    ]
    assert steps == [
        ("equal", [("read", "a.py")], [("read", "a.py")]),
        ("insert", [], [("grep", "parse")]),
        ("equal", [("edit", "a.py")], [("edit", "a.py")]),
        ("replace", [("write", "notes.md")], [("read", "README.md")]),
        ("equal", [("bash", "pytest")], [("bash", "pytest")]),
    ]
    # The failed test run is flagged on b's call and listed with b's errors.
    assert [t.is_error for t in c.b.tool_calls] == [False, False, False, False, True]
    assert [(e.tool, e.preview) for e in c.b.tool_errors] == [("bash", "bash (error): 1 failed")]
    assert c.a.tool_errors == ()


def test_a_failed_call_is_a_record_and_its_old_name_warns(tmp_path: Path) -> None:
    s, ids = two_attempts(tmp_path)
    (failed,) = s.compare(ids["a"], ids["b"]).b.tool_errors
    assert type(failed) is FailedToolCall and not isinstance(failed, BaseException)
    # Named like an exception before: the old name still imports, with a warning.
    with pytest.warns(DeprecationWarning, match=r"compare\.ToolError is now FailedToolCall"):
        old = compare.ToolError
    assert old is FailedToolCall and "ToolError" not in compare.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        compare.Nothing  # noqa: B018 - an unknown name is still an AttributeError


def test_files_usage_cost_and_endings_per_branch(tmp_path: Path) -> None:
    s, ids = two_attempts(tmp_path)
    c = s.compare(ids["a"], ids["b"])
    # Read-only files and modified files, as Pi lists them (a read then edited file is modified).
    assert c.a.read_files == () and c.a.modified_files == ("a.py", "notes.md")
    assert c.b.read_files == ("README.md",) and c.b.modified_files == ("a.py",)
    # The branch summary's details are reported apart: they may predate the branch.
    assert c.b.summary_read_files == ("docs/x.md",)
    assert c.b.summary_modified_files == ("src/y.py",)
    assert (c.a.input, c.a.output, c.a.cost) == (990 + 1490, 20, pytest.approx(0.03))
    assert (c.b.input, c.b.output, c.b.cost) == (1990, 10, pytest.approx(0.04))
    assert c.a.ending is not None and not c.a.ending.failed
    assert c.a.ending.stop_reason == "stop" and c.a.ending.text == "done: all green"
    assert c.b.ending is not None and c.b.ending.failed
    assert c.b.ending.error_message == "overloaded"
    assert c.b.roles == {"branchSummary": 1, "assistant": 2, "toolResult": 5}


def test_to_dict_is_json_and_to_frame_has_a_row_per_branch(tmp_path: Path) -> None:
    s, ids = two_attempts(tmp_path)
    c = s.compare(ids["a"], ids["b"])
    data = json.loads(json.dumps(c.to_dict()))
    assert data["ancestor_id"] == ids["root"]
    listed = data["a"]["message_list"]
    assert [m["entry_id"] for m in listed] == [e.id for e in c.a.entries]
    assert listed[-1] == {
        "entry_id": ids["a"],
        "role": "assistant",
        "preview": "done: all green",
        "tokens": estimate_tokens(s[ids["a"]].message),
    }
    assert [step["tag"] for step in data["tool_diff"]][:2] == ["equal", "insert"]
    assert data["b"]["ended_in_error"] is True
    frame = c.to_frame()
    assert list(frame.index) == ["a", "b"]
    assert frame.loc["b", "tool_errors"] == 1
    assert frame.loc["a", "modified_files"] == 2
    assert frame.loc["a", "cost"] == pytest.approx(0.03)


# -- degenerate cases ----------------------------------------------------------------------------


def test_the_same_leaf_twice_compares_to_nothing(tmp_path: Path) -> None:
    s, ids = two_attempts(tmp_path)
    c = s.compare(ids["a"], ids["a"])
    assert c.same_leaf and c.ancestor_id == ids["a"]
    assert c.a.entries == () and c.b.entries == () and c.tool_diff == ()
    assert c.a.ending is None
    assert "same entry" in c.to_text()


def test_a_leaf_that_is_an_ancestor_of_the_other(tmp_path: Path) -> None:
    s, ids = two_attempts(tmp_path)
    c = s.compare(ids["root"], ids["b"])
    assert c.ancestor_id == ids["root"] and c.a.entries == ()
    assert c.summary.startswith("a is an ancestor of b")
    assert [op.tag for op in c.tool_diff] == ["insert"]
    reverse = s.compare(ids["b"], ids["root"])
    assert reverse.summary.startswith("b is an ancestor of a")


def test_two_roots_share_nothing_and_an_unknown_id_is_an_error(tmp_path: Path) -> None:
    s = Session.in_memory("/p")
    first = s.append_message(user("one")).id
    s.reset_leaf()
    second = s.append_message(user("two")).id
    c = s.compare(first, second)
    assert c.ancestor is None and len(c.a.entries) == len(c.b.entries) == 1
    with pytest.raises(EntryNotFoundError):
        s.compare(first, "no-such-entry")


# -- the view ------------------------------------------------------------------------------------


def test_the_view_escapes_message_text_and_tool_arguments(tmp_path: Path) -> None:
    s = Session.create("/p", tmp_path)
    root = s.append_message(user(f"hello {SCRIPT}")).id
    s.append_message(
        assistant(SCRIPT, calls=(("c1", "bash", {"command": f"echo '{SCRIPT}'"}),), total=5)
    )
    s.append_message(tool_result("c1", "bash", SCRIPT, error=True))
    left = s.append_message(assistant(f"ended {SCRIPT}", total=6)).id
    s.branch(root)
    s.append_message(
        assistant("", calls=(("c2", "read", {"path": f"<img src=x onerror=1>{SCRIPT}.py"}),))
    )
    c = s.compare(left, s.leaf_id)
    bundle = c._repr_mimebundle_()
    html = bundle["text/html"]
    assert "<script" not in html.lower() and "<img" not in html and "<style" not in html
    assert "&lt;script&gt;" in html
    text = visible_text(html)  # only div/span/strong/code/tables
    assert f"echo '{SCRIPT}'" in text and f"{SCRIPT}.py" in text
    assert bundle["text/plain"] == c.to_text() and "Tool calls (a vs b)" in c.to_text()
    assert c._repr_mimebundle_(include=["text/plain"]) == {"text/plain": c.to_text()}


def test_comparing_needs_no_pandas(tmp_path: Path) -> None:
    s, ids = two_attempts(tmp_path)
    code = (
        "import sys\n"
        "from pinb.core import Session\n"
        f"s = Session.open({str(s.path)!r})\n"
        f"c = s.compare({ids['a']!r}, {ids['b']!r})\n"
        "c.to_text(); c.to_html()\n"
        "print('pandas' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


def test_odd_files_compare_without_crashing() -> None:
    compared = 0
    for path in [*TREES, *READABLE_CASES]:
        s = Session.open(path)
        leaves = [e.id for e in s.entries if not s.children(e.id) and isinstance(e.id, str)]
        for a, b in {(leaves[0], leaves[-1]), (s.leaf_id, leaves[0])} if leaves else ():
            if not isinstance(b, str) or b not in s:
                continue
            c = s.compare(a if isinstance(a, str) else None, b)
            json.dumps(c.to_dict())
            visible_text(c.to_html())
            assert c.to_text().startswith("Branches a=")
            compared += 1
    assert compared > len(TREES)


def test_calls_one_branch_made_beyond_the_others_are_its_own_not_replacements() -> None:
    from pinb.analysis.compare import ToolCall, tool_diff
    from pinb.views.compare import DIFF_MARKS

    def call(name: str, key: str) -> ToolCall:
        return ToolCall(entry_id="e", name=name, key=key, is_error=False)

    a = [call("edit", "core.py"), call("read", "report.py")]
    b = [call("edit", "core.py"), call("read", "check.py"), call("edit", "core.py")]
    b += [call("bash", "python3 check.py"), call("edit", "README.md")]
    ops = [(op.tag, len(op.a), len(op.b)) for op in tool_diff(a, b)]
    assert ops == [("equal", 1, 1), ("replace", 1, 1), ("insert", 0, 3)]
    assert DIFF_MARKS["insert"] == "+ b only" and DIFF_MARKS["delete"] == "- a only"
    ops = [(op.tag, len(op.a), len(op.b)) for op in tool_diff(b, a)]
    assert ops == [("equal", 1, 1), ("replace", 1, 1), ("delete", 3, 0)]
