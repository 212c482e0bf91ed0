"""The layers of pinb.llm drawn in its docstring: every import points down, and none loops.

An ast walk of ``pinb/llm`` (nothing is imported) collects every import between its
members, at module level, inside functions and under ``if TYPE_CHECKING:``. A member is a
module of the package or one of its sub-packages (``config``, ``providers``); the modules
inside a sub-package are held to having no cycle among themselves too.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pinb.llm

PACKAGE = Path(pinb.llm.__file__).parent
NAME = "pinb.llm"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        dotted = ".".join((NAME, *parts)).removesuffix(".__init__")
        found[dotted] = path
    return found


MODULES = _modules()


def _imports() -> list[tuple[str, str, str]]:
    """``(importer, imported, "file:line")`` for every import of a pinb.llm module."""
    found = []
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                    for a in node.names
                ]
            else:
                continue
            where = f"{path.relative_to(PACKAGE.parent.parent)}:{node.lineno}"
            found += [(module, t, where) for t in targets if t.startswith(NAME + ".")]
    return found


IMPORTS = _imports()


def _member(module: str, within: str = NAME) -> str:
    """The member of package ``within`` that holds ``module``."""
    return module[len(within) + 1 :].split(".")[0]


def _cycles(edges: set[tuple[str, str]]) -> list[list[str]]:
    """Groups of nodes that reach each other."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)

    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {node: reach(node) for node in list(graph)}
    groups = {
        frozenset(n for n in reached if n == node or (n in reached[node] and node in reached[n]))
        for node in reached
        if node in reached[node]
    }
    return sorted(sorted(group) for group in groups)


def _drawn_layers() -> list[list[str]]:
    """The layers as the package's docstring numbers them."""
    doc = pinb.llm.__doc__ or ""
    starts = re.findall(r"^\d\. ((?:``\w+`` ?)+)", doc, flags=re.M)
    return [re.findall(r"``(\w+)``", names) for names in starts]


LAYERS = _drawn_layers()


def test_the_docstring_draws_four_layers_holding_every_member() -> None:
    assert [len(layer) for layer in LAYERS] == [7, 1, 1, 3]
    members = {_member(m) for m in MODULES if m != NAME}
    drawn = [name for layer in LAYERS for name in layer]
    assert sorted(drawn) == sorted(members)


def test_every_import_points_down_or_stays_in_its_layer() -> None:
    level = {name: n for n, layer in enumerate(LAYERS) for name in layer}
    upward = [
        f"{where} {a} -> {b}"
        for a, b, where in IMPORTS
        if a != NAME and level[_member(b)] > level[_member(a)]
    ]
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_no_cycle_between_members_or_inside_a_sub_package() -> None:
    members = {
        (_member(a), _member(b)) for a, b, _ in IMPORTS if a != NAME and _member(a) != _member(b)
    }
    assert _cycles(members) == []
    for sub in ("config", "providers"):
        inside = f"{NAME}.{sub}"
        edges = {
            (_member(a, inside), _member(b, inside))
            for a, b, _ in IMPORTS
            if a.startswith(inside + ".") and b.startswith(inside + ".") and a != b
        }
        assert _cycles(edges) == [], sub


def test_the_walk_sees_imports_of_every_kind() -> None:
    # limits' old loop ran through an import under TYPE_CHECKING: the walk must see those,
    # and the ones inside functions (window's), or it proves nothing.
    assert ("pinb.llm.window", "pinb.llm.config.registry") in {(a, b) for a, b, _ in IMPORTS}
    assert _cycles({("types", "limits"), ("limits", "types"), ("base", "types")}) == [
        ["limits", "types"]
    ]
