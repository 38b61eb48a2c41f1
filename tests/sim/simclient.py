"""A deliberately small, raw JSON-lines client for driving the simulator as a child process.

It is independent of Deskhand's MCP client on purpose: it writes exactly the bytes a test asks
for and keeps every line the simulator prints (raw and parsed), so tests can check framing as
well as content. A reader thread parses stdout; ``next_message`` and ``response`` wait on it.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from axcheck import check_action, check_state

ROOT = Path(__file__).resolve().parents[2]
UUID_UPPER = re.compile(r"^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$")
DEFAULT_SCENARIO: dict[str, Any] = {"today": "2026-09-18", "now": "11:50"}
TIMEOUT = 10.0

Json = dict[str, Any]


class SimError(AssertionError):
    """The simulator did not answer as the test expected."""


class Sim:
    """One simulator process. Use :func:`running_sim` to get one that is cleaned up."""

    def __init__(
        self,
        scenario: dict[str, Any] | None = None,
        *,
        args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        merge_default: bool = True,
    ) -> None:
        full = {**DEFAULT_SCENARIO, **(scenario or {})} if merge_default else (scenario or {})
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("DESKHAND_SIM")}
        child_env["DESKHAND_SIM_SCENARIO"] = json.dumps(full)
        child_env.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deskhand_d.programs.sim", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env=child_env,
        )
        self.raw: list[bytes] = []
        self._queue: queue.Queue[tuple[bytes, Any] | None] = queue.Queue()
        self._backlog: list[Any] = []
        self._next_id = 0
        self._closed: tuple[int, bytes] | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.raw.append(line)
            try:
                parsed: Any = json.loads(line)
            except ValueError:
                parsed = {"__raw__": line}
            self._queue.put((line, parsed))
        self._queue.put(None)

    # --- writing ------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: object) -> None:
        self.send_raw(json.dumps(message, ensure_ascii=False).encode() + b"\n")

    def request(self, method: str, params: Json | None = None, *, rid: Any = None) -> Any:
        if rid is None:
            self._next_id += 1
            rid = self._next_id
        message: Json = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return rid

    def notify(self, method: str, params: Json | None = None) -> None:
        message: Json = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def reply(self, rid: Any, result: Json) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    # --- reading ------------------------------------------------------------------------------

    def next_message(self, timeout: float = TIMEOUT) -> Any:
        """The next message not yet consumed (backlog first)."""
        if self._backlog:
            return self._backlog.pop(0)
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise SimError(f"no message within {timeout}s") from None
        if item is None:
            self._queue.put(None)
            raise SimError("the simulator closed stdout")
        return item[1]

    def wait_for(self, match: Callable[[Any], bool], timeout: float = TIMEOUT) -> Any:
        """The first message matching ``match``; others stay queued for later."""
        for i, message in enumerate(self._backlog):
            if match(message):
                return self._backlog.pop(i)
        deadline = time.monotonic() + timeout
        skipped: list[Any] = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SimError(f"no matching message within {timeout}s")
                message = self.next_message(left)
                if match(message):
                    return message
                skipped.append(message)
        finally:
            self._backlog[:0] = skipped

    def response(self, rid: Any, timeout: float = TIMEOUT) -> Json:
        return dict(
            self.wait_for(
                lambda m: isinstance(m, dict) and m.get("id") == rid and "method" not in m, timeout
            )
        )

    def elicitation(self, timeout: float = TIMEOUT) -> Json:
        return dict(
            self.wait_for(
                lambda m: isinstance(m, dict) and m.get("method") == "elicitation/create", timeout
            )
        )

    def quiet(self, seconds: float = 0.3) -> list[Any]:
        """Everything that arrives within ``seconds`` (usually expected to be nothing)."""
        seen = list(self._backlog)
        self._backlog.clear()
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                item = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if item is None:
                self._queue.put(None)
                break
            seen.append(item[1])
        return seen

    # --- conveniences -------------------------------------------------------------------------

    def initialize(self, version: str = "2025-06-18") -> Json:
        rid = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "sim-tests", "version": "1"},
            },
        )
        reply = self.response(rid)
        self.notify("notifications/initialized")
        return reply

    def call(
        self,
        name: str,
        arguments: Json | None = None,
        *,
        meta: Json | None = None,
        approve: str = "accept",
        timeout: float = TIMEOUT,
    ) -> Json:
        """``tools/call``; answers approval prompts with ``approve``; returns the result."""
        params: Json = {"name": name, "arguments": arguments or {}}
        if meta is not None:
            params["_meta"] = meta
        rid = self.request("tools/call", params)
        while True:
            message = self.wait_for(
                lambda m: (
                    isinstance(m, dict)
                    and (
                        (m.get("id") == rid and "method" not in m)
                        or m.get("method") == "elicitation/create"
                    )
                ),
                timeout,
            )
            if message.get("method") == "elicitation/create":
                self.reply(message["id"], {"action": approve, "content": {}})
                continue
            if "result" not in message:
                raise SimError(f"tools/call failed: {message}")
            result = dict(message["result"])
            _check_grammar(result)
            return result

    def text(self, name: str, arguments: Json | None = None, **kw: Any) -> str:
        """The first text block of a tool result."""
        return str(self.call(name, arguments, **kw)["content"][0]["text"])

    def close(self, timeout: float = 10.0) -> tuple[int, bytes]:
        """Close stdin, wait for exit; returns (exit status, stderr bytes). Idempotent."""
        if self._closed is not None:
            return self._closed
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(timeout)
        assert self.proc.stderr is not None
        err = self.proc.stderr.read()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        self._closed = (code, err)
        return self._closed


@contextmanager
def running_sim(
    scenario: dict[str, Any] | None = None, *, init: bool = True, **kw: Any
) -> Iterator[Sim]:
    sim = Sim(scenario, **kw)
    try:
        if init:
            sim.initialize()
        yield sim
    finally:
        if sim.proc.poll() is None:
            sim.proc.kill()
        sim.close()


def _check_grammar(result: Json) -> None:
    """Every full tree the simulator returns must pass the AX grammar checker."""
    content = result.get("content") or []
    text = content[0].get("text", "") if content and content[0].get("type") == "text" else ""
    if "The following is a " in text or "There has been no change" in text:
        return  # partial-update knob: deliberately not a full tree
    if text.startswith("Computer Use state (CUA App Version: "):
        check_state(text)
    elif text.startswith("App=") and "\nWindow: " in text:
        check_action(text)


def find_index(tree: str, needle: str) -> str:
    """The index of the first element line containing ``needle``."""
    for line in tree.split("\n"):
        m = re.match(r"^\t*(\d+) (.*)$", line)
        if m and needle in m.group(2):
            return m.group(1)
    raise SimError(f"{needle!r} not in tree:\n{tree}")


def element_at(tree: str, index: str) -> str:
    """The element line (without tabs and index) numbered ``index``."""
    for line in tree.split("\n"):
        m = re.match(r"^\t*(\d+) (.*)$", line)
        if m and m.group(1) == index:
            return m.group(2)
    raise SimError(f"no element {index} in tree")


MakeSim = Callable[..., Sim]
"""How the ``make_sim`` fixture is called: a simulator child started with these arguments."""
