"""Benchmark: ``deskhandctl mcp`` (the MCP stdio facade) against its floors.

Issue 19's two targets, each measured against a floor taken in the same run:

* **start**: from starting ``python -m deskhandctl --socket S mcp`` to reading its
  ``initialize`` result on stdout (one JSON line written, one read), against starting and
  ending ``python -c pass`` with the same interpreter. Target: ratio <= 3. The daemon is
  already running (a host starts the facade when a session opens; the daemon is shared).
  Runs alternate between the two, ``START_RUNS`` each; medians.
* **click**: one native ``click`` on the simulated Calculator through the facade (one
  ``tools/call`` line written, the result line read and parsed, the next stateId taken from
  its ``structuredContent``) against the same click through ``deskhandctl``'s own protocol
  client (``deskhandctl.wire.session.Session`` on the daemon's socket, the next stateId from the
  reply), both in this process, both against the same daemon. Both click the digit 8 and All
  Clear in turn, so the tree stays the same size; blocks of ``BLOCK`` clicks alternate
  between the two sides until each has ``SAMPLES``. Target: facade / protocol client <= 1.2
  at p50.

Run it alone as ``.venv/bin/python bench/mcp_facade.py`` (JSON on stdout); ``bench/run.py``
runs it too.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from deskhandctl.wire.connect import open_session
from native_click import APP, bench_env, buttons, daemon, percentile_ms, summary

PYTHON = sys.executable
START_RUNS = 30
WARMUP = 50
SAMPLES = 600
BLOCK = 100
TARGET_START = 3.0
TARGET_CLICK = 1.2


def _initialize_line(request_id: int = 1) -> bytes:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    }
    message = {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
    return json.dumps(message).encode() + b"\n"


def _start_facade(sock: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PYTHON, "-m", "deskhandctl", "--socket", str(sock), "mcp"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _read_reply(out: IO[bytes], request_id: int) -> dict[str, Any]:
    """The next line that answers ``request_id`` (notifications in between are skipped)."""
    while True:
        line = out.readline()
        if not line:
            raise RuntimeError("the facade closed its output")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id and "method" not in message:
            return message


def _time_start(sock: Path, env: dict[str, str]) -> int:
    began = time.perf_counter_ns()
    proc = _start_facade(sock, env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_initialize_line())
    proc.stdin.flush()
    reply = _read_reply(proc.stdout, 1)
    took = time.perf_counter_ns() - began
    assert reply["result"]["protocolVersion"] == "2025-11-25", reply
    proc.stdin.close()
    proc.wait(10)
    return took


def _time_pass(env: dict[str, str]) -> int:
    began = time.perf_counter_ns()
    subprocess.run([PYTHON, "-c", "pass"], env=env, check=True)
    return time.perf_counter_ns() - began


def measure_start(sock: Path, env: dict[str, str]) -> dict[str, Any]:
    facade: list[int] = []
    floor: list[int] = []
    _time_start(sock, env)  # the first start fills the page cache
    for _ in range(START_RUNS):
        facade.append(_time_start(sock, env))
        floor.append(_time_pass(env))
    f50, p50 = statistics.median(facade) / 1e6, statistics.median(floor) / 1e6
    return {
        "facade_to_initialize_ms": round(f50, 2),
        "python_c_pass_ms": round(p50, 2),
        "ratio": round(f50 / p50, 2),
        "target_ratio": TARGET_START,
        "runs": START_RUNS,
    }


class FacadeClicker:
    """The facade on pipes, initialized, clicking by the stateIds its results carry."""

    def __init__(self, sock: Path, env: dict[str, str]) -> None:
        self.proc = _start_facade(sock, env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self._id = 1
        self._call_raw("initialize", json.loads(_initialize_line())["params"])
        self.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.stdin.flush()
        seen = self.call("get_app_state", {"app": APP})
        self.state = seen["state_id"]
        self.digit, self.clear = buttons(seen["text"])

    def _call_raw(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        line = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
        self.stdin.write(json.dumps(line).encode() + b"\n")
        self.stdin.flush()
        reply = _read_reply(self.stdout, self._id)
        return dict(reply["result"])

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The result as a model reads it: its text, and the stateId the text hands on (the
        tools that return a tree have no structuredContent: hosts would show that instead)."""
        result = self._call_raw("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result}")
        text = "\n".join(b["text"] for b in result["content"] if b.get("type") == "text")
        found = re.search(r"^(?:New )?stateId for .+?: (\S+)$", text, re.MULTILINE)
        return {"text": text, "state_id": found.group(1) if found else None}

    def click(self, index: int) -> None:
        done = self.call("click", {"app": APP, "state_id": self.state, "element_index": index})
        self.state = done["state_id"]

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(10)


class ProtocolClicker:
    """``deskhandctl``'s own protocol client on the daemon's socket."""

    def __init__(self, sock: Path) -> None:
        self.session = open_session(
            str(sock), timeout=30, autostart=False, client_version="bench", session_name="bc"
        )
        seen = self.session.request("get_app_state", app=APP)
        self.state = seen["state_id"]
        self.digit, self.clear = buttons(seen["text"])

    def click(self, index: int) -> None:
        done = self.session.request("click", app=APP, state_id=self.state, element_index=index)
        self.state = done["state_id"]

    def close(self) -> None:
        self.session.close()


def _timed_clicks(clicker: FacadeClicker | ProtocolClicker, n: int, into: list[int]) -> None:
    for i in range(n):
        index = clicker.digit if i % 2 == 0 else clicker.clear
        began = time.perf_counter_ns()
        clicker.click(index)
        into.append(time.perf_counter_ns() - began)


def measure_click(sock: Path, env: dict[str, str]) -> dict[str, Any]:
    facade = FacadeClicker(sock, env)
    protocol = ProtocolClicker(sock)
    try:
        warm: list[int] = []
        _timed_clicks(facade, WARMUP, warm)
        _timed_clicks(protocol, WARMUP, warm)
        through_facade: list[int] = []
        through_protocol: list[int] = []
        while len(through_facade) < SAMPLES:
            _timed_clicks(facade, BLOCK, through_facade)
            _timed_clicks(protocol, BLOCK, through_protocol)
    finally:
        facade.close()
        protocol.close()
    ratio = percentile_ms(through_facade, 50) / percentile_ms(through_protocol, 50)
    return {
        "facade": summary(through_facade),
        "protocol_client": summary(through_protocol),
        "p50_ratio": round(ratio, 2),
        "target_ratio": TARGET_CLICK,
        "samples": SAMPLES,
    }


def measure_mcp_facade() -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="dhm", dir="/tmp"))
    try:
        env = bench_env(root)
        with daemon(root, env) as sock:
            return {"start": measure_start(sock, env), "click": measure_click(sock, env)}
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(measure_mcp_facade(), indent=2))
