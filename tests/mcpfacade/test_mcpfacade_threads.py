"""The facade's shared state under threads: one Link however many threads ask for it first."""

from __future__ import annotations

import io
import threading
import time
from typing import Any

import pytest
from deskhandctl.facade import link as mcplink
from deskhandctl.facade.core import Host
from deskhandctl.facade.server import Server


def test_link_is_made_once_when_threads_ask_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader thread and the workers may call Server.link() together: they all get the
    same Link (two would be two daemon sessions)."""
    made: list[object] = []

    class SlowLink:
        def __init__(self, **kwargs: Any) -> None:
            time.sleep(0.05)  # widen the window between the check and the assignment
            made.append(self)

    monkeypatch.setattr(mcplink, "Link", SlowLink)
    server = Server(io.BytesIO(), socket_path="/nonexistent/s", autostart=False, version="t")
    server.host = Host(revision="2025-11-25", name="h", version="1", elicitation=False)
    got: list[object] = []
    start = threading.Barrier(6)

    def ask() -> None:
        start.wait()
        got.append(server.link())

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert len(made) == 1
    assert got == [made[0]] * 6
