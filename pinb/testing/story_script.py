"""The demo story's script: the small project it works on, and what is said and done.

:mod:`pinb.testing.story` writes it as a session file or plays it to a live agent. Each
``bash`` call carries the output the project's checks print at that point; the other
tools' results are computed from the files (a test checks both against the real tools).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "EXTRA_TASKS",
    "MAIN_TASKS",
    "NOTES",
    "PROJECT",
    "READING_TASKS",
    "WRONG_TURN",
    "WRONG_TURN_SUMMARY",
    "Call",
    "Step",
    "Task",
    "story_tasks",
    "write_project",
]

# -- the project -------------------------------------------------------------------------

_CORE = '''"""Counting words and summarising numbers for the weekly report."""

import re
from collections import Counter

WORD = re.compile(r"[a-z]+")
SENTENCE_END = re.compile(r"[.!?]+(?:\\s+|$)")
WORDS_PER_MINUTE = 230


def words(text):
    """The words of ``text``, lower-cased."""
    return WORD.findall(text.lower())


def word_count(text):
    """How many words ``text`` has."""
    return len(words(text))


def sentences(text):
    """The sentences of ``text``, without their end marks."""
    return [part.strip() for part in SENTENCE_END.split(text) if part.strip()]


def reading_time(text):
    """Minutes needed to read ``text`` at an average pace (at least 1)."""
    return max(1, round(word_count(text) / WORDS_PER_MINUTE))


def top_words(text, n=3):
    """The ``n`` most common words, most common first."""
    return [word for word, _ in Counter(words(text)).most_common(n)]


def mean(values):
    """The arithmetic mean of ``values``."""
    values = list(values)
    if not values:
        raise ValueError("mean() of an empty list")
    return sum(values) / len(values)


def median(values):
    """The middle value of ``values``."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]


def spread(values):
    """The smallest and the largest of ``values``, as a pair."""
    ordered = sorted(values)
    return ordered[0], ordered[-1]
'''

_REPORT = '''"""The weekly report: a paragraph of numbers about the week's notes."""

from .core import mean, median, reading_time, sentences, spread, top_words, word_count

TEMPLATE = (
    "Week {week}: {notes} notes, {words} words in all ({minutes} min to read).\\n"
    "Words per note: mean {mean:.1f}, median {median:.1f}, from {low} to {high}.\\n"
    "Longest note: {longest} sentences. Most used words: {top}."
)

#: Words too common to be worth reporting.
STOP_WORDS = {"a", "an", "and", "the", "of", "to", "in", "is", "it", "for", "on", "we"}


def note_stats(notes):
    """Word and sentence counts of each note."""
    return [{"words": word_count(note), "sentences": len(sentences(note))} for note in notes]


def interesting_words(text, n):
    """The ``n`` most used words that are not stop words."""
    ranked = top_words(text, n + len(STOP_WORDS))
    return [word for word in ranked if word not in STOP_WORDS][:n]


def weekly_report(week, notes, n_top=5):
    """The report for ``week`` from the notes written during it."""
    if not notes:
        return f"Week {week}: no notes."
    stats = note_stats(notes)
    counts = [s["words"] for s in stats]
    low, high = spread(counts)
    text = "\\n".join(notes)
    return TEMPLATE.format(
        week=week,
        notes=len(notes),
        words=sum(counts),
        minutes=reading_time(text),
        mean=mean(counts),
        median=median(counts),
        low=low,
        high=high,
        longest=max(s["sentences"] for s in stats),
        top=", ".join(interesting_words(text, n_top)),
    )
'''

_TESTS = """from textstats import median, top_words, word_count


def test_median_odd():
    assert median([3, 1, 2]) == 2


def test_median_even():
    result = median([4, 1, 3, 2])
    assert result == 2.5, f"expected 2.5, got {result}"


def test_top_words():
    result = top_words("the cat and the hat and the bat", 2)
    assert result == ["the", "and"], f"expected ['the', 'and'], got {result}"


def test_word_count_contractions():
    result = word_count("Don't panic, it's only a test.")
    assert result == 6, f"expected 6, got {result}"
"""

_CHECK = '''"""Run the project's tests without installing anything: python3 check.py"""

import sys

from tests import test_core

names = sorted(name for name in dir(test_core) if name.startswith("test_"))
failed = 0
for name in names:
    try:
        getattr(test_core, name)()
    except Exception as exc:
        failed += 1
        print(f"FAIL {name}: {type(exc).__name__}: {exc}")
    else:
        print(f"ok   {name}")
print(f"{len(names) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
'''

_README = """# textstats

Small text statistics for the weekly report.

    from textstats import median, top_words, word_count

- `word_count(text)`: how many words a text has.
- `top_words(text, n=3)`: the `n` most common words, most common first.
- `median(values)`: the middle value of a list of numbers.

Run the checks with `python3 check.py`.
"""

#: The demo project's files as the story starts (path -> text).
PROJECT: dict[str, str] = {
    "README.md": _README,
    "check.py": _CHECK,
    "textstats/__init__.py": '"""Text statistics for the weekly report."""\n\n'
    "from .core import median, top_words, word_count\n\n"
    '__all__ = ["median", "top_words", "word_count"]\n',
    "textstats/core.py": _CORE,
    "textstats/report.py": _REPORT,
    "tests/__init__.py": "",
    "tests/test_core.py": _TESTS,
}


# -- the notes the report is about ------------------------------------------------------------

_PEOPLE = ("Ana", "Bo", "Chen", "Dara", "Eli", "Femi", "Gus", "Hana")
_TOPICS = (
    "the import job",
    "the weekly report",
    "the search index",
    "the billing export",
    "the onboarding guide",
    "the nightly backup",
    "the mobile release",
    "the data cleanup",
)
_VERBS = ("reviewed", "rewrote", "tested", "planned", "measured", "debugged", "documented")
_OUTCOMES = (
    "it works, but it is slow on large inputs",
    "we found two edge cases nobody had written down",
    "the numbers match last week's within a percent",
    "it needs another pass before Friday",
    "we agreed to keep the old behaviour for now",
    "the fix is small and already merged",
    "nobody is sure who owns it, so I asked in the channel",
    "the tests pass locally but not on the build server",
)
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")


def _week_notes(week: int, sentences: int) -> str:
    """A week of work notes, the same every time: five days of ``sentences`` sentences.

    Full of contractions ("don't", "it's", "nobody's"), which the project's first
    ``word_count`` counts as two words each.
    """
    rng = random.Random(week)
    lines = [f"# Notes, week {week}", ""]
    for day in _DAYS:
        said = []
        for _ in range(sentences):
            who, what, verb = rng.choice(_PEOPLE), rng.choice(_TOPICS), rng.choice(_VERBS)
            minutes, outcome = rng.randint(10, 90), rng.choice(_OUTCOMES)
            said.append(
                rng.choice(
                    (
                        f"{who} and I {verb} {what} for {minutes} minutes; {outcome}.",
                        f"Spent {minutes} minutes on {what}: {outcome}.",
                        f"{who} {verb} {what}. {outcome[0].upper()}{outcome[1:]}.",
                        f"Question for {who}: should {what} run before {rng.choice(_TOPICS)}?",
                        f"Don't forget: {what} is due on {rng.choice(_DAYS)}, and it's "
                        f"{rng.choice(('late', 'on track', 'blocked'))}.",
                    )
                )
            )
        lines += [f"## {day}", "", " ".join(said), ""]
    return "\n".join(lines)


_STATS = '''"""Word counts and top words of weeks of notes: python3 stats.py notes/week-09.md ..."""

import sys

from textstats import word_count
from textstats.report import interesting_words

for path in sys.argv[1:]:
    with open(path, encoding="utf-8") as file:
        text = file.read()
    print(f"{path}: {word_count(text)} words; top words: {', '.join(interesting_words(text, 5))}")
'''

#: The notes the weekly report is made from (path -> text), about 4,500 tokens a week by
#: chars/4, and ``stats.py``, which counts them with the project's code: reading them fills
#: a 20,000-token window as a real session's reads do. Written by :func:`write_project` with
#: ``notes=True``; read by :data:`READING_TASKS`.
NOTES: dict[str, str] = {
    **{f"notes/week-{week:02d}.md": _week_notes(week, 45) for week in (9, 10, 11)},
    "stats.py": _STATS,
}


def write_project(folder: str | Path, *, notes: bool = False) -> Path:
    """Write :data:`PROJECT` into ``folder`` (created) and return it.

    ``notes``: also the weeks of :data:`NOTES`, which :data:`READING_TASKS` read.
    """
    root = Path(folder)
    for name, text in (PROJECT | NOTES if notes else PROJECT).items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


# -- the story ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """A tool call. ``output`` is what ``bash`` prints (other tools' results are computed
    from the files); ``exit_code`` other than 0 makes the result an error, as Pi's does."""

    tool: str
    arguments: dict[str, Any]
    output: str | None = None
    exit_code: int = 0


@dataclass(frozen=True)
class Step:
    """One assistant message: thinking, text, then tool calls."""

    text: str = ""
    thinking: str = ""
    calls: tuple[Call, ...] = ()


@dataclass(frozen=True)
class Task:
    """One user prompt and the assistant's steps answering it."""

    name: str
    prompt: str
    steps: tuple[Step, ...]


def _check(*lines: str) -> Call:
    failed = sum(1 for line in lines if line.startswith("FAIL"))
    summary = f"{len(lines) - failed} passed, {failed} failed"
    return Call(
        "bash",
        {"command": "python3 check.py"},
        "\n".join([*lines, summary]) + "\n",
        int(failed > 0),
    )


_CORE_PATH = "textstats/core.py"
_OK_MEDIAN = ("ok   test_median_even", "ok   test_median_odd")
_OK_TOP = "ok   test_top_words"
_OK_COUNT = "ok   test_word_count_contractions"
_GOOD_WORD = 'WORD = re.compile(r"[a-z]+(?:\'[a-z]+)*")'

MAIN_TASKS: tuple[Task, ...] = (
    Task(
        "diagnose",
        "The checks in this project started failing after yesterday's merge. Can you find "
        "out why? Don't change anything yet.",
        (
            Step(
                "I'll start by running the project's checks.",
                thinking="The user wants a diagnosis, no changes. Run the checks first to "
                "see which tests fail, then read the code they exercise.",
                calls=(
                    _check(
                        "FAIL test_median_even: AssertionError: expected 2.5, got 3",
                        "ok   test_median_odd",
                        _OK_TOP,
                        "FAIL test_word_count_contractions: AssertionError: expected 6, got 8",
                    ),
                ),
            ),
            Step(
                "Two tests fail: `median` of an even-length list, and `word_count` on text "
                "with contractions. Let me read the code they test.",
                calls=(
                    Call("read", {"path": "tests/test_core.py"}),
                    Call("read", {"path": _CORE_PATH}),
                ),
            ),
            Step(
                "Found both causes:\n\n"
                "1. **`median`** returns `ordered[len(ordered) // 2]`, the upper of the two "
                "middle values. With an even number of values the median is the mean of the "
                "two middle ones: `[1, 2, 3, 4]` should give 2.5, not 3.\n"
                "2. **`word_count`** matches words with `[a-z]+`, so an apostrophe ends a "
                'word: "don\'t" counts as "don" and "t", which gives 8 words instead of 6.\n\n'
                "Nothing is changed yet. Shall I fix `median` first?"
            ),
        ),
    ),
    Task(
        "fix-median",
        "Yes, fix median first.",
        (
            Step(
                "For an even number of values, return the mean of the two middle ones:",
                calls=(
                    Call(
                        "edit",
                        {
                            "path": _CORE_PATH,
                            "oldText": "    middle = len(ordered) // 2\n    return ordered[middle]\n",
                            "newText": "    middle = len(ordered) // 2\n"
                            "    if len(ordered) % 2:\n"
                            "        return ordered[middle]\n"
                            "    return (ordered[middle - 1] + ordered[middle]) / 2\n",
                        },
                    ),
                ),
            ),
            Step(
                "Running the checks again.",
                calls=(
                    _check(
                        *_OK_MEDIAN,
                        _OK_TOP,
                        "FAIL test_word_count_contractions: AssertionError: expected 6, got 8",
                    ),
                ),
            ),
            Step(
                "`median` is fixed: both median tests pass. Only `word_count` still fails, "
                "as expected."
            ),
        ),
    ),
    Task(
        "fix-word-count",
        "Now fix word_count. Your last attempt changed WORD to split on whitespace; put it "
        "back to matching letters, keep apostrophes inside words, and make sure punctuation "
        "never sticks to a word.",
        (
            Step(
                "Matching letters again, with an apostrophe allowed between letters, so "
                '"don\'t" stays one word and punctuation is still left out:',
                thinking="The branch summary says \\S+ passed the tests but kept punctuation "
                'attached ("test."). A word is letters, optionally joined by apostrophes.',
                calls=(
                    Call(
                        "edit",
                        {
                            "path": _CORE_PATH,
                            "oldText": 'WORD = re.compile(r"\\S+")',
                            "newText": _GOOD_WORD,
                        },
                    ),
                ),
            ),
            Step("Checking.", calls=(_check(*_OK_MEDIAN, _OK_TOP, _OK_COUNT),)),
            Step(
                'All four checks pass. "don\'t" and "it\'s" are single words again, and '
                '"test." is counted as "test", so `top_words` is right for the report.'
            ),
        ),
    ),
    Task(
        "empty-median",
        "median([]) raises an IndexError. Make it raise a ValueError with a clear message, "
        "and add a test for it.",
        (
            Step(
                "Raising a clear error before indexing:",
                calls=(
                    Call(
                        "edit",
                        {
                            "path": _CORE_PATH,
                            "oldText": '    """The middle value of ``values``."""\n'
                            "    ordered = sorted(values)\n",
                            "newText": '    """The middle value of ``values``."""\n'
                            "    ordered = sorted(values)\n    if not ordered:\n"
                            '        raise ValueError("median() of an empty list")\n',
                        },
                    ),
                ),
            ),
            Step(
                "And a test beside the other median tests:",
                calls=(
                    Call(
                        "edit",
                        {
                            "path": "tests/test_core.py",
                            "oldText": "def test_median_even():\n",
                            "newText": "def test_median_empty():\n    try:\n        median([])\n"
                            "    except ValueError as exc:\n"
                            '        assert "empty" in str(exc), str(exc)\n'
                            "    else:\n"
                            '        raise AssertionError("expected a ValueError")\n\n\n'
                            "def test_median_even():\n",
                        },
                    ),
                ),
            ),
            Step(
                "Checking.",
                calls=(_check("ok   test_median_empty", *_OK_MEDIAN, _OK_TOP, _OK_COUNT),),
            ),
            Step(
                'Done: `median([])` now raises `ValueError("median() of an empty list")`, '
                "and `test_median_empty` checks it. All 5 checks pass."
            ),
        ),
    ),
    Task(
        "readme",
        "Update the README: say what median does with an even number of values and with "
        "an empty list.",
        (
            Step("Reading the README first.", calls=(Call("read", {"path": "README.md"}),)),
            Step(
                "Updating the `median` line:",
                calls=(
                    Call(
                        "edit",
                        {
                            "path": "README.md",
                            "oldText": "- `median(values)`: the middle value of a list of numbers.\n",
                            "newText": "- `median(values)`: the middle value of a list of numbers; "
                            "for an even number\n  of values, the mean of the two middle ones. "
                            "An empty list raises `ValueError`.\n",
                        },
                    ),
                ),
            ),
            Step("The README now documents both cases."),
        ),
    ),
    Task(
        "wrap-up",
        "Run the checks once more and summarize what we changed today.",
        (
            Step(calls=(_check("ok   test_median_empty", *_OK_MEDIAN, _OK_TOP, _OK_COUNT),)),
            Step(
                "All 5 checks pass. Today's changes:\n\n"
                "- **`median`**: the mean of the two middle values for an even number of "
                "values; `ValueError` for an empty list (new test `test_median_empty`).\n"
                "- **`word_count`** (and `top_words`, through `words`): apostrophes inside "
                "words are kept, punctuation is not.\n"
                "- **README**: documents both `median` cases.\n\n"
                "We first tried splitting words on whitespace; it passed the tests but left "
                "punctuation on words, so we went back and matched letters instead."
            ),
        ),
    ),
)

#: The wrong turn: two prompts on a branch the user abandons (it comes before
#: ``fix-word-count``, which repairs what it left in the file).
WRONG_TURN: tuple[Task, ...] = (
    Task(
        "wrong-word-count",
        "Now fix word_count.",
        (
            Step(
                "I'll count whitespace-separated words instead of runs of letters:",
                thinking='Simplest fix: a word is anything between spaces, so "don\'t" '
                "stays whole.",
                calls=(
                    Call(
                        "edit",
                        {
                            "path": _CORE_PATH,
                            "oldText": 'WORD = re.compile(r"[a-z]+")',
                            "newText": 'WORD = re.compile(r"\\S+")',
                        },
                    ),
                ),
            ),
            Step("Checking.", calls=(_check(*_OK_MEDIAN, _OK_TOP, _OK_COUNT),)),
            Step('All four checks pass: "don\'t" is now one word.'),
        ),
    ),
    Task(
        "wrong-noticed",
        'But now top_words counts "test." and "test" as different words: punctuation '
        "sticks to them. That breaks the report.",
        (
            Step(
                "Let me check how the report uses the words.",
                calls=(Call("read", {"path": "textstats/report.py"}),),
            ),
            Step(
                "You're right: splitting on whitespace keeps punctuation attached, so "
                '"test." and "test," become separate words, and `interesting_words` in '
                "the report ranks them apart. The tests passed only because none of them has "
                "punctuation next to a repeated word. The fix should keep matching letters "
                "and allow an apostrophe inside a word."
            ),
        ),
    ),
)

#: The branch summary left when the user goes back from the wrong turn (the file lists
#: are added as Pi adds them, from the summarized entries).
WRONG_TURN_SUMMARY = """## Goal
Fix `word_count` so contractions count as one word.

## Progress
### Done
- [x] Changed `WORD` in textstats/core.py to `\\S+` (split on whitespace): all checks pass.

## Key Decisions
- **Abandoned**: with `\\S+` punctuation sticks to words ("test." differs from "test"),
  which breaks `top_words` for the weekly report.

## Next Steps
1. Put `WORD` back to matching letters and allow an apostrophe between letters."""

#: Side questions that only read, for longer sessions.
EXTRA_TASKS: tuple[Task, ...] = (
    Task(
        "report",
        "How does the weekly report choose the words it lists?",
        (
            Step(calls=(Call("read", {"path": "textstats/report.py"}),)),
            Step(
                "`weekly_report` joins the week's notes and calls `interesting_words`, which "
                "asks `top_words` for more words than it needs (`n` plus the number of stop "
                'words), drops the stop words ("the", "and", ...) and keeps the first '
                "`n`. So the list depends on how `words` splits the text: whatever counts "
                "as a word there shows up in the report."
            ),
        ),
    ),
    Task(
        "ties",
        "How does top_words order words that occur equally often?",
        (
            Step("Let me look at `top_words`.", calls=(Call("read", {"path": _CORE_PATH}),)),
            Step(
                "`top_words` uses `Counter.most_common`, which sorts by count and keeps words "
                "with equal counts in the order they first appear in the text. So ties are "
                "stable: \"the cat and the hat\" gives `['the', 'cat']` for `n=2`."
            ),
        ),
    ),
    Task(
        "coverage",
        "Which tests cover word_count, and what do they check?",
        (
            Step(calls=(Call("read", {"path": "tests/test_core.py"}),)),
            Step(
                "Only `test_word_count_contractions` does: it counts \"Don't panic, it's only "
                'a test." and expects 6, so it covers contractions and trailing punctuation. '
                "Nothing tests empty text or text with numbers."
            ),
        ),
    ),
    Task(
        "check-script",
        "What exactly does check.py do? I'd like to run it in CI.",
        (
            Step(calls=(Call("read", {"path": "check.py"}),)),
            Step(
                "`check.py` imports `tests/test_core.py`, calls every function whose name "
                "starts with `test_` in name order, prints `ok` or `FAIL` with the error for "
                "each, then a count, and exits with status 1 if anything failed. It needs "
                "nothing installed, so in CI `python3 check.py` from the project folder is "
                "enough: the exit status fails the job."
            ),
        ),
    ),
)


def _stats(*weeks: int, fixed: bool) -> Call:
    """``python3 stats.py`` on ``weeks`` of notes, with what it prints at that point of the
    story: with the first ``word_count`` (``[a-z]+``), or the ``fixed`` one."""
    paths = [f"notes/week-{week:02d}.md" for week in weeks]
    lines = [f"{path}: {_WEEK_STATS[path][fixed]}" for path in paths]
    return Call("bash", {"command": "python3 stats.py " + " ".join(paths)}, "\n".join(lines) + "\n")


#: What ``stats.py`` prints for each week, before and after ``word_count`` is fixed (the
#: test suite runs the real script on the real files and compares).
_WEEK_STATS: dict[str, tuple[str, str]] = {
    "notes/week-09.md": (
        "3277 words; top words: minutes, s, i, before, don",
        "3164 words; top words: minutes, i, before, don't, forget",
    ),
    "notes/week-10.md": (
        "3226 words; top words: before, minutes, question, should, run",
        "3130 words; top words: before, minutes, question, should, run",
    ),
    "notes/week-11.md": (
        "3282 words; top words: minutes, before, i, question, should",
        "3190 words; top words: minutes, before, i, question, should",
    ),
}


def _read(week: int) -> Call:
    return Call("read", {"path": f"notes/week-{week:02d}.md"})


_BEFORE_FIX = (
    Task(
        "notes-9-10",
        "Before you fix anything else: the weekly report is made from the notes in notes/. "
        "Read weeks 9 and 10 and tell me what today's code makes of them.",
        (
            Step("Reading both weeks at once.", calls=(_read(9), _read(10))),
            Step(
                "And what the project's own code counts in them:",
                calls=(_stats(9, 10, fixed=False),),
            ),
            Step(
                "Today's `word_count` finds 3,277 words in week 9 and 3,226 in week 10, and "
                'week 9\'s top words include "s" and "don": the halves of "it\'s" and '
                '"don\'t", which `[a-z]+` splits in two. The notes are full of contractions, '
                "so both counts are too high: the `word_count` bug reaches the report."
            ),
        ),
    ),
    Task(
        "notes-11",
        "And week 11?",
        (
            Step("Reading week 11.", calls=(_read(11),)),
            Step(calls=(_stats(11, fixed=False),)),
            Step("Week 11 is the longest of the three: 3,282 words by today's count."),
        ),
    ),
)
_AFTER_FIX = (
    Task(
        "notes-11-again",
        "Now that word_count is fixed, read week 11 again: do its contractions count as one "
        "word now?",
        (
            Step("Reading week 11 again.", calls=(_read(11),)),
            Step(calls=(_stats(11, fixed=True),)),
            Step(
                "They do: week 11 has 3,190 words now, 92 fewer than before. Each of its 92 "
                'contractions ("don\'t", "it\'s") was counted as two words.'
            ),
        ),
    ),
    Task(
        "notes-9-10-again",
        "Read weeks 9 and 10 once more and compare their top words with what the report "
        "showed before the fix.",
        (
            Step("Reading both weeks again.", calls=(_read(9), _read(10))),
            Step(calls=(_stats(9, 10, fixed=True),)),
            Step(
                "Week 9 has 3,164 words now (113 fewer) and its top words are minutes, i, "
                'before, don\'t and forget: no stray "s" or "don" any more. Week 10 has 3,130 '
                "(96 fewer); its top words did not change."
            ),
        ),
    ),
)

#: Prompts that read the weeks of :data:`NOTES` (a project written with ``notes=True``):
#: two before ``word_count`` is fixed, two after. :func:`story_tasks` with ``reading=True``
#: puts them in the story, where they fill a 20,000-token window twice.
READING_TASKS: tuple[Task, ...] = (*_BEFORE_FIX, *_AFTER_FIX)
#: Where :func:`story_tasks` puts them: after the task of that name.
_READ_AFTER: dict[str, tuple[Task, ...]] = {
    "diagnose": _BEFORE_FIX,
    "fix-word-count": _AFTER_FIX[:1],
    "empty-median": _AFTER_FIX[1:],
}


def story_tasks(
    *, wrong_turn: bool = True, extras: Sequence[Task] = (), reading: bool = False
) -> list[Task | None]:
    """The story's prompts in order; ``None`` marks where the wrong turn goes.

    ``reading``: with :data:`READING_TASKS` (weeks 9 and 10, then 11, after the diagnosis;
    11 again after ``word_count`` is fixed; 9 and 10 again after the empty list).
    """
    tasks: list[Task | None] = list(MAIN_TASKS)
    if wrong_turn:
        tasks.insert(2, None)
    else:
        tasks[2] = _STRAIGHT_FIX
    for at, extra in enumerate(extras):
        tasks.insert(min(len(tasks) - 1, 1 + 2 * at), extra)
    if reading:
        # From the end, so the places found before each insertion stay where they were.
        for at in reversed(range(len(tasks))):
            task = tasks[at]
            if task is not None and task.name in _READ_AFTER:
                tasks[at + 1 : at + 1] = _READ_AFTER[task.name]
    return tasks


#: ``fix-word-count`` for a story without the wrong turn (the file still has ``[a-z]+``).
_STRAIGHT_FIX = Task(
    "fix-word-count",
    "Now fix word_count: keep apostrophes inside words, and make sure punctuation never "
    "sticks to a word.",
    (
        Step(
            'Allowing an apostrophe between letters, so "don\'t" stays one word and '
            "punctuation is still left out:",
            calls=(
                Call(
                    "edit",
                    {
                        "path": _CORE_PATH,
                        "oldText": 'WORD = re.compile(r"[a-z]+")',
                        "newText": _GOOD_WORD,
                    },
                ),
            ),
        ),
        Step("Checking.", calls=(_check(*_OK_MEDIAN, _OK_TOP, _OK_COUNT),)),
        Step('All four checks pass, and "test." is still counted as "test".'),
    ),
)
