"""The error tree drawn in pinb/errors.py is the real one, and every error pinb raises is in it."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pinb
import pinb.errors
from pinb.errors import PinbError

_LINE = re.compile(r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z]\w*)(?: \((?P<module>pinb[\w.]*)\))?")


def _every_module() -> list[str]:
    names = [
        m.name
        for m in pkgutil.walk_packages(pinb.__path__, "pinb.")
        if not m.name.endswith("__main__")
    ]
    for name in names:
        importlib.import_module(name)
    return names


def _exceptions() -> list[type[BaseException]]:
    _every_module()
    seen: list[type[BaseException]] = []
    stack: list[type[BaseException]] = [BaseException]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                stack.append(sub)
    return [c for c in seen if c.__module__.split(".")[0] == "pinb"]


def _drawing() -> dict[str, tuple[str | None, str]]:
    """name -> (parent, module) as errors.py's docstring draws it (module inherited down)."""
    doc = pinb.errors.__doc__ or ""
    block = doc.split("The tree::", 1)[1].split("\n\n", 2)[1]
    drawn: dict[str, tuple[str | None, str]] = {}
    stack: list[tuple[int, str, str]] = []  # (depth, name, module)
    for line in block.splitlines():
        match = _LINE.match(line.strip("\n")[4:])
        assert match, f"errors.py's tree has a line the test cannot read: {line!r}"
        depth = len(match["indent"]) // 4
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1] if stack else None
        module = match["module"] or (parent[2] if parent else "pinb.errors")
        name = match["name"]
        assert name not in drawn, f"{name} is drawn twice"
        drawn[name] = (parent[1] if parent else None, module)
        stack.append((depth, name, module))
    return drawn


def test_the_drawn_tree_is_the_real_tree() -> None:
    real = {
        c.__name__: (
            next((b.__name__ for b in c.__bases__ if issubclass(b, PinbError)), None),
            c.__module__,
        )
        for c in _exceptions()
        if issubclass(c, PinbError)
    }
    drawn = _drawing()
    assert sorted(set(real) - set(drawn)) == [], "raised by pinb but missing from errors.py"
    assert sorted(set(drawn) - set(real)) == [], "drawn in errors.py but not a PinbError"
    wrong = {n: (drawn[n], real[n]) for n in real if drawn[n] != real[n]}
    assert wrong == {}, "drawn (parent, module) against the real one"


#: Exceptions pinb defines that are signals, not errors: they stop a cancelled wait or walk
#: inside the module that raises them and never reach a caller, so ``except PinbError``
#: must not catch them (as ``except Exception`` should not catch ``KeyboardInterrupt``).
SIGNALS = {
    "pinb.llm.guard.GuardAborted",
    "pinb.agent.tools.find.WalkAborted",
    "pinb.testing.llm_server._Dropped",  # the test server's dropped connection
}


def test_every_error_pinb_defines_is_a_pinb_error() -> None:
    outside = {
        f"{c.__module__}.{c.__qualname__}" for c in _exceptions() if not issubclass(c, PinbError)
    }
    assert outside == SIGNALS
