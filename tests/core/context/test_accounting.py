"""What a context's figures cannot say alone: a reported usage far below what was sent, and
whose threshold a line gives (Pi's own, beside the one pinb's agent fits to the window)."""

from __future__ import annotations

from pathlib import Path

from pinb.core import CompactionSettings, Session
from pinb.core.context.accounting import context_usage
from tests.core.helpers import assistant, user


def test_a_reported_usage_far_below_the_estimate_is_said_and_still_used(tmp_path: Path) -> None:
    session = Session.in_memory(tmp_path)
    session.append_message(user("word " * 2_000))
    session.append_message(assistant("short", total_tokens=15))
    usage = context_usage(session.build_context(), window=32_000, window_source="models.json")
    # Pi's rule is kept: the report is the figure compared with the threshold.
    assert usage.tokens == 15 and usage.measure == "usage+estimate"
    assert usage.usage_implausible and usage.covered_tokens > 2_000
    line = usage.describe()
    assert "15 tokens (last reported usage 15 + 0 estimated for later messages)" in line
    assert f"far below chars/4 of the messages it covered ({usage.covered_tokens:,})" in line
    plausible = Session.in_memory(tmp_path)
    plausible.append_message(user("word " * 2_000))
    plausible.append_message(assistant("short", total_tokens=3_000))
    assert not context_usage(plausible.build_context()).usage_implausible


def test_pis_own_threshold_is_named_beside_the_fitted_one() -> None:
    session = Session.in_memory("/p")
    session.append_message(user("hi"))
    context = session.build_context()
    pi = context_usage(context, window=32_000, window_source="Pi's model", fit=False)
    assert pi.threshold == 32_000 - CompactionSettings().reserve_tokens
    assert (
        "compacts above 15,616 (Pi's own reserve, 16,384; pinb's agent fits it to this window "
        "and compacts above 24,000)" in pi.describe()
    )
    fitted = context_usage(context, window=32_000, window_source="setting")
    assert fitted.describe().endswith("compacts above 24,000")
