"""Asking codex how it spells its options never holds up the daemon (issue 25 §2).

Before Sky's first start with a codex build, the daemon runs ``codex --version`` and ``codex
sandbox --help``. A codex that never answers (here the fake's ``FAKE_CODEX_HELP=hangs``) is
given up after the probe's limit; meanwhile every other client must still be served, the
emergency stop first among them. Before the fix the question ran on the daemon's event loop:
another client's ping waited until the hanging ``--help`` was killed.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Iterator

import pytest
from dhtest import skyfake
from dhtest.daemon import DaemonProc, short_tmpdir, spawn_daemon
from dhtest.desk import open_client
from dhtest.wsclient import SyncClient


@pytest.fixture
def daemon() -> Iterator[tuple[DaemonProc, skyfake.SkyFake]]:
    root = short_tmpdir()
    fake = skyfake.install(root)
    d = spawn_daemon(
        root, extra_env={"DESKHAND_BACKEND": "sky", **fake.env, "FAKE_CODEX_HELP": "hangs"}
    )
    try:
        yield d, fake
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(10)
        pid = _hanging_help(fake)
        if pid is not None and _alive(pid):
            os.kill(pid, 9)  # its asker went with the daemon
        shutil.rmtree(root, ignore_errors=True)


def _hanging_help(fake: skyfake.SkyFake) -> int | None:
    """The pid of the ``--help`` run that is waiting, once the daemon has started one."""
    if not fake.codex_log.exists():
        return None
    for line in fake.codex_log.read_text().splitlines():
        call = json.loads(line)
        if call["argv"][-1] == "--help":
            return int(call["pid"])
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_other_clients_are_served_while_codex_does_not_answer(
    daemon: tuple[DaemonProc, skyfake.SkyFake],
) -> None:
    d, fake = daemon
    replies: list[dict[str, object]] = []

    def first_call() -> None:
        c = open_client(d.socket, "first", answers=False, name="first")
        try:
            replies.append(c.call("list_apps"))
        finally:
            c.close()

    starter = threading.Thread(target=first_call, daemon=True)
    starter.start()
    deadline = time.monotonic() + 30
    while (pid := _hanging_help(fake)) is None:
        assert time.monotonic() < deadline, "the daemon never asked codex for its help"
        time.sleep(0.05)
    with SyncClient(d.socket, name="bystander", timeout=60) as other:
        assert other.call("ping", data="here")["result"]["data"] == "here"
        # Answered while the question to codex still hangs: it did not wait for it.
        assert _alive(pid), "the ping was answered only after codex's --help was given up"
        stopped = other.call("stop")
        assert stopped["type"] == "result", stopped
        assert _alive(pid)
    starter.join(90)
    assert not starter.is_alive()
    assert replies, "the first call got no reply"
