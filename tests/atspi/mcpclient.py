"""The AT-SPI server as a child process for its tests: :class:`dhtest.mcpstdio.McpChild` with
``python -m deskhand_d.programs.atspi``, stderr kept in a file, and :meth:`Server.tool`
answering ``(text, image blocks, is_error)``, and :func:`serving` for a module's fixture.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dhtest.mcpstdio import McpChild

ROOT = Path(__file__).resolve().parents[2]


class Server(McpChild):
    def __init__(self, env: dict[str, str], *args: str, stderr: Path | None = None) -> None:
        argv = [sys.executable, "-m", "deskhand_d.programs.atspi", *args]
        super().__init__(argv, env, cwd=ROOT, initialize=False, stderr_path=stderr)

    def tool(
        self, name: str, timeout: float = 60.0, **arguments: Any
    ) -> tuple[str, list[dict[str, Any]], bool]:
        result = self.call(name, timeout, **arguments)
        images = [c for c in result.raw.get("content", []) if c.get("type") == "image"]
        return result.text, images, result.is_error


@contextmanager
def serving(env: dict[str, str], root: Path) -> Iterator[Server]:
    """The server on a private desktop, initialised, its stderr in ``root/server.err``;
    closed afterwards, which must end it cleanly (exit status 0)."""
    s = Server(env, stderr=root / "server.err")
    s.initialize()
    try:
        yield s
    finally:
        assert s.close() == 0, s.stderr_text()
