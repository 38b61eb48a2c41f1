"""``deskhandctl mcp`` as a separate process against a real daemon on the simulator.

What this owns: the command line that starts the facade against one test daemon (never
autostarting another), a raw stdio harness (:class:`RawHost`) that writes exact lines and
collects every message the facade sends (for what the SDK cannot do: cancelling, malformed
input, never answering an elicitation), an SDK session helper (:func:`sdk_host`) built on the
official MCP Python SDK, and reading the Calculator's tree.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from dhtest.clidaemon import CliDaemon
from dhtest.daemon import daemon_env
from dhtest.jev_rig import JevDesk

TIMEOUT = 30.0


class JevTarget:
    """A :class:`JevDesk`'s daemon seen the way the facade's helpers see a :class:`CliDaemon`."""

    def __init__(self, desk: JevDesk) -> None:
        self.daemon = desk.daemon
        self.env = {**daemon_env(desk.root), "DESKHAND_NO_AUTOSTART": "1"}


Target = CliDaemon | JevTarget


def facade_argv(desk: Target) -> list[str]:
    return ["-m", "deskhandctl", "--socket", str(desk.daemon.socket), "mcp"]


def index_of(tree: str, needle: str) -> int:
    """The number of the first element line containing ``needle``."""
    for line in tree.splitlines():
        match = re.match(r"\s*(\d+) (.*)$", line)
        if match and needle in match.group(2):
            return int(match.group(1))
    raise AssertionError(f"no element with {needle!r} in:\n{tree}")


def display(tree: str) -> str:
    """The Calculator's display value (the last text element of the keypad's edit field)."""
    values = re.findall(r"\d+ text \u200e?(\S+)", tree)
    assert values, tree
    return str(values[-1])


class RawHost:
    """The facade on pipes; :meth:`send` writes one message (or a raw line), :meth:`next`
    waits for the next message matching a predicate (others stay queued)."""

    def __init__(self, desk: Target, *, extra_args: tuple[str, ...] = ()) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *facade_argv(desk), *extra_args],
            env=desk.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._inbox.put(json.loads(line))  # every line must be one JSON message
        self._inbox.put(None)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.proc.stdin.write(line)
        self.proc.stdin.flush()

    def request(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def call(self, request_id: int, tool: str, arguments: dict[str, Any], **meta: Any) -> None:
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        self.request(request_id, "tools/call", params)

    def next(
        self, match: Callable[[dict[str, Any]], bool], timeout: float = TIMEOUT
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for i, message in enumerate(self.seen):
            if match(message):
                return self.seen.pop(i)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no matching message; seen {self.seen}")
            try:
                message = self._inbox.get(timeout=remaining)
            except queue.Empty:
                continue
            if message is None:
                raise EOFError(f"the facade ended; stderr: {''.join(self.stderr)}")
            if match(message):
                return message
            self.seen.append(message)

    def reply(self, request_id: object, timeout: float = TIMEOUT) -> dict[str, Any]:
        return self.next(lambda m: m.get("id") == request_id and "method" not in m, timeout=timeout)

    def method(self, name: str, timeout: float = TIMEOUT) -> dict[str, Any]:
        return self.next(lambda m: m.get("method") == name, timeout=timeout)

    def initialize(
        self,
        revision: str = "2025-11-25",
        capabilities: dict[str, Any] | None = None,
        name: str = "raw-host",
    ) -> dict[str, Any]:
        self.request(
            0,
            "initialize",
            {
                "protocolVersion": revision,
                "capabilities": capabilities or {},
                "clientInfo": {"name": name, "version": "1.0"},
            },
        )
        result = self.reply(0)["result"]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return dict(result)

    def shut(self) -> None:
        """End the process (if still running) and close every pipe."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass

    def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise


ElicitFn = Callable[[Any, Any], Awaitable[Any]]


@asynccontextmanager
async def sdk_host(
    desk: Target,
    elicitation: ElicitFn | None = None,
    message_handler: Callable[[Any], Awaitable[None]] | None = None,
) -> AsyncIterator[Any]:
    """An initialized ``mcp.ClientSession`` (the official SDK) talking to the facade."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=facade_argv(desk), env=desk.env)
    async with stdio_client(params) as (read, write):
        kwargs: dict[str, Any] = {}
        if elicitation is not None:
            kwargs["elicitation_callback"] = elicitation
        if message_handler is not None:
            kwargs["message_handler"] = message_handler
        async with ClientSession(read, write, **kwargs) as session:
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")
