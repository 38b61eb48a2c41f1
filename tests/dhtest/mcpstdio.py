"""A small synchronous MCP client over a child process's stdin and stdout, for backend tests.

It speaks newline-delimited JSON-RPC exactly as a backend expects (initialize, the initialized
notification, tools/list, tools/call) and nothing more, so the same tests can drive any backend
command: the simulator, the AT-SPI server, or a future one. It is independent of Deskhand's own
MCP client on purpose, so backends are checked against plain bytes. A reader thread collects
stdout; server-initiated requests (approval elicitations) are accepted, or declined when a test
asks for that. stderr goes to a file when one is named, else it is kept in memory.
"""

from __future__ import annotations

import base64
import json
import queue
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMEOUT = 30.0


@dataclass
class ToolResult:
    """One ``tools/call`` answer, split into its parts."""

    raw: dict[str, Any]
    is_error: bool
    text: str  # the text blocks joined with newlines
    images: list[tuple[str, bytes]] = field(default_factory=list)  # (mime type, bytes)


class McpChild:
    """One backend process and an initialized MCP session with it."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        *,
        cwd: Path | None = None,
        accept_elicitations: bool = True,
        initialize: bool = True,
        stderr_path: Path | None = None,
    ) -> None:
        self.stderr_path = stderr_path
        err = open(stderr_path, "wb") if stderr_path else subprocess.PIPE  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=dict(env),
                cwd=cwd,
            )
        finally:
            if stderr_path:
                err.close()  # type: ignore[union-attr]
        self.accept = accept_elicitations
        self._next = 0
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self.stderr: list[bytes] = []
        self.server_info: dict[str, Any] = {}
        threading.Thread(target=self._read, daemon=True).start()
        if not stderr_path:
            threading.Thread(target=self._drain_stderr, daemon=True).start()
        if initialize:
            self.initialize()

    def initialize(self) -> dict[str, Any]:
        """The MCP handshake: ``initialize``, then the ``initialized`` notification."""
        init = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "deskhand-conformance", "version": "1"},
            },
        )
        self.server_info = init["result"]["serverInfo"]
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return init

    # ----- wire ---------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if "method" in message and "id" in message:  # a request from the server
                self._answer_server(message)
            elif "id" in message and isinstance(message["id"], int):
                self._replies.setdefault(message["id"], queue.Queue()).put(message)

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)

    def _answer_server(self, message: dict[str, Any]) -> None:
        if message["method"] == "elicitation/create":
            action = "accept" if self.accept else "decline"
            result: dict[str, Any] = {"action": action}
            if self.accept:
                result["content"] = {}
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        else:
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {}})

    def request(
        self, method: str, params: dict[str, Any] | None = None, timeout: float = TIMEOUT
    ) -> dict[str, Any]:
        with self._lock:
            self._next += 1
            rid = self._next
        box = self._replies.setdefault(rid, queue.Queue())
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        try:
            return box.get(timeout=timeout)
        except queue.Empty:
            err = self.stderr_text()[-4000:]
            raise AssertionError(f"no answer to {method} in {timeout}s; stderr:\n{err}") from None

    # ----- tools --------------------------------------------------------------------------

    def tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = self.request("tools/list", {})["result"]["tools"]
        return tools

    def call(self, name: str, timeout: float = TIMEOUT, **arguments: Any) -> ToolResult:
        reply = self.request("tools/call", {"name": name, "arguments": arguments}, timeout)
        assert "result" in reply, reply
        result = reply["result"]
        texts, images = [], []
        for block in result.get("content", []):
            if block.get("type") == "text":
                texts.append(block["text"])
            elif block.get("type") == "image":
                images.append((block.get("mimeType", ""), base64.b64decode(block["data"])))
        return ToolResult(result, bool(result.get("isError")), "\n".join(texts), images)

    def stderr_text(self) -> str:
        if self.stderr_path is not None:
            exists = self.stderr_path.exists()
            return self.stderr_path.read_text(errors="replace") if exists else ""
        return b"".join(self.stderr).decode(errors="replace")

    def close(self) -> int:
        """End stdin (a backend exits on EOF) and wait; returns the exit status."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait(timeout=10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code
