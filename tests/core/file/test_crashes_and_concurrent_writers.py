"""Crashes, concurrent writers and garbage input: nothing is lost, nothing hangs."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pinb.core import Session
from pinb.core.js.wire import JS_WHITESPACE

HEADER = (
    '{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
)

WRITER = r"""
import sys
from pinb.core import Session
session = Session.open(sys.argv[1])
payload = "x" * 20000
i = 0
while True:
    session.append_message({"role": "user", "content": f"{i} {payload}", "timestamp": i})
    if i == 0:
        print("writing", flush=True)
    i += 1
"""


def _valid_entries(path: Path) -> int:
    session = Session.open(path)
    assert all(p.kind in ("torn-line", "malformed-line") for p in session.problems), (
        session.problems
    )
    return len(session.entries)


def test_killing_a_writer_mid_append_loses_nothing_written_before(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(HEADER)
    seen = 0
    for round_ in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline() == b"writing\n"
        time.sleep(0.005 + 0.01 * (round_ % 4))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        count = _valid_entries(path)
        assert count >= seen  # every earlier entry still loads
        seen = count
        # Simulate the worst case too: a line cut in the middle by the crash.
        if round_ % 3 == 0:
            with open(path, "ab") as handle:
                handle.write(b'{"type":"message","id":"dead","parentId":null,"mess')
        session = Session.open(path)
        entry = session.append_message(
            {"role": "user", "content": f"after {round_}", "timestamp": 1}
        )
        reopened = Session.open(path)
        assert reopened.entries[-1].raw == entry.raw
        seen = len(reopened.entries)
    assert seen > 24  # the writers really wrote, and every round appended one more


def _append_many(path: str, tag: str, count: int, per_turn: int) -> None:
    session = Session.open(path)
    for turn in range(count // per_turn):
        with session.turn(f"writer {tag}", wait=60):
            for i in range(turn * per_turn, (turn + 1) * per_turn):
                session.append_message(
                    {"role": "user", "content": f"{tag}-{i}", "timestamp": i}, validate=False
                )
        time.sleep(0.002)  # the gap between two cells: the other writer's chance


@pytest.mark.parametrize("per_turn", [1, 4])
def test_two_processes_writing_turns_make_one_unbranched_conversation(
    tmp_path: Path, per_turn: int
) -> None:
    """Each turn continues from the file's leaf (whoever wrote it) and turns never interleave."""
    path = tmp_path / "s.jsonl"
    path.write_text(HEADER)
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_append_many, args=(str(path), tag, 800, per_turn)) for tag in "ab"
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=240)
        assert worker.exitcode == 0
    lines = path.read_text().splitlines()
    assert len(lines) == 1601
    session = Session.open(path)
    assert session.problems == []
    entries = session.entries
    assert len({e.id for e in entries}) == 1600
    # One chain in file order: every entry's parent is the line before it.
    assert entries[0].parent_id is None
    assert all(b.parent_id == a.id for a, b in itertools.pairwise(entries))
    for tag in "ab":
        mine = [e.message["content"] for e in entries if e.message["content"].startswith(tag)]
        assert mine == [f"{tag}-{i}" for i in range(800)]
    # A turn's entries are consecutive: no writer's entry sits inside another's turn.
    tags = [e.message["content"][0] for e in entries]
    runs = [len(list(group)) for _, group in itertools.groupby(tags)]
    assert all(run % per_turn == 0 for run in runs)
    assert len(runs) > 2  # the writers really took turns


lines_strategy = st.lists(
    st.one_of(
        st.text(max_size=40),
        st.sampled_from(
            [
                "{",
                "}",
                "[1,",
                "null",
                "123",
                '"s"',
                "NaN",
                '{"type":"session","id":"x"}',
                "\ufeff{}",
                '{"type":1}',
            ]
        ),
        st.builds(
            lambda i, p: json.dumps(
                {
                    "type": "message",
                    "id": i,
                    "parentId": p,
                    "timestamp": "t",
                    "message": {"role": "user", "content": "c", "timestamp": 1},
                }
            ),
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from([None, "a", "b", "c", "zz"]),
        ),
    ),
    max_size=25,
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=lines_strategy)
def test_fuzzed_lines_never_crash_and_every_bad_line_is_reported(
    tmp_path: Path, lines: list[str]
) -> None:
    path = tmp_path / "fuzz.jsonl"
    body = "\n".join(line.replace("\n", " ") for line in lines)
    path.write_text(HEADER + body + "\n", encoding="utf-8", errors="surrogatepass")
    session = Session.open(path)
    session.build_context()
    session.tree()
    for entry in session.entries:
        session.build_context(entry.id)
    bad = {
        p.line
        for p in session.problems
        if p.kind in ("malformed-line", "torn-line", "not-an-entry", "duplicate-header")
    }
    # Non-object JSON lines are kept as inert entries (as Pi keeps them) and reported too.
    odd = {p.line for p in session.problems if p.kind == "not-an-entry"}
    good = {e.line for e in session.entries}
    content_lines = {i + 2 for i, line in enumerate(body.split("\n")) if line.strip(JS_WHITESPACE)}
    assert good | bad == content_lines
    assert good & bad <= odd


def test_a_process_killed_while_holding_the_lock_releases_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(HEADER)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'ab'); fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
            str(path),
        ],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    Session.open(path).append_message({"role": "user", "content": "x", "timestamp": 1})
    assert len(Session.open(path).entries) == 1
