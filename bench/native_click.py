"""Benchmark: a native ``click`` through the daemon vs the same call straight to the simulator.

Three children run the simulated desktop (``python -m deskhand_d.programs.sim``) with the
scenario ``{"preapproved": ["Calculator"]}`` and no added delay:

* **daemon**: the real daemon (``python -m deskhand_d --socket S``, backend ``sim``) started as
  a child, which starts its own simulator. A trio-websocket client (JSON subprotocol) sends
  ``hello`` (session ``bench``), ``get_app_state`` for Calculator, then ``click`` after
  ``click``, each with the action-returned ``state_id`` of the previous reply.
* **sdk**: a second simulator child driven by the official MCP Python SDK's client, as an agent
  that talks to the simulator directly would use it: ``mcp.ClientSession`` over
  ``mcp.client.stdio.stdio_client``, run under trio through anyio in this process (under
  asyncio it measured the same). ``initialize``, ``list_tools`` and one ``get_app_state``
  untimed, then each click is one ``await session.call_tool("click", ...)``.
* **floor**: a third simulator child driven over MCP stdio by a minimal raw client in this
  file: ``initialize``, ``notifications/initialized``, ``tools/list`` and one
  ``get_app_state`` untimed, then each ``tools/call click`` is one JSON line written and one
  reply line read and parsed, nothing in between: the least any MCP client can do.

All sides click the same two buttons in turn, the digit 8 and All Clear (indices read from the
tree), so the display and the tree stay the same size. The timer covers sending the request,
receiving the reply and parsing it, on every side. After a warm-up, blocks rotate between the
daemon, the SDK client and the floor until each has ``SAMPLES`` samples, so drift hits all
alike; a daemon ``ping`` and a simulator JSON-RPC ``ping`` are sampled in the same rotation for
context (they split the daemon's extra time into transport and the rest). Percentiles are
nearest-rank; ``*_paired`` ratios are the median over rotations of the ratio of block medians,
which cancels drift between rotations. Reported, with no target: issue 26 retired issue 18's
daemon / SDK client <= 1.3 at p50 (the daemon's hop is well under 3 % of a real app's click);
the p99 ratio and the ratios to the raw floor are reported too.

Then ``CLIENTS`` clients, each with its own connection and session, click through the daemon
at once for ``CONCURRENT_S`` seconds. The daemon runs every backend call from every session
through one FIFO queue, so a click waits for the clicks queued before it: per-click latency
grows with the number of clients (about clients x service time) while the backend still sees
one call at a time. That part has no floor; it reports p50/p99 latency and clicks per second.
These clients click All Clear only: interleaved digit presses from 20 clients would run the
display through many values, miss the simulator's small screenshot cache and measure its
pure-Python JPEG encoder (about 6 ms a click) instead of the daemon.

Run it alone as ``.venv/bin/python bench/native_click.py`` (JSON on stdout); ``bench/run.py``
runs it too.
"""

from __future__ import annotations

import gc
import importlib.metadata
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import trio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from trio_websocket import WebSocketConnection, wrap_client_stream

from deskhand_d.consent.catalog import CatalogPlatform
from deskhand_d.consent.grants import GrantsFile

PYTHON = sys.executable
JSON_SUBPROTOCOL = "deskhand.v1.json"
APP = "Calculator"
SCENARIO = {"preapproved": [APP]}

WARMUP = 200  # clicks per side before sampling
SAMPLES = 2000  # clicks per side
BLOCK = 200  # alternate daemon/floor every this many clicks
CLIENTS = 20
CONCURRENT_WARMUP = 10  # clicks per client before the timed window
CONCURRENT_S = 5.0

_DIGIT = re.compile(r"^\t*(\d+) button .*\bID: Eight\b", re.M)
_CLEAR = re.compile(r"^\t*(\d+) button .*\bID: AllClear\b", re.M)


def percentile_ms(values: list[int], q: float) -> float:
    """Nearest-rank percentile of nanosecond samples, in milliseconds."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1] / 1e6


def summary(values: list[int]) -> dict[str, float]:
    return {
        "p50_ms": round(percentile_ms(values, 50), 4),
        "p99_ms": round(percentile_ms(values, 99), 4),
        "mean_ms": round(statistics.fmean(values) / 1e6, 4),
    }


def buttons(tree: str) -> tuple[int, int]:
    """The element indices of the digit 8 and All Clear in a Calculator tree."""
    digit, clear = _DIGIT.search(tree), _CLEAR.search(tree)
    if digit is None or clear is None:
        raise RuntimeError(f"no 8 or All Clear button in the Calculator tree:\n{tree[:2000]}")
    return int(digit.group(1)), int(clear.group(1))


async def timed_ping(ws: WebSocketConnection, rid: int) -> int:
    """One ``ping`` round trip (send, receive, parse, check the id), in nanoseconds."""
    request = json.dumps({"op": "ping", "id": rid, "data": "bench"})
    started = time.perf_counter_ns()
    await ws.send_message(request)
    reply = json.loads(await ws.get_message())
    elapsed = time.perf_counter_ns() - started
    if reply.get("id") != rid:
        raise RuntimeError(f"ping: unexpected reply {str(reply)[:500]}")
    return elapsed


# ----- the daemon side -------------------------------------------------------------------------


class DaemonClient:
    """One WebSocket connection and session; clicks alternate between the two buttons."""

    def __init__(self, ws: WebSocketConnection, *, clear_only: bool = False) -> None:
        self.ws = ws
        self.next_id = 1
        self.state_id: str | None = None
        self.clear_only = clear_only
        self.targets: tuple[int, ...] = ()
        self.clicks = 0
        self.reobserved = 0

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        rid = self.next_id
        self.next_id += 1
        await self.ws.send_message(json.dumps({"op": op, "id": rid, **fields}))
        reply = json.loads(await self.ws.get_message())
        if reply.get("id") != rid or reply.get("type") != "result":
            raise RuntimeError(f"{op} failed: {str(reply)[:500]}")
        result: dict[str, Any] = reply["result"]
        return result

    async def hello(self, session: str) -> None:
        client = {"name": "bench", "kind": "test"}
        await self.request("hello", protocol=1, client=client, session=session)

    async def observe(self) -> None:
        result = await self.request("get_app_state", app=APP)
        self.state_id = result["state_id"]
        digit, clear = buttons(result["text"])
        self.targets = (clear,) if self.clear_only else (digit, clear)

    async def ping(self) -> int:
        rid = self.next_id
        self.next_id += 1
        return await timed_ping(self.ws, rid)

    async def click(self) -> int:
        """One timed click round trip (ns). A reply without a state_id is followed by an
        untimed observation, so the next click always has one."""
        rid = self.next_id
        self.next_id += 1
        index = self.targets[self.clicks % len(self.targets)]
        self.clicks += 1
        request = json.dumps(
            {
                "op": "click",
                "id": rid,
                "app": APP,
                "state_id": self.state_id,
                "element_index": index,
            }
        )
        started = time.perf_counter_ns()
        await self.ws.send_message(request)
        reply = json.loads(await self.ws.get_message())
        elapsed = time.perf_counter_ns() - started
        result = reply.get("result") or {}
        if reply.get("id") != rid or result.get("kind") != "action" or not result.get("ok"):
            raise RuntimeError(f"click failed: {str(reply)[:500]}")
        self.state_id = result.get("state_id")
        if self.state_id is None:
            self.reobserved += 1
            await self.observe()
        return elapsed


async def connect(
    nursery: trio.Nursery, sock: Path, session: str, *, clear_only: bool = False
) -> DaemonClient:
    """A connected client that said hello as ``session`` and holds a fresh observation."""
    stream = await trio.open_unix_socket(str(sock))
    ws = await wrap_client_stream(
        nursery, stream, "localhost", "/v1", subprotocols=[JSON_SUBPROTOCOL]
    )
    client = DaemonClient(ws, clear_only=clear_only)
    await client.hello(session)
    await client.observe()
    return client


# ----- the floor: raw MCP over stdio -----------------------------------------------------------


class RawSim:
    """The least an MCP client can do: write a request line, read the reply line, parse it."""

    def __init__(self, proc: trio.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.buf = bytearray()
        self.next_id = 1
        self.targets = (0, 0)
        self.clicks = 0

    def _line(self, method: str, params: dict[str, Any] | None, *, rid: int | None) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if rid is not None:
            message["id"] = rid
        if params is not None:
            message["params"] = params
        return json.dumps(message).encode() + b"\n"

    async def _read(self, rid: int) -> dict[str, Any]:
        buf = self.buf
        while b"\n" not in buf:
            chunk = await self.stdout.receive_some(1 << 16)
            if not chunk:
                raise RuntimeError("the simulator closed its stdout")
            buf += chunk
        end = buf.index(b"\n")
        reply: dict[str, Any] = json.loads(bytes(buf[:end]))
        del buf[: end + 1]
        if reply.get("id") != rid or "result" not in reply:
            raise RuntimeError(f"unexpected reply to {rid}: {str(reply)[:500]}")
        return reply

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = self.next_id
        self.next_id += 1
        await self.stdin.send_all(self._line(method, params, rid=rid))
        return await self._read(rid)

    async def start(self) -> None:
        await self.call(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        await self.stdin.send_all(self._line("notifications/initialized", None, rid=None))
        await self.call("tools/list", {})
        state = await self.call("tools/call", {"name": "get_app_state", "arguments": {"app": APP}})
        self.targets = buttons(state["result"]["content"][0]["text"])

    async def ping(self) -> int:
        rid = self.next_id
        self.next_id += 1
        line = self._line("ping", None, rid=rid)
        started = time.perf_counter_ns()
        await self.stdin.send_all(line)
        await self._read(rid)
        return time.perf_counter_ns() - started

    async def click(self) -> int:
        rid = self.next_id
        self.next_id += 1
        index = self.targets[self.clicks % 2]
        self.clicks += 1
        arguments = {"app": APP, "element_index": str(index)}  # a string on the wire
        line = self._line("tools/call", {"name": "click", "arguments": arguments}, rid=rid)
        started = time.perf_counter_ns()
        await self.stdin.send_all(line)
        reply = await self._read(rid)
        elapsed = time.perf_counter_ns() - started
        result = reply["result"]
        if result.get("isError") or not result["content"][0]["text"].startswith("App="):
            raise RuntimeError(f"click failed: {str(reply)[:500]}")
        return elapsed


# ----- the official MCP Python SDK client -----------------------------------------------------


class SdkSim:
    """The official SDK's ``ClientSession``, clicking a simulator of its own over stdio."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self.targets = (0, 0)
        self.clicks = 0

    async def start(self) -> None:
        await self.session.initialize()
        await self.session.list_tools()
        state = await self.session.call_tool("get_app_state", {"app": APP})
        self.targets = buttons(_text(state.content))

    async def click(self) -> int:
        index = self.targets[self.clicks % 2]
        self.clicks += 1
        arguments = {"app": APP, "element_index": str(index)}
        started = time.perf_counter_ns()
        result = await self.session.call_tool("click", arguments)
        elapsed = time.perf_counter_ns() - started
        if result.isError or not _text(result.content).startswith("App="):
            raise RuntimeError(f"SDK click failed: {str(result)[:500]}")
        return elapsed


def _text(content: list[Any]) -> str:
    first = content[0] if content else None
    return str(getattr(first, "text", ""))


@asynccontextmanager
async def sdk_sim(env: dict[str, str]) -> AsyncIterator[SdkSim]:
    """A started :class:`SdkSim`; its simulator is stopped (by the SDK) when the block exits."""
    server = StdioServerParameters(command=PYTHON, args=["-m", "deskhand_d.programs.sim"], env=env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        sim = SdkSim(session)
        await sim.start()
        yield sim


# ----- sampling --------------------------------------------------------------------------------


async def _interleaved(sock: Path, env: dict[str, str]) -> dict[str, Any]:
    samples: dict[str, list[int]] = {
        "daemon": [],
        "sdk": [],
        "floor": [],
        "daemon_ping": [],
        "sim_ping": [],
    }
    sim = await trio.lowlevel.open_process(
        [PYTHON, "-m", "deskhand_d.programs.sim"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    try:
        raw = RawSim(sim)
        await raw.start()
        async with sdk_sim(env) as sdk, trio.open_nursery() as nursery:
            client = await connect(nursery, sock, "bench")
            if not client.targets == raw.targets == sdk.targets:
                raise RuntimeError(f"trees differ: {client.targets}, {raw.targets}, {sdk.targets}")
            for _ in range(WARMUP):
                await client.click()
                await sdk.click()
                await raw.click()
                await client.ping()
                await raw.ping()
            gc.collect()
            gc.disable()
            try:
                while len(samples["floor"]) < SAMPLES:
                    for _ in range(BLOCK):
                        samples["daemon"].append(await client.click())
                    for _ in range(BLOCK):
                        samples["sdk"].append(await sdk.click())
                    for _ in range(BLOCK):
                        samples["floor"].append(await raw.click())
                    for _ in range(BLOCK):
                        samples["daemon_ping"].append(await client.ping())
                    for _ in range(BLOCK):
                        samples["sim_ping"].append(await raw.ping())
            finally:
                gc.enable()
            await client.ws.aclose()
            nursery.cancel_scope.cancel()
    finally:
        assert sim.stdin is not None
        await sim.stdin.aclose()
        with trio.move_on_after(5) as waited:
            await sim.wait()
        if waited.cancelled_caught:
            sim.kill()
    out: dict[str, Any] = {name: summary(values) for name, values in samples.items()}
    for against in ("sdk", "floor"):
        out[f"p50_ratio_{against}_paired"] = paired_ratio(samples["daemon"], samples[against])
    out["element_indices"] = list(client.targets)
    out["reobserved"] = client.reobserved
    return out


def paired_ratio(values: list[int], against: list[int]) -> float:
    """The median over rotations of (median of a block of ``values``) / (median of the block
    of ``against`` sampled in the same rotation)."""
    ratios = [
        statistics.median(values[i : i + BLOCK]) / statistics.median(against[i : i + BLOCK])
        for i in range(0, min(len(values), len(against)), BLOCK)
    ]
    return round(statistics.median(ratios), 2)


async def _concurrent(sock: Path) -> dict[str, Any]:
    clients: list[DaemonClient] = []
    latencies: list[list[int]] = []
    finished: list[int] = []

    async def join(nursery: trio.Nursery, i: int) -> None:
        clients.append(await connect(nursery, sock, f"bench-{i}", clear_only=True))

    async def warm(client: DaemonClient) -> None:
        for _ in range(CONCURRENT_WARMUP):
            await client.click()

    async def loop(client: DaemonClient, own: list[int], deadline: int) -> None:
        while time.perf_counter_ns() < deadline:
            own.append(await client.click())
        finished.append(time.perf_counter_ns())

    async with trio.open_nursery() as nursery:
        async with trio.open_nursery() as joining:
            for i in range(CLIENTS):
                joining.start_soon(join, nursery, i)
        async with trio.open_nursery() as warming:
            for client in clients:
                warming.start_soon(warm, client)
        gc.collect()
        gc.disable()
        started = time.perf_counter_ns()
        deadline = started + int(CONCURRENT_S * 1e9)
        try:
            async with trio.open_nursery() as running:
                for client in clients:
                    latencies.append([])
                    running.start_soon(loop, client, latencies[-1], deadline)
        finally:
            gc.enable()
        for client in clients:
            await client.ws.aclose()
        nursery.cancel_scope.cancel()
    every = [ns for own in latencies for ns in own]
    wall_s = (max(finished) - started) / 1e9
    per_client = [len(own) for own in latencies]
    throughput = len(every) / wall_s
    return {
        "clients": CLIENTS,
        "window_s": CONCURRENT_S,
        "wall_s": round(wall_s, 3),
        "clicks": len(every),
        "clicks_per_client_min": min(per_client),
        "clicks_per_client_max": max(per_client),
        "throughput_per_s": round(throughput, 1),
        # Little's law: the mean number of clicks inside the daemon at any moment.
        "mean_in_flight": round(throughput * statistics.fmean(every) / 1e9, 2),
        "reobserved": sum(c.reobserved for c in clients),
        **summary(every),
    }


# ----- processes -------------------------------------------------------------------------------


def bench_env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DESKHAND_", "LISTEN_"))}
    env.pop("NOTIFY_SOCKET", None)
    for name in ("run", "config", "state"):
        (root / name).mkdir(mode=0o700, exist_ok=True)
    env["XDG_RUNTIME_DIR"] = str(root / "run")
    env["XDG_CONFIG_HOME"] = str(root / "config")
    env["XDG_STATE_HOME"] = str(root / "state")
    env["DESKHAND_CONFIG"] = str(root / "config" / "absent.toml")  # built-in defaults only
    env["DESKHAND_BACKEND"] = "sim"
    env["DESKHAND_SIM_SCENARIO"] = json.dumps(SCENARIO)
    # The person's "always" for the simulated Calculator, so consent is decided from grants.json
    # on every click (the path every click takes once the person has said yes).
    GrantsFile(root / "config" / "grants.json").add(CatalogPlatform().identify(APP))
    return env


def wait_connectable(path: Path, proc: subprocess.Popen[bytes], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited early with {proc.returncode}")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            try:
                s.connect(str(path))
                return
            except OSError:
                time.sleep(0.01)
    raise TimeoutError(f"nothing listens on {path} after {timeout}s")


@contextmanager
def daemon(root: Path, env: dict[str, str]) -> Iterator[Path]:
    sock = root / "run" / "click.sock"
    with open(root / "daemon.log", "ab") as out:
        proc = subprocess.Popen(
            [PYTHON, "-m", "deskhand_d", "--socket", str(sock)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    try:
        wait_connectable(sock, proc)
        yield sock
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def measure_native_click() -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="dhc", dir="/tmp"))
    try:
        env = bench_env(root)
        with daemon(root, env) as sock:
            single = trio.run(_interleaved, sock, env)
            concurrent = trio.run(_concurrent, sock)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    out: dict[str, Any] = {
        "scenario": SCENARIO,
        "samples": SAMPLES,
        "warmup": WARMUP,
        "block": BLOCK,
        **single,
    }
    for q in ("p50", "p99"):
        out[f"{q}_ratio_sdk"] = round(out["daemon"][f"{q}_ms"] / out["sdk"][f"{q}_ms"], 2)
        out[f"{q}_ratio"] = round(out["daemon"][f"{q}_ms"] / out["floor"][f"{q}_ms"], 2)
    out["sdk_client"] = f"mcp {importlib.metadata.version('mcp')} ClientSession, trio via anyio"
    out["concurrent"] = concurrent
    return out


if __name__ == "__main__":
    print(json.dumps(measure_native_click(), indent=2))
