"""The backend programs stand apart: the daemon imports no simulator (nor the server core the
backends share, so a client bug is never mirrored by the server it talks to), neither backend
imports the other, and the consent layer knows the simulator's apps from the data it ships.

The import graph is read from the source (every ``import``, in functions and ``TYPE_CHECKING``
blocks too), so an import that only runs on some path still counts."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable
from pathlib import Path

import deskhand_d
from deskhand_d.consent.catalog import CatalogPlatform
from deskhand_d.programs.sim.catalog import default_entries

PACKAGE = Path(deskhand_d.__file__).parent
SIM = "deskhand_d.programs.sim"
ATSPI = "deskhand_d.programs.atspi"
CORE = "deskhand_d.programs.core"


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}


def _imported(name: str) -> set[str]:
    """The deskhand_d modules that importing ``name`` runs (parent packages included)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    modules: set[str] = set()
    for target in found:
        parts = target.split(".")
        modules.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {m for m in modules if m in MODULES and m != name}


GRAPH = {name: _imported(name) for name in MODULES}


def _inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _reach(roots: Iterable[str], banned: tuple[str, ...]) -> list[str]:
    """Import chains from ``roots`` into any of the ``banned`` packages (empty when none)."""
    came_from: dict[str, str | None] = dict.fromkeys(roots)
    queue = deque(came_from)
    chains = []
    while queue:
        name = queue.popleft()
        if any(_inside(name, b) for b in banned):
            chain, at = [], name
            while at is not None:
                chain.append(at)
                at = came_from[at]
            chains.append(" <- ".join(chain))
            continue
        for target in sorted(GRAPH[name]):
            if target not in came_from:
                came_from[target] = name
                queue.append(target)
    return chains


def test_the_graph_sees_every_kind_of_import() -> None:
    """Lazy, relative and parent-package imports are all edges (else the checks prove nothing)."""
    assert f"{ATSPI}.x11" in GRAPH["deskhand_d.backends.desktopprobe"]  # inside a function
    assert f"{CORE}.server" in GRAPH[f"{SIM}.__main__"]  # relative, two levels
    assert {ATSPI, "deskhand_d.programs"} <= GRAPH[f"{ATSPI}.server"]  # parent packages
    assert "deskhand_d.consent.catalog" in GRAPH["deskhand_d.consent.platforms"]


def test_the_daemon_imports_no_simulator_and_no_server_core() -> None:
    """Every module outside the backend programs reaches neither the simulator nor the server
    core, not even through the AT-SPI modules the desktop checks borrow."""
    daemon = [n for n in MODULES if not any(_inside(n, p) for p in (SIM, ATSPI, CORE))]
    assert "deskhand_d.app" in daemon and "deskhand_d.consent.catalog" in daemon
    assert _reach(daemon, (SIM, CORE)) == []


def test_neither_backend_imports_the_other() -> None:
    """The simulator and the AT-SPI server share only the core (and the daemon's tool surface)."""
    sim = [n for n in MODULES if _inside(n, SIM)]
    atspi = [n for n in MODULES if _inside(n, ATSPI)]
    assert _reach(sim, (ATSPI,)) == []
    assert _reach(atspi, (SIM,)) == []


def test_the_consent_catalogue_is_the_simulators_app_list() -> None:
    """Each app the simulator serves has a signed identity, found by every name the simulator
    accepts for it: the consent layer reads the catalogue the simulator ships."""
    platform = CatalogPlatform()
    entries = default_entries()
    assert {e.bundle_id for e in entries} >= {"com.apple.calculator", "com.googlecode.iterm2"}
    for e in entries:
        for name in (e.name, e.zh_name, e.bundle_id, e.path, e.path + "/"):
            identity = platform.identify(name)
            assert identity.path == f"{e.path}/Contents/MacOS/{e.name}"
            assert identity.kind == "signed" and e.bundle_id in identity.detail
