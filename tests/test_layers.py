"""The layer contract: every import in pinb/ points down (docs/design.md, "Layers").

An ast walk of pinb/ (nothing is imported or run) collects every import: at module level,
inside functions and under ``if TYPE_CHECKING:``. Each module belongs to a room (its
subpackage). The contract fails on any
cycle between rooms and on any import against the layering below, and names each offending
import as ``file:line``.

The base modules (``errors``, ``_version``, ``display``) sit under everything and import no
room. The display registry and a few lazy accessors load the room above by name, at run
time; they are listed in :data:`BY_NAME` and checked to be exactly
those, so a new by-name load has to be argued for here.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "pinb"

#: Who may never import whom: data flows down, display plugs in from the top.
NEVER: dict[str, set[str]] = {
    "core": {"llm", "agent", "render", "views", "notebook", "analysis", "memory", "cli"}
    | {"testing", "chat"},
    "render": {"views", "notebook", "analysis", "agent", "memory", "cli", "llm", "testing", "chat"},
    "analysis": {"views", "cli", "notebook", "agent", "testing", "chat"},
    "llm": {"agent", "render", "views", "notebook", "analysis", "memory", "cli", "testing", "chat"},
    "agent": {"views", "notebook", "cli", "analysis", "testing", "chat"},
    "memory": {"views", "notebook", "cli", "agent", "testing", "chat"},
    "views": {"notebook", "cli", "testing", "chat"},
    "cli": {"notebook", "testing", "chat"},
    # the chat panel's persona: on the agent and the views, under the notebook (`%pi chat`)
    "chat": {"notebook", "cli", "testing"},
    "notebook": {"testing"},  # test helpers are for tests: nothing in the product uses them
}
#: Modules at the very bottom: no room may be imported by them.
BASE = {"pinb.errors", "pinb._version", "pinb.display"}
#: The facade and ``python -m pinb`` sit on top of everything.
TOP = {"pinb", "pinb.__main__"}
#: Modules that load a room above them by name (``importlib.import_module``), and what.
BY_NAME: dict[str, set[str]] = {
    # lazy facades of a package's own modules (light imports)
    "pinb": {"home"},
    "pinb.core": {"f'.{home}'"},
    "pinb.analysis": {"f'{__name__}.{home}'", "_MOVED[name]"},  # and UsageTotalsView, moved up
    "pinb.memory": {"f'.{home}'"},
    # the one way up: the display registry loads the views on the first display
    "pinb.display": {"VIEWS_MODULE"},
    # Session's convenience accessors, the one way back to what is built on a Session
    "pinb.core.session": {
        "_COMPARE_MODULE",  # Session.compare: pinb.analysis.compare, a room above
        "_FORKS_MODULE",  # Session.fork, .clone: pinb.core.forks, a core module above it
        "_OPERATIONS_MODULE",  # Session.compact, .navigate: pinb.core.compaction.operations
    },
    # a search answered by a scan starts the background build, which is built on the catalog
    "pinb.analysis.searching.index": {"_BUILDING_MODULE"},
}


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    kind: str  # "module", "in-function" or "type-only"
    where: str  # file:line


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        is_package = name.endswith(".__init__")
        found[name.removesuffix(".__init__")] = (path, is_package)
    return found


MODULES = _modules()


def room(module: str) -> str:
    """The subpackage a module belongs to (``base`` / ``top`` for the loose modules)."""
    if module in BASE:
        return "base"
    if module in TOP:
        return "top"
    name = module.split(".")[1]
    return name


class _Walker(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, path: Path) -> None:
        self.module, self.is_package, self.path = module, is_package, path
        self.depth = self.type_only = 0
        self.imports: list[Import] = []
        self.by_name: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            self.type_only += 1
            for child in node.body:
                self.visit(child)
            self.type_only -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = ast.unparse(node.func)
        if func.endswith("import_module") and node.args:
            arg = node.args[0]
            name = arg.value if isinstance(arg, ast.Constant) else ast.unparse(arg)
            self.by_name.add(str(name).replace('"', "'"))
        self.generic_visit(node)

    def _add(self, node: ast.Import | ast.ImportFrom, targets: list[str]) -> None:
        kind = "type-only" if self.type_only else "in-function" if self.depth else "module"
        where = f"{self.path.relative_to(ROOT)}:{node.lineno}"
        for target in targets:
            if target == "pinb" or target.startswith("pinb."):
                self.imports.append(Import(self.module, target, kind, where))

    def visit_Import(self, node: ast.Import) -> None:
        self._add(node, [alias.name for alias in node.names])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        names = [f"{target}.{a.name}" for a in node.names]
        self._add(node, [name if name in MODULES else target for name in names])


def _walk() -> tuple[list[Import], dict[str, set[str]]]:
    imports: list[Import] = []
    by_name: dict[str, set[str]] = {}
    for module, (path, is_package) in MODULES.items():
        walker = _Walker(module, is_package, path)
        walker.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        imports += walker.imports
        if walker.by_name:
            by_name[module] = walker.by_name
    return imports, by_name


IMPORTS, LOADED_BY_NAME = _walk()


def _between_rooms() -> dict[tuple[str, str], list[Import]]:
    edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for imp in IMPORTS:
        a, b = room(imp.source), room(imp.target)
        if a != b:
            edges[(a, b)].append(imp)
    return edges


def _cycles(edges: dict[tuple[str, str], list[Import]]) -> list[list[str]]:
    """Groups of rooms that reach each other (Tarjan's strongly connected components)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def _show(uses: list[Import]) -> str:
    lines = {f"  {u.where} ({u.kind}) {u.source} -> {u.target}" for u in uses}
    return "\n".join(sorted(lines))


def test_the_walk_sees_every_import_kind() -> None:
    kinds = {imp.kind for imp in IMPORTS}
    assert kinds == {"module", "in-function", "type-only"}
    assert len(MODULES) > 100  # the whole package, subpackages included


def test_no_cycle_between_subpackages() -> None:
    edges = _between_rooms()
    report = []
    for group in _cycles(edges):
        report.append("cycle: " + " <-> ".join(group))
        for (a, b), uses in sorted(edges.items()):
            if a in group and b in group:
                report.append(_show(uses))
    assert not report, "\n".join(report)


def test_no_import_against_the_layering() -> None:
    report = []
    for (a, b), uses in sorted(_between_rooms().items()):
        if b in NEVER.get(a, set()) or a == "base" or b == "top":
            report.append(f"{a} -> {b}:\n{_show(uses)}")
    assert not report, "forbidden imports:\n" + "\n".join(report)


def test_loads_by_name_are_the_listed_ones() -> None:
    assert LOADED_BY_NAME == BY_NAME


def test_the_contract_catches_an_upward_import(tmp_path: Path) -> None:
    # The walker on a module that imports the views from inside a function.
    source = tmp_path / "reports.py"
    source.write_text("def show():\n    from ...views import CompactionView\n")
    walker = _Walker("pinb.core.compaction.reports", False, PKG / "core" / "reports.py")
    walker.path = PKG / "core" / "reports.py"
    walker.visit(ast.parse(source.read_text()))
    (imp,) = walker.imports
    assert (room(imp.source), room(imp.target), imp.kind) == ("core", "views", "in-function")
    assert "views" in NEVER["core"]
    cyclic = {("a", "b"): [imp], ("b", "c"): [imp], ("c", "a"): [imp]}
    assert _cycles(cyclic) == [["a", "b", "c"]]


def _member(package: str, module: str) -> str | None:
    """The direct member of ``package`` (a module or a sub-package) that holds ``module``."""
    if not module.startswith(package + "."):
        return None
    head = f"{package}.{module[len(package) + 1 :].split('.')[0]}"
    return head if head in MODULES else None


def _inside(package: str) -> dict[tuple[str, str], list[Import]]:
    """Imports between the members of one package; its ``__init__`` (the facade) left out."""
    edges: dict[tuple[str, str], list[Import]] = defaultdict(list)
    for imp in IMPORTS:
        a, b = _member(package, imp.source), _member(package, imp.target)
        if a and b and a != b:
            edges[(a, b)].append(imp)
    return edges


PACKAGES = sorted(name for name, (_, is_package) in MODULES.items() if is_package)


def test_no_cycle_inside_a_package() -> None:
    # Inside a room as between rooms: a module that needs another's work sits above it, so
    # a reader can learn a package bottom-up and a change has one direction to travel.
    report = []
    for package in PACKAGES:
        edges = _inside(package)
        for group in _cycles(edges):
            report.append(f"cycle in {package}: " + " <-> ".join(group))
            for (a, b), uses in sorted(edges.items()):
                if a in group and b in group:
                    report.append(_show(uses))
    assert not report, "\n".join(report)


#: A folder holding more than this many modules is a flat list: split it by jobs.
MOST_MODULES = 20


def test_no_package_is_a_flat_list() -> None:
    sizes = {
        package: sum(1 for m in MODULES if m.rsplit(".", 1)[0] == package and m not in PACKAGES)
        for package in PACKAGES
    }
    assert {p: n for p, n in sizes.items() if n > MOST_MODULES} == {}


def test_the_package_check_sees_imports_inside_a_room() -> None:
    # restore takes remove's errors: one edge inside core/file, none for the facade
    edges = _inside("pinb.core.file")
    assert ("pinb.core.file.restore", "pinb.core.file.remove") in edges
    assert not any("pinb.core.file" in pair for pair in edges)
    # a sub-package counts as one member of its parent
    assert _member("pinb.core", "pinb.core.file.read") == "pinb.core.file"


def test_the_testing_package_hands_out_the_llm_layers_scripted_model() -> None:
    from pinb.llm.providers.scripted import ScriptedLLM
    from pinb.testing import ScriptedLLM as TestingScriptedLLM

    assert TestingScriptedLLM is ScriptedLLM
