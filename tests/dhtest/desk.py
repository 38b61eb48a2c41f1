"""A real daemon on the simulated desktop, with clients and the simulator's call record."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deskhand_d.consent.catalog import CatalogPlatform
from deskhand_d.consent.grants import GrantsFile
from dhtest.daemon import DaemonProc, short_tmpdir, spawn_daemon
from dhtest.wsclient import SyncClient

SIM_APPS = ("Calculator", "TextEdit", "Calendar")


def save_grants(config_home: Path, apps: tuple[str, ...], catalog: Path | None = None) -> Path:
    """Saved grants for ``apps`` (as the person's "always" would leave them)."""
    store = GrantsFile(config_home / "deskhand" / "grants.json")
    platform = CatalogPlatform(catalog)
    for app in apps:
        store.add(platform.identify(app))
    return store.path


def open_client(socket: Path, session: str, *, answers: bool, name: str) -> SyncClient:
    """A connected client that said hello for ``session``."""
    c = SyncClient(socket, hello=False)
    r = c.call(
        "hello",
        protocol=1,
        client={"name": name, "kind": "test"},
        can_answer_questions=answers,
        session=session,
    )
    assert r["type"] == "result", r
    return c


def wait_status(
    c: SyncClient,
    condition: Callable[[dict[str, Any]], bool],
    limit: float = 20,
) -> dict[str, Any]:
    """Ask ``status`` until ``condition`` holds for it (the daemon says where the queue is);
    that status."""
    deadline = time.monotonic() + limit
    while not condition(status := c.call("status")["result"]):
        assert time.monotonic() < deadline, f"status never matched: {status}"
        time.sleep(0.01)  # the daemon's queue moves with a backend process: no event to wait on
    return dict(status)


class Desk:
    def __init__(self, d: DaemonProc, record: Path) -> None:
        self.d = d
        self.record = record
        self.clients: list[SyncClient] = []
        self.root = d.root

    def client(self, session: str = "", *, answers: bool = False, name: str = "test") -> SyncClient:
        c = open_client(self.d.socket, session, answers=answers, name=name)
        self.clients.append(c)
        return c

    def calls(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        rows = [json.loads(x) for x in self.record.read_text().splitlines() if x.strip()]
        return [r for r in rows if r["event"] == "call_start"]


@pytest.fixture
def desk_factory() -> Iterator[Any]:
    roots: list[Path] = []
    procs: list[DaemonProc] = []
    desks: list[Desk] = []

    def make(
        scenario: dict[str, Any] | None = None,
        *,
        config: str = "",
        grants: tuple[str, ...] = SIM_APPS,
        **env: str,
    ) -> Desk:
        """A daemon on the simulator. ``grants``: apps given a saved consent grant first (the
        consent tests pass ``()`` and answer the questions themselves)."""
        root = short_tmpdir()
        roots.append(root)
        if grants:
            save_grants(root / "config", grants)
        if config:
            conf = root / "config" / "deskhand"
            conf.mkdir(parents=True, mode=0o700, exist_ok=True)
            (conf / "config.toml").write_text(config)
        record = root / "record.jsonl"
        extra = {"DESKHAND_BACKEND": "sim", "DESKHAND_SIM_RECORD": str(record), **env}
        if scenario is not None:
            extra["DESKHAND_SIM_SCENARIO"] = json.dumps(scenario)
        d = spawn_daemon(root, extra_env=extra)
        procs.append(d)
        desks.append(Desk(d, record))
        return desks[-1]

    yield make
    for desk in desks:
        for c in desk.clients:
            c.sock.close()
    for p in procs:
        if p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait(10)
    for r in roots:
        shutil.rmtree(r, ignore_errors=True)
