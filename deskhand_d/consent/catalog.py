"""Identities from a catalogue instead of the file system: the simulated desktop's apps.

The simulator's apps have no executables on this machine, so their identities come from a
catalogue: by default one built from the app list the simulator ships as data
(``deskhand_d/programs/sim/catalog.json``, read as a file: the daemon imports no simulator
code), system apps signed by Apple and iTerm2 by its team; or a JSON file named by
``DESKHAND_IDENTITY_CATALOG`` or ``consent.catalog``, which tests use to stage signed apps,
impostors, copies and unsigned builds. The file is re-read whenever it changes, so a test can
re-sign an app under a running daemon. Format::

    {"version": 1, "apps": [
      {"names": ["Calculator", "com.apple.calculator"],
       "path": "/System/Applications/Calculator.app/Contents/MacOS/Calculator",
       "requirement": "identifier \\"com.apple.calculator\\" and anchor apple",
       "signer": "Apple", "pid": null}]}

An entry has exactly one of ``requirement`` (a verified signature), ``package`` (a system
package) or ``content_sha256`` (unverifiable). ``pid`` is the running instance, if any.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Hashable
from importlib import resources
from pathlib import Path

import msgspec

from deskhand_d.consent import identity as ident
from deskhand_d.consent.identity import AppIdentity, IdentityUnavailable, Instance


class Entry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    names: list[str]
    path: str
    requirement: str | None = None
    signer: str = ""
    package: str | None = None
    content_sha256: str | None = None
    pid: int | None = None


class Catalog(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    version: int
    apps: list[Entry]


# The simulator's app catalogue, shipped as data beside it (format in its catalog.py).
SIM_APPS = resources.files("deskhand_d.programs") / "sim" / "catalog.json"


class _SimApp(msgspec.Struct, frozen=True):
    """What identities need of a simulated app (the simulator's other fields are its own)."""

    name: str
    zh_name: str
    bundle_id: str
    path: str


class _SimApps(msgspec.Struct, frozen=True):
    version: int
    apps: list[_SimApp]


def sim_catalog() -> Catalog:
    """The simulator's apps as signed apps."""
    apps = []
    for e in msgspec.json.decode(SIM_APPS.read_bytes(), type=_SimApps).apps:
        exe = f"{e.path.rstrip('/')}/Contents/MacOS/{e.name}"
        if e.bundle_id.startswith("com.apple."):
            req, signer = f'identifier "{e.bundle_id}" and anchor apple', "Apple"
        else:
            team = "BPZ3QJ4CYT"  # a made-up team id for the simulated third-party app
            req = (
                f'anchor apple generic and identifier "{e.bundle_id}" and '
                f"certificate leaf[subject.OU] = {team}"
            )
            signer = team
        names = [e.name, e.zh_name, e.bundle_id, e.path]
        apps.append(Entry(names=names, path=exe, requirement=req, signer=signer))
    return Catalog(version=1, apps=apps)


class CatalogPlatform:
    name = "catalog"

    def __init__(self, file: Path | str | None = None) -> None:
        self.file = Path(file) if file else None
        self._loaded: tuple[Hashable, Catalog] | None = None

    def _stamp(self) -> Hashable:
        if self.file is None:
            return None
        try:
            st = os.stat(self.file)
        except OSError:
            return "missing"
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def catalog(self) -> Catalog:
        stamp = self._stamp()
        if self._loaded is not None and self._loaded[0] == stamp:
            return self._loaded[1]
        if self.file is None:
            cat = sim_catalog()
        else:
            try:
                cat = msgspec.json.decode(self.file.read_bytes(), type=Catalog)
            except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                raise IdentityUnavailable(
                    f"the identity catalogue {self.file} is unreadable ({exc}); fix it"
                ) from None
        self._loaded = (stamp, cat)
        return cat

    def _entry(self, app: str) -> Entry:
        want = app.strip().rstrip("/").casefold()
        for e in self.catalog().apps:
            if want in {n.rstrip("/").casefold() for n in e.names} or want == e.path.casefold():
                return e
        raise IdentityUnavailable(
            f"{app!r} is not an app this desktop knows; give its name, bundle id or path as "
            "`list_apps` shows it"
        )

    def identify(self, app: str) -> AppIdentity:
        e = self._entry(app)
        if e.requirement is not None:
            return ident.signed(app, e.path, e.requirement, signer=e.signer)
        if e.package is not None:
            return ident.package(app, e.path, e.package)
        # A catalogue may leave the content digest out; one derived from the path stands in.
        digest = e.content_sha256 or hashlib.sha256(f"content:{e.path}".encode()).hexdigest()
        return ident.content(app, e.path, digest, why="not signed")

    def stamp(self, identity: AppIdentity) -> Hashable:
        return self._stamp()

    def instance(self, identity: AppIdentity) -> Instance | None:
        for e in self.catalog().apps:
            if e.path == identity.path and e.pid is not None:
                return Instance(e.pid, "catalog")
        return None
