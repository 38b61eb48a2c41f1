"""Saved ("always allow") grants: ``grants.json`` beside the config, and its one mutation queue.

A saved grant is the person's lasting consent for one verifiable identity (see
:mod:`.identity`): the key covers the canonical path and the signing requirement or package,
never a display name. Revoking keeps the entry (marked ``revoked_at``) so that ``restore`` can
bring exactly that identity back; nothing here ever deletes a grant.

The file is owner-only and replaced atomically under a cross-process lock
(:mod:`deskhand_d.privatefile`). Every mutation re-reads the file inside the lock, so changes
made by other processes in between are kept; a corrupt, symlinked or group/other-readable file
is refused with a clear error and never overwritten. Inside the daemon, mutations also run one
at a time (:class:`GrantsStore` serializes them on a trio lock and runs the file work in a
worker thread), so two answers arriving together cannot interleave.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TypeVar

import msgspec
import trio

from deskhand_d import paths
from deskhand_d.consent.identity import AppIdentity, Kind
from deskhand_d.errors import GrantNotFound, GrantsFileError
from deskhand_d.privatefile import PrivateFile

GRANTS_FILE_NAME = "grants.json"
MAX_GRANTS = 200
MAX_FILE_BYTES = 131_072
LOCK_WAIT_S = 10.0

T = TypeVar("T")


class SavedGrant(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    app: str  # the name the person saw when they said "always"; informational only
    path: str
    kind: Literal["signed", "package"]
    key: str
    signer: str = ""
    detail: str = ""
    granted_at: str
    revoked_at: str | None = None
    restored_at: str | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def names(self, given: str) -> bool:
        """Does ``given`` (from ``grants revoke|restore``) name this grant? Name or path."""
        want = given.strip().rstrip("/").casefold()
        return bool(want) and want in {self.app.casefold(), self.path.casefold()}


class _Document(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    version: Literal[1]
    grants: list[SavedGrant]


def default_grants_path(env: Mapping[str, str] = os.environ) -> Path:
    return paths.profile_dir(env) / GRANTS_FILE_NAME


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class GrantsFile:
    """Synchronous access to ``grants.json`` (safe from several processes at once)."""

    def __init__(self, path: Path | str, *, lock_wait_s: float = LOCK_WAIT_S) -> None:
        self._file = PrivateFile(
            path, max_bytes=MAX_FILE_BYTES, lock_wait_s=lock_wait_s, error=self._error
        )
        self.path = self._file.path

    def read(self) -> list[SavedGrant]:
        """Every saved grant, active or revoked, in file order; a missing file means none."""
        data = self._file.read_bytes()
        if data is None:
            return []
        try:
            doc = msgspec.json.decode(data, type=_Document)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise self._error(
                "corrupt",
                f'{self.path} must hold {{"version": 1, "grants": [...]}} ({exc}); fix or '
                "move it away",
            ) from None
        if len(doc.grants) > MAX_GRANTS:
            raise self._error("corrupt", f"{self.path} holds more than {MAX_GRANTS} grants")
        return doc.grants

    def add(self, identity: AppIdentity) -> tuple[SavedGrant, bool]:
        """Save an "always allow" for ``identity``. Returns (grant, changed).

        An active grant for the same key is left alone; a revoked one becomes active again
        (the person has just said "always" for exactly this identity).
        """
        if not identity.verifiable:
            raise ValueError("content identities cannot have saved grants")
        kind: Kind = identity.kind
        assert kind != "content"
        with self._file.locked():
            grants = self.read()
            for i, g in enumerate(grants):
                if g.key == identity.key:
                    if g.active:
                        return g, False
                    grants[i] = msgspec.structs.replace(g, revoked_at=None, restored_at=_now())
                    self._write(grants)
                    return grants[i], True
            if len(grants) >= MAX_GRANTS:
                raise self._error("limit", f"{self.path} already holds {MAX_GRANTS} grants")
            grant = SavedGrant(
                app=identity.app,
                path=identity.path,
                kind=kind,
                key=identity.key,
                signer=identity.signer,
                detail=identity.detail,
                granted_at=_now(),
            )
            grants.append(grant)
            self._write(grants)
            return grant, True

    def revoke(self, given: str) -> list[SavedGrant]:
        """Revoke every active grant ``given`` names. Raises GrantNotFound if there is none."""
        return self._flip(given, revoke=True)

    def revoke_keys(self, keys: set[str]) -> list[SavedGrant]:
        """Revoke the active grants with these keys (revocations already in force in the
        daemon); grants that are gone or already revoked are left as they are."""
        with self._file.locked():
            grants = self.read()
            changed: list[SavedGrant] = []
            for i, g in enumerate(grants):
                if g.active and g.key in keys:
                    grants[i] = msgspec.structs.replace(g, revoked_at=_now())
                    changed.append(grants[i])
            if changed:
                self._write(grants)
            return changed

    def restore(self, given: str) -> list[SavedGrant]:
        """Reactivate every revoked grant ``given`` names. Raises GrantNotFound if none."""
        return self._flip(given, revoke=False)

    def _flip(self, given: str, *, revoke: bool) -> list[SavedGrant]:
        with self._file.locked():
            grants = self.read()
            changed: list[SavedGrant] = []
            for i, g in enumerate(grants):
                if g.names(given) and g.active == revoke:
                    now = _now()
                    grants[i] = (
                        msgspec.structs.replace(g, revoked_at=now)
                        if revoke
                        else msgspec.structs.replace(g, revoked_at=None, restored_at=now)
                    )
                    changed.append(grants[i])
            if not changed:
                state = "active" if revoke else "revoked"
                raise GrantNotFound(
                    f"no {state} saved grant matches {given!r}; `deskhandctl grants list` shows "
                    "the names and paths you can use",
                    data={"app": given},
                )
            self._write(grants)
            return changed

    def _write(self, grants: list[SavedGrant]) -> None:
        body = msgspec.json.format(msgspec.json.encode(_Document(1, grants)), indent=2)
        self._file.replace(body + b"\n")

    def _error(self, reason: str, message: str) -> GrantsFileError:
        return GrantsFileError(
            f"{message}. Nothing was changed.", data={"path": str(self.path), "reason": reason}
        )


class GrantsStore:
    """The daemon's view: one mutation at a time, file work off the event loop."""

    def __init__(self, file: GrantsFile) -> None:
        self.file = file
        self._mutations = trio.Lock()

    @property
    def path(self) -> Path:
        return self.file.path

    def read(self) -> list[SavedGrant]:
        return self.file.read()

    async def mutate(self, change: Callable[[GrantsFile], T]) -> T:
        """Run one mutation (which re-reads the file itself) after every earlier one."""
        async with self._mutations:
            return await trio.to_thread.run_sync(change, self.file)
