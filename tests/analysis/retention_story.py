"""A coding session with two compactions, and what a reader finds each summary kept.

The conversation and both summaries are written by hand in Pi's shapes (tool calls and
results as Pi records them; the summaries in Pi's checkpoint format with its file lists).
``EXPECTED`` holds the verdicts a person gives each fact of each replaced span, judged by
reading the summary, not by running pinb.
"""

from __future__ import annotations

from pathlib import Path

from pinb.core import Session
from tests.analysis.builders import assistant, tool_result, user

CWD = "/home/dev/shop"

SUMMARY_1 = """## Goal
Fix the checkout total when a coupon is applied, then guard against negative totals.

## Constraints & Preferences
- Keep the public API of `Cart` unchanged
- Run the tests with `uv run pytest -q` before claiming success

## Progress
### Done
- [x] Fixed `apply_coupon` in pricing.py: percentage coupons now reduce the subtotal
- [x] Added a test for a coupon larger than the total; the total is clamped at zero

### In Progress
- [ ] Reviewing shipping rules

## Key Decisions
- **Clamp at zero**: a coupon larger than the total gives a total of 0, never below zero

## Next Steps
1. Look at the shipping rules

## Critical Context
- 13 tests pass

<modified-files>
src/cart/pricing.py
tests/test_coupon_floor.py
</modified-files>"""

SUMMARY_2 = """## Goal
Checkout fixes for the shop: coupons done; the shipping threshold is now configurable.

## Progress
### Done
- [x] Coupon fixes (see earlier)
- [x] Free-shipping threshold configurable via the SHOP_FREE_SHIPPING env var

## Next Steps
1. Commit the change

<modified-files>
src/cart/pricing.py
src/cart/shipping.py
tests/test_coupon_floor.py
</modified-files>"""

PYTEST_FAIL = (
    "F.\n____ test_coupon_percent ____\n    assert apply_coupon(100, PERCENT_10) == 90\n"
    "E   AssertionError: assert 100 == 90\n"
    "FAILED tests/test_pricing.py::test_coupon_percent - AssertionError: assert 100 == 90\n"
    "1 failed, 1 passed in 0.21s\n\nCommand exited with code 1"
)
FLOOR_FAIL = (
    "FAILED tests/test_coupon_floor.py::test_total_never_negative - AssertionError: "
    "assert -20 == 0\n1 failed in 0.12s\n\nCommand exited with code 1"
)
MYPY_FAIL = (
    'src/cart/shipping.py:12: error: Incompatible types in assignment (expression has type "str", '
    'variable has type "int")  [assignment]\nFound 1 error in 1 file (checked 9 source files)\n\n'
    "Command exited with code 1"
)

#: (compaction 1 or 2, kind, text, verdict a reader gives, kept messages carry it).
EXPECTED: list[tuple[int, str, str, str, bool]] = [
    (1, "file", "src/cart/pricing.py", "verbatim", False),
    (1, "file", "tests/test_coupon_floor.py", "verbatim", False),
    (1, "command", "uv run pytest -q tests/test_pricing.py", "lost", False),
    (1, "command", "uv run pytest -q", "verbatim", False),
    (1, "command", "uv run pytest -q tests/test_coupon_floor.py", "lost", False),
    (1, "error", "E AssertionError: assert 100 == 90", "lost", False),
    (1, "error", "FAILED tests/test_coupon_floor.py::test_total_never_negative - "
     "AssertionError: assert -20 == 0", "lost", False),
    (1, "instruction", "The checkout total is wrong when a coupon is applied. Fix it in "
     "src/cart/pricing.py. Don't change the public API of Cart, and always run the tests "
     "with `uv run pytest -q` before you say it works.", "paraphrased", False),
    (1, "instruction", "Don't change the public API of Cart, and always run the tests with "
     "`uv run pytest -q` before you say it works.", "paraphrased", False),
    (1, "instruction", "Great. Now add a test for a coupon larger than the total; the total "
     "must never go below zero.", "paraphrased", False),
    (1, "instruction", "Now add a test for a coupon larger than the total; the total must "
     "never go below zero.", "paraphrased", False),
    (1, "decision", "Fixed: `apply_coupon` now subtracts the percentage from the subtotal. "
     "All 12 tests pass in 0.84 s. The public API of `Cart` is unchanged.", "paraphrased", False),
    (1, "decision", "Done. `apply_coupon` clamps the total at zero; 13 tests pass.",
     "paraphrased", False),
    (1, "identifier", "apply_coupon", "verbatim", True),
    (1, "identifier", "AssertionError", "lost", False),
    (1, "number", "12 tests", "lost", False),
    (1, "number", "0.84 s", "lost", False),
    (1, "number", "13 tests", "verbatim", False),
    (2, "file", "src/cart/shipping.py", "verbatim", False),
    (2, "command", "uv run mypy src", "lost", False),
    (2, "command", "uv run mypy src && uv run pytest -q", "lost", False),
    (2, "error", 'src/cart/shipping.py:12: error: Incompatible types in assignment (expression '
     'has type "str", variable has type "int") [assignment]', "lost", False),
    (2, "instruction", "Thanks. Next, look at the shipping rules in src/cart/shipping.py.",
     "lost", False),
    (2, "instruction", "Make the free-shipping threshold configurable via SHOP_FREE_SHIPPING "
     "env var; only read it once at startup.", "paraphrased", False),
    (2, "decision", "Shipping is free above FREE_SHIPPING_THRESHOLD (50 EUR); unlike "
     "`apply_coupon` it has no tests yet.", "lost", False),
    (2, "decision", "`load_threshold` reads SHOP_FREE_SHIPPING once at import and falls back "
     "to 50; mypy is clean and 14 tests pass.", "lost", False),
    (2, "identifier", "SHOP_FREE_SHIPPING", "verbatim", False),
    (2, "number", "14 tests", "lost", False),
]  # fmt: skip


def write_story(folder: Path) -> tuple[Session, dict[str, str]]:
    """The session (Pi 1.6, written through pinb's appends) and its ids by name."""
    s = Session.create(CWD, folder)
    ids: dict[str, str] = {}

    def add(name: str, message: dict[str, object]) -> None:
        ids[name] = s.append_message(message).id

    def call(name: str, call_id: str, tool: str, args: dict[str, object], text: str = "") -> None:
        add(name, assistant(text, calls=((call_id, tool, args),)))

    add("u1", user(
        "The checkout total is wrong when a coupon is applied. Fix it in src/cart/pricing.py. "
        "Don't change the public API of Cart, and always run the tests with `uv run pytest -q` "
        "before you say it works."
    ))  # fmt: skip
    call(
        "a1", "c1", "read", {"path": "src/cart/pricing.py"}, "I'll look at the pricing code first."
    )
    add("r1", tool_result("c1", "read", "def apply_coupon(total, coupon):\n    return total\n"))
    call("a2", "c2", "bash", {"command": "uv run pytest -q tests/test_pricing.py"})
    add("r2", tool_result("c2", "bash", PYTEST_FAIL, error=True))
    call("a3", "c3", "edit", {"path": "src/cart/pricing.py", "oldText": "return total",
         "newText": "return total - total * coupon.rate"},
         "The percentage is never applied: `apply_coupon` returns the original total when "
         "`coupon.kind` is percent. I'll subtract `total * coupon.rate`.")  # fmt: skip
    add("r3", tool_result("c3", "edit", "Successfully replaced text in src/cart/pricing.py."))
    call("a4", "c4", "bash", {"command": "uv run pytest -q"})
    add("r4", tool_result("c4", "bash", "12 passed in 0.84s"))
    add("a5", assistant(
        "Fixed: `apply_coupon` now subtracts the percentage from the subtotal. All 12 tests pass "
        "in 0.84 s. The public API of `Cart` is unchanged."
    ))  # fmt: skip
    add("u2", user("Great. Now add a test for a coupon larger than the total; the total must "
                   "never go below zero."))  # fmt: skip
    call(
        "a6", "c5", "write", {"path": "tests/test_coupon_floor.py", "content": "def test_x(): ..."}
    )
    add(
        "r5",
        tool_result("c5", "write", "Successfully wrote 412 bytes to tests/test_coupon_floor.py"),
    )
    call("a7", "c6", "bash", {"command": "uv run pytest -q tests/test_coupon_floor.py"})
    add("r6", tool_result("c6", "bash", FLOOR_FAIL, error=True))
    call("a8", "c7", "edit", {"path": "src/cart/pricing.py", "oldText": "return total - ",
         "newText": "return max(0, total - "},
         "The total goes negative: I'll clamp it with max(0, …) in `apply_coupon`.")  # fmt: skip
    add("r7", tool_result("c7", "edit", "Successfully replaced text in src/cart/pricing.py."))
    call("a9", "c8", "bash", {"command": "uv run pytest -q"})
    add("r8", tool_result("c8", "bash", "13 passed in 0.91s"))
    add("a10", assistant("Done. `apply_coupon` clamps the total at zero; 13 tests pass."))
    add("u3", user("Thanks. Next, look at the shipping rules in src/cart/shipping.py."))
    call("a11", "c9", "read", {"path": "src/cart/shipping.py"})
    add("r9", tool_result("c9", "read", "FREE_SHIPPING_THRESHOLD = 50\n"))
    add("a12", assistant(
        "Shipping is free above FREE_SHIPPING_THRESHOLD (50 EUR); unlike `apply_coupon` it has "
        "no tests yet."
    ))  # fmt: skip
    ids["c1"] = s.append_compaction(
        SUMMARY_1, ids["u3"], 9000,
        details={"readFiles": [], "modifiedFiles": ["src/cart/pricing.py",
                                                    "tests/test_coupon_floor.py"]},
    ).id  # fmt: skip
    add("u4", user("Make the free-shipping threshold configurable via SHOP_FREE_SHIPPING env "
                   "var; only read it once at startup."))  # fmt: skip
    call("a13", "c10", "edit", {"path": "src/cart/shipping.py", "oldText": "= 50",
         "newText": "= os.environ.get('SHOP_FREE_SHIPPING', 50)"})  # fmt: skip
    add("r10", tool_result("c10", "edit", "Successfully replaced text in src/cart/shipping.py."))
    call("a14", "c11", "bash", {"command": "uv run mypy src"})
    add("r11", tool_result("c11", "bash", MYPY_FAIL, error=True))
    call("a15", "c12", "edit", {"path": "src/cart/shipping.py", "oldText": "os.environ",
         "newText": "int(os.environ"},
         "mypy flags the environment value as a str; I'll parse it with int() and fall back "
         "to 50.")  # fmt: skip
    add("r12", tool_result("c12", "edit", "Successfully replaced text in src/cart/shipping.py."))
    call("a16", "c13", "bash", {"command": "uv run mypy src && uv run pytest -q"})
    add("r13", tool_result("c13", "bash", "Success: no issues found in 9 source files\n"
                           "14 passed in 1.02s"))  # fmt: skip
    add("a17", assistant(
        "`load_threshold` reads SHOP_FREE_SHIPPING once at import and falls back to 50; mypy is "
        "clean and 14 tests pass."
    ))  # fmt: skip
    add("u5", user("Commit it."))
    call("a18", "c14", "bash", {"command": "git commit -am 'Configurable free-shipping threshold'"})
    add("r14", tool_result("c14", "bash", "[main 1a2b3c4] Configurable free-shipping threshold"))
    ids["c2"] = s.append_compaction(
        SUMMARY_2, ids["u5"], 12000,
        details={"readFiles": [], "modifiedFiles": ["src/cart/pricing.py", "src/cart/shipping.py",
                                                    "tests/test_coupon_floor.py"]},
    ).id  # fmt: skip
    return s, ids
