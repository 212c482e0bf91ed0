"""The display protocol: results carry data; pinb.views, loaded by name, says how they show."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from pinb import display
from pinb.core import Session


def test_the_views_load_only_when_a_value_is_first_shown() -> None:
    code = (
        "import sys\n"
        "from pinb.core import Session\n"
        "s = Session.in_memory('/x')\n"
        "s.append_message({'role': 'user', 'content': 'hi', 'timestamp': 1})\n"
        "print('pinb.views' in sys.modules)\n"
        "bundle = s._repr_mimebundle_()\n"
        "print('pinb.views' in sys.modules, sorted(bundle))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split("\n")[:2] == ["False", "True ['text/html', 'text/plain']"]


def test_a_session_shows_through_its_registered_view() -> None:
    from pinb.views import session_mimebundle

    session = Session.in_memory("/x")
    session.append_message({"role": "user", "content": "<b>hi</b>", "timestamp": 1})
    assert session._repr_mimebundle_() == session_mimebundle(session)
    assert set(session._repr_mimebundle_(include=["text/plain"])) == {"text/plain"}
    assert "text/html" not in session._repr_mimebundle_(exclude=["text/html"])


@dataclass
class _Point(display.Displayable):
    x: int


class _Child(_Point):
    pass


def test_registered_renderers_and_their_bases() -> None:
    name = f"{_Point.__module__}.{_Point.__qualname__}"
    display.register(name, text=lambda p: f"point {p.x}", html=lambda p: f"<b>{p.x}</b>")
    assert _Point(3).to_text() == "point 3" and _Point(3).to_html() == "<b>3</b>"
    # A subclass without a renderer of its own is shown as its nearest registered base.
    assert _Child(4)._repr_mimebundle_() == {"text/plain": "point 4", "text/html": "<b>4</b>"}
    assert _Child(4)._repr_mimebundle_(exclude=["text/html"]) == {"text/plain": "point 4"}


def test_an_unregistered_type_says_so() -> None:
    class Nothing(display.Displayable):
        pass

    with pytest.raises(LookupError, match=r"no renderer registered for .*Nothing"):
        Nothing().to_text()
    with pytest.raises(ValueError, match="give text, html or bundle"):
        display.register("x.Y")
