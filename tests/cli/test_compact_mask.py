"""``pinb compact FILE --mask`` as a real process: context edits only, under the threshold, one clear line otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pinb.core import CompactionSettings, Session
from pinb.core.context.tokens import estimate_projected_tokens
from pinb.testing.generate import tool_heavy_session

WINDOW = 64_000


def _pinb(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "pinb.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def test_mask_appends_context_edits_only_and_drops_the_context_under_the_threshold(
    tmp_path: Path,
) -> None:
    path = tool_heavy_session(tmp_path, turns=40, result_chars=6_000)
    before = path.read_bytes()
    threshold = CompactionSettings().fit_window(WINDOW).threshold(WINDOW)
    assert estimate_projected_tokens(Session.open(path).build_context()).tokens > threshold

    plan = _pinb("compact", str(path), "--mask", "--plan", "--window", str(WINDOW), "--json")
    assert plan.returncode == 0, plan.stderr
    planned = json.loads(plan.stdout)
    assert path.read_bytes() == before  # a plan writes nothing

    done = _pinb("compact", str(path), "--mask", "--window", str(WINDOW), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["written"] and report["reaches"] and report["summaryCallsAvoided"] == 1
    assert [m["entryId"] for m in report["masked"]] == [m["entryId"] for m in planned["masked"]]
    grown = path.read_bytes()
    assert grown.startswith(before)  # the file only grew
    appended = [json.loads(line) for line in grown[len(before) :].splitlines()]
    assert {e["type"] for e in appended} == {"context_edit"}
    assert [e["id"] for e in appended] == [m["editId"] for m in report["masked"]]
    figure = estimate_projected_tokens(Session.open(path).build_context()).tokens
    assert figure == report["tokensAfter"] <= threshold

    tokens = _pinb("tokens", str(path), "--window", str(WINDOW), "--json")
    assert json.loads(tokens.stdout)["tokens"] == figure  # the footer's figure agrees


def test_mask_says_in_one_line_when_it_is_not_enough(tmp_path: Path) -> None:
    path = tool_heavy_session(tmp_path, turns=40, result_chars=6_000)
    pi = tmp_path / ".pi"
    pi.mkdir()
    # Everything recent is kept, and the threshold sits under it: masking cannot get there.
    (pi / "settings.json").write_text(
        json.dumps({"compaction": {"keepRecentTokens": 30_000},
                    "pinb": {"compaction": {"thresholdPercent": 40}}})
    )  # fmt: skip
    before = path.read_bytes()
    done = _pinb("compact", str(path), "--mask", "--window", str(WINDOW))
    assert done.returncode != 0
    line = done.stderr.strip()
    assert "\n" not in line and "masking is not enough" in line and "--offline" in line
    assert str(path) in line and "nothing was written" in line
    assert path.read_bytes() == before

    offline = _pinb("compact", str(path), "--mask", "--offline", "--window", str(WINDOW))
    assert offline.returncode == 0, offline.stderr
    assert "masking was not enough" in offline.stdout and "appended compaction" in offline.stdout
    added = [json.loads(x)["type"] for x in path.read_bytes()[len(before) :].splitlines()]
    assert added == ["compaction"]


def test_offline_compaction_follows_the_mask_first_setting(tmp_path: Path) -> None:
    path = tool_heavy_session(tmp_path, turns=40, result_chars=6_000)
    pi = tmp_path / ".pi"
    pi.mkdir()
    (pi / "settings.json").write_text(
        json.dumps({"pinb": {"compaction": {"strategy": "mask-first"}}})
    )
    before = path.read_bytes()
    done = _pinb("compact", str(path), "--offline", "--window", str(WINDOW))
    assert done.returncode == 0, done.stderr
    assert "context edits" in done.stdout and "no summary needed" in done.stdout
    added = {json.loads(x)["type"] for x in path.read_bytes()[len(before) :].splitlines()}
    assert added == {"context_edit"}


def test_pinb_compactions_lists_each_masking_and_what_it_took_off(tmp_path: Path) -> None:
    path = tool_heavy_session(tmp_path, turns=40, result_chars=6_000)
    assert _pinb("compactions", str(path)).stdout.startswith("no compactions")
    masked = json.loads(
        _pinb("compact", str(path), "--mask", "--window", str(WINDOW), "--json").stdout
    )
    out = _pinb("compactions", str(path)).stdout
    saved = sum(m["tokensBefore"] - m["tokensAfter"] for m in masked["masked"])
    assert out.startswith("1 masking (old tool results replaced")
    assert f"{len(masked['masked'])} tool results masked, {saved:,} tokens off" in out
    assert _pinb("compactions", str(path), "--json").stdout.strip() == "[]"  # shape unchanged
