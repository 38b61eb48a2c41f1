"""Benchmark: the emergency stop and a bystander while a client floods without reading.

Issue 24 §1's attack, timed against the same operations on an idle daemon in the same run: a
client says hello, shrinks its receive buffer to 4 KiB and sends up to 200,000 pings of 1 KB
without reading a reply. Measured, each over ``ROUNDS`` fresh daemons (backend ``sim``):

* **stop**: wall time of ``deskhandctl --timeout 2 stop`` (its reply comes once the lock is
  engaged), started as the attack starts, against the same command on an idle daemon.
  Requirement: the lock within 1 s under attack.
* **bystander ping**: round trips of another client (hello done before), as the attack
  starts, p50 and max, against the same client idle.
* how many pings the attacker got out, and how long until the daemon dropped it.

Run it alone as ``.venv/bin/python bench/attack.py`` (JSON on stdout); ``bench/run.py`` runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from native_click import bench_env, daemon
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Message, Request, TextMessage

PYTHON = sys.executable
ROUNDS = 5
PINGS = 200_000
BYSTANDER_PINGS = 30
TARGET_STOP_S = 1.0


class Client:
    """A minimal blocking WebSocket client of the daemon (JSON subprotocol)."""

    def __init__(self, path: Path, name: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(str(path))
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.sock.sendall(
            self.ws.send(Request(host="localhost", target="/v1", subprotocols=["deskhand.v1.json"]))
        )
        self._wait(AcceptConnection)
        self.next_id = 1
        self.call("hello", protocol=1, client={"name": name, "kind": "test"})

    def _wait(self, kind: type) -> Any:
        while True:
            for event in self.ws.events():
                if isinstance(event, kind):
                    return event
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed")
            self.ws.receive_data(data)

    def call(self, op: str, **fields: Any) -> Any:
        rid, self.next_id = self.next_id, self.next_id + 1
        self.sock.sendall(self.ws.send(Message(data=json.dumps({"op": op, "id": rid, **fields}))))
        while True:
            reply = json.loads(self._wait(TextMessage).data)
            if reply.get("id") == rid:
                return reply


def flood(path: Path, started: threading.Event, out: dict[str, float]) -> None:
    """Send pings without reading until PINGS or the daemon drops us; ``out`` gets how many
    went out and for how long."""
    attacker = Client(path, "never-reads")
    attacker.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    batch = bytearray()
    began = time.perf_counter()
    started.set()
    try:
        for i in range(PINGS):
            frame = json.dumps({"op": "ping", "id": 100 + i, "data": "x" * 1000})
            batch += attacker.ws.send(Message(data=frame))
            if len(batch) >= 64 * 1024:
                attacker.sock.sendall(batch)
                out["sent"] = i + 1
                batch.clear()
    except OSError:
        pass  # dropped by the daemon
    out["flood_s"] = time.perf_counter() - began
    attacker.sock.close()


def stop_s(path: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-m", "deskhandctl", "--socket", str(path), "--timeout", "2", "stop"],
        env={**env, "DESKHAND_NO_AUTOSTART": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or "stopped and locked" not in done.stdout:
        raise RuntimeError(f"stop failed: {done.stdout} {done.stderr}")
    return elapsed


def pings_ms(client: Client) -> list[float]:
    times = []
    for n in range(BYSTANDER_PINGS):
        started = time.perf_counter()
        client.call("ping", data=str(n))
        times.append((time.perf_counter() - started) * 1000)
    return times


def one_round(attack: bool, floods: list[dict[str, float]]) -> tuple[float, list[float]]:
    root = Path(tempfile.mkdtemp(prefix="dha", dir="/tmp"))
    try:
        env = bench_env(root)
        with daemon(root, env) as path:
            bystander = Client(path, "bystander")
            pings_ms(bystander)  # warm
            if attack:
                started = threading.Event()
                floods.append({"sent": 0})
                attacker = threading.Thread(
                    target=flood, args=(path, started, floods[-1]), daemon=True
                )
                attacker.start()
                started.wait(30)  # then at once: the stop and pings overlap the flood
            during = pings_ms(bystander)
            stop = stop_s(path, env)
            if attack:
                attacker.join(120)
            bystander.sock.close()
            return stop, during
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measure_attack() -> dict[str, Any]:
    idle_stop, attack_stop, idle_pings, attack_pings = [], [], [], []
    floods: list[dict[str, float]] = []
    for _ in range(ROUNDS):
        s, p = one_round(False, floods)
        idle_stop.append(s)
        idle_pings += p
        s, p = one_round(True, floods)
        attack_stop.append(s)
        attack_pings += p
    stop_idle = statistics.median(idle_stop)
    stop_attack = statistics.median(attack_stop)
    return {
        "rounds": ROUNDS,
        "stop_idle_ms": round(stop_idle * 1000, 1),
        "stop_attack_ms": round(stop_attack * 1000, 1),
        "stop_attack_max_ms": round(max(attack_stop) * 1000, 1),
        "stop_ratio": round(stop_attack / stop_idle, 2),
        "target_stop_s": TARGET_STOP_S,
        "ping_idle_p50_ms": round(statistics.median(idle_pings), 3),
        "ping_attack_p50_ms": round(statistics.median(attack_pings), 3),
        "ping_attack_max_ms": round(max(attack_pings), 3),
        "ping_ratio": round(statistics.median(attack_pings) / statistics.median(idle_pings), 2),
        "attacker_pings_sent_max": max(int(f["sent"]) for f in floods),
        "attacker_dropped_after_ms_max": round(max(f["flood_s"] for f in floods) * 1000, 1),
    }


if __name__ == "__main__":
    os.chdir(Path(__file__).resolve().parent)
    print(json.dumps(measure_attack(), indent=2))
