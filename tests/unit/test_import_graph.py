"""The import graph of the daemon and the CLI, held to docs/design.md's "Layout".

No module imports one that imports it back, directly or through others, counting imports under
``TYPE_CHECKING`` too: a circle means a responsibility sits in the wrong place. And every
import between two top-level parts of ``deskhand_d`` runs to a lower floor of design.md's
table (never sideways or up), the backend programs import only what that page allows them,
and nothing in the daemon imports the CLI. The floors are read from design.md itself, so the
page and the code cannot drift apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = (ROOT / "deskhand_d", ROOT / "clients" / "deskhandctl")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        base = package.parent
        for path in package.rglob("*.py"):
            parts = path.relative_to(base).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules ``name`` imports (a ``from`` import names its package too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                up = parts[: len(parts) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        out.update(t for t in targets if t in known and t != name)
    return out


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Groups of modules that reach each other (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
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

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def test_the_reader_finds_a_circle_when_there_is_one() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(edges) == [["a", "b", "c"]]


def test_the_reader_sees_type_checking_and_relative_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "one.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.two import X\n"
    )
    (pkg / "two.py").write_text("from . import one\nfrom .one import thing\n")
    known = {"pkg", "pkg.one", "pkg.two"}
    assert _imports("pkg.one", pkg / "one.py", known) == {"pkg.two"}
    assert _imports("pkg.two", pkg / "two.py", known) == {"pkg", "pkg.one"}


def test_no_module_imports_one_that_imports_it_back() -> None:
    modules = _modules()
    assert len(modules) > 150  # the whole tree was read
    edges = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    assert _circles(edges) == []


DESIGN = ROOT / "docs" / "design.md"
# What the backend programs may import besides themselves (design.md, "The backend programs
# stand apart"): the contract both sides keep and three formats at the bottom of the package.
PROGRAMS_MAY_IMPORT = (
    "deskhand_d",
    "deskhand_d.surface",
    "deskhand_d.desktopentry",
    "deskhand_d.sessionkind",
    "deskhand_d.paths",
)


def _floors(text: str) -> dict[str, int]:
    """``deskhand_d``'s top-level parts and their floors, from the table under "## Layout"."""
    section = text.split("## Layout", 1)[1].split("\n## ", 1)[0]
    floors: dict[str, int] = {}
    for match in re.finditer(r"^\| (\d+) \| ([^|]+) \|", section, re.MULTILINE):
        for name in re.findall(r"`([a-z_]+)`", match.group(2)):
            assert name not in floors, f"{name} stands on two floors of design.md's table"
            floors[name] = int(match.group(1))
    return floors


def _part(module: str) -> str:
    """The top-level part a module belongs to: ``deskhand_d.native.queue`` → ``native``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _wrong_way(edges: dict[str, set[str]], floors: dict[str, int]) -> list[str]:
    """Imports between two parts that do not run to a lower floor."""
    found = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            a, b = _part(source), _part(target)
            if a and b and a != b and floors[a] <= floors[b]:
                found.append(f"{source} (floor {floors[a]}) -> {target} (floor {floors[b]})")
    return found


def _daemon_edges() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: _imports(name, path, set(modules))
        for name, path in modules.items()
        if name.split(".")[0] == "deskhand_d"
    }


def test_the_floor_check_finds_an_import_that_runs_up_or_sideways() -> None:
    floors = {"low": 1, "mid": 2, "high": 3, "twin": 2}
    edges = {
        "deskhand_d.high.a": {"deskhand_d.mid.b", "deskhand_d.low"},  # down: fine
        "deskhand_d.mid.b": {"deskhand_d.high.a", "deskhand_d.twin.c", "deskhand_d.mid.d"},
        "deskhand_d.low": {"deskhand_d"},  # the package itself holds only the version
    }
    assert _wrong_way(edges, floors) == [
        "deskhand_d.mid.b (floor 2) -> deskhand_d.high.a (floor 3)",
        "deskhand_d.mid.b (floor 2) -> deskhand_d.twin.c (floor 2)",
    ]


def test_design_md_places_every_part_of_the_daemon_on_one_floor() -> None:
    floors = _floors(DESIGN.read_text(encoding="utf-8"))
    parts = {_part(name) for name in _daemon_edges()} - {""}
    assert sorted(parts - set(floors)) == [], "parts missing from design.md's floor table"
    assert sorted(set(floors) - parts) == [], "design.md's floor table names parts that are gone"


def test_every_import_in_the_daemon_runs_down_the_floors_of_design_md() -> None:
    floors = _floors(DESIGN.read_text(encoding="utf-8"))
    edges = _daemon_edges()
    assert len(edges) > 150
    assert _wrong_way(edges, floors) == []


@pytest.mark.parametrize("program", ["core", "atspi", "sim", "xsession"])
def test_the_backend_programs_import_nothing_of_the_daemon(program: str) -> None:
    edges = _daemon_edges()
    prefix = f"deskhand_d.programs.{program}"
    mine = [name for name in edges if name == prefix or name.startswith(prefix + ".")]
    assert mine
    outside = {
        f"{name} -> {target}"
        for name in mine
        for target in edges[name]
        if not target.startswith("deskhand_d.programs") and target not in PROGRAMS_MAY_IMPORT
    }
    assert sorted(outside) == []


def test_nothing_in_the_daemon_imports_the_cli() -> None:
    modules = _modules()
    known = set(modules)
    cli = {name for name in known if name.split(".")[0] == "deskhandctl"}
    assert cli, "the CLI's modules were read too"
    edges = _daemon_edges()
    assert sorted(f"{n} -> {t}" for n, e in edges.items() for t in e if t in cli) == []
