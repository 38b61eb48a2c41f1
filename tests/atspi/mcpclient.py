"""A small blocking MCP client for driving the AT-SPI server as a real child process.

It speaks newline-delimited JSON-RPC on the child's stdin/stdout, keeps stderr in a file, and
offers :meth:`Server.tool` returning ``(text, images, is_error)``. Independent of Deskhand's own
MCP client on purpose, so the server is checked against plain bytes.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


class Server:
    def __init__(self, env: dict[str, str], *args: str, stderr: Path | None = None) -> None:
        self.stderr_path = stderr
        err = open(stderr, "wb") if stderr else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deskhand_d.backends.atspi", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=ROOT,
            env=env,
        )
        if stderr:
            err.close()  # type: ignore[union-attr]
        self._buf = b""
        self._next = 0
        os.set_blocking(self.proc.stdout.fileno(), False)  # type: ignore[union-attr]

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        try:
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no answer from the server in time")
                if sel.select(left):
                    chunk = self.proc.stdout.read()
                    if chunk == b"":
                        raise EOFError(f"server exited ({self.proc.poll()})")
                    if chunk:
                        self._buf += chunk
            line, _, self._buf = self._buf.partition(b"\n")
            return line
        finally:
            sel.close()

    def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0
    ) -> dict[str, Any]:
        self._next += 1
        rid = self._next
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        deadline = time.monotonic() + timeout
        while True:
            reply = json.loads(self._line(deadline))
            if reply.get("id") == rid and "method" not in reply:
                return reply  # type: ignore[no-any-return]

    def initialize(self) -> dict[str, Any]:
        reply = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def tool(
        self, name: str, timeout: float = 60.0, **arguments: Any
    ) -> tuple[str, list[dict[str, Any]], bool]:
        reply = self.request("tools/call", {"name": name, "arguments": arguments}, timeout)
        result = reply["result"]
        text = "\n".join(c["text"] for c in result["content"] if c["type"] == "text")
        images = [c for c in result["content"] if c["type"] == "image"]
        return text, images, bool(result.get("isError"))

    def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code

    def stderr_text(self) -> str:
        return (
            self.stderr_path.read_text(errors="replace")
            if self.stderr_path and self.stderr_path.exists()
            else ""
        )
