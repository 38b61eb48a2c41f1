"""What identifies a target app for consent, and the platform interface that produces it. Pure.

A display name never establishes identity. An identity is the app's canonical executable path
plus something the person's agent cannot forge from the same user account:

* ``signed`` (macOS): the bundle's verified designated requirement. The saved key is SHA-256
  over (path, requirement), so a copy at another path is a different app, a re-signed impostor
  at the same path is a different app, and a signed update that still satisfies the
  requirement keeps its grant.
* ``package`` (Linux): a root-owned executable the user cannot write, owned by a system
  package. The saved key is SHA-256 over (path, package name).
* ``content``: anything unverifiable (unsigned, ad-hoc signed, user-writable, no package). The
  key is the executable's content SHA-256; such an identity can only get task access, bound to
  the running process instance once there is one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from typing import Literal, Protocol

import msgspec

Kind = Literal["signed", "package", "content"]


class AppIdentity(msgspec.Struct, frozen=True, kw_only=True):
    app: str  # what was asked for; shown to the person, never used to decide
    path: str  # canonical executable path
    kind: Kind
    key: str  # sha256 hex: saved identity (signed/package) or content digest
    signer: str = ""  # signing team / "Apple" / package name, for the question text
    detail: str = ""  # designated requirement or package, for `grants list`
    bundle: str = ""  # macOS bundle path or Linux desktop entry, if any

    @property
    def verifiable(self) -> bool:
        """May this identity have a saved ("always allow") grant?"""
        return self.kind != "content"

    def describe(self) -> str:
        """One line for the person: the path and what vouches for it."""
        if self.kind == "signed":
            return f"{self.path} (signed by {self.signer or 'an unnamed team'})"
        if self.kind == "package":
            return f"{self.path} (from the system package {self.signer})"
        return f"{self.path} (unverified; content SHA-256 {self.key[:16]}…)"


class Instance(msgspec.Struct, frozen=True):
    """One running process of an executable: pid plus its start time (pids get reused)."""

    pid: int
    started: str

    @property
    def token(self) -> str:
        return f"{self.pid}@{self.started}"


def _digest(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogateescape")
        h.update(len(data).to_bytes(8, "big"))  # length-prefixed: no ambiguity between fields
        h.update(data)
    return h.hexdigest()


def signed(app: str, path: str, requirement: str, *, signer: str, bundle: str = "") -> AppIdentity:
    return AppIdentity(
        app=app,
        path=path,
        kind="signed",
        key=_digest("signed", path, requirement),
        signer=signer,
        detail=requirement,
        bundle=bundle,
    )


def package(app: str, path: str, name: str, *, bundle: str = "") -> AppIdentity:
    return AppIdentity(
        app=app,
        path=path,
        kind="package",
        key=_digest("package", path, name),
        signer=name,
        detail=f"package {name}",
        bundle=bundle,
    )


def content(app: str, path: str, sha256_hex: str, *, why: str, bundle: str = "") -> AppIdentity:
    return AppIdentity(
        app=app, path=path, kind="content", key=sha256_hex, detail=why, bundle=bundle
    )


class IdentityUnavailable(Exception):
    """The app could not be resolved to an executable without launching it (message says why)."""


class IdentityPlatform(Protocol):
    """How a platform resolves apps. Blocking calls: the gate runs them in a worker thread.

    ``identify`` must never launch the app. ``stamp`` is a cheap change detector for a
    resolved identity (a stat of the executable, say): while it is unchanged the gate may
    reuse the identity instead of verifying the signature again.
    """

    name: str

    def identify(self, app: str) -> AppIdentity: ...

    def stamp(self, identity: AppIdentity) -> Hashable: ...

    def instance(self, identity: AppIdentity) -> Instance | None: ...
