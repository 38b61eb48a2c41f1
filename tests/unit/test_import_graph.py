"""No module of the daemon or the CLI imports one that imports it back, directly or through
others, counting imports under ``TYPE_CHECKING`` too: a circle means a responsibility sits in
the wrong place (docs/design.md, "Layout")."""

from __future__ import annotations

import ast
from pathlib import Path

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
