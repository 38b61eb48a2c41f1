"""The pi extension's tests: Node 22 from .ci/setup-node.sh, a real daemon on the simulator,
and tests/pi/harness.mjs driving a real pi session (loader, AgentSession, faux model).

The ``node`` and ``pi_desk`` fixtures are re-exported by this directory's conftest.py; the tests
import everything else from here (a module of its own name, so it never collides with another
directory's conftest)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
from dhtest.daemon import DaemonProc, short_tmpdir, spawn_daemon
from dhtest.desk import SIM_APPS, open_client, save_grants

ROOT = Path(__file__).resolve().parents[2]
PI_DIR = ROOT / "clients" / "pi"
PI_NODE_MODULES = PI_DIR / "node_modules"
HARNESS = Path(__file__).with_name("harness.mjs")
# Where .ci/setup-node.sh puts Node 22 (from the npm registry's node@22 package).
NODE = ROOT / ".ci" / ".node" / "node_modules" / "node" / "bin" / "node"
HARNESS_TIMEOUT = 90

OUR_TOOLS = [
    "cua_status",
    "jev_cua_status",
    "cua_list_apps",
    "cua_get_app_state",
    "cua_click",
    "cua_drag",
    "cua_perform_secondary_action",
    "cua_press_key",
    "cua_scroll",
    "cua_select_text",
    "cua_set_value",
    "cua_type_text",
    "jev_cua_observe",
    "jev_cua_run",
]
NATIVE_ACTIONS = OUR_TOOLS[4:12]
# A key the daemon accepts as present, so sessions may switch to jev; no test here sends a Jev
# request with it (the URL is a closed loopback port).
JEV_ENV = {"TYPESAFE_API_KEY": "test-key-not-used", "DESKHAND_JEV_URL": "http://127.0.0.1:9/"}


def node_binary() -> Path:
    """Node 22 as installed by .ci/setup-node.sh; skip without it, except under CI (fail)."""
    missing = [
        p for p in (NODE, PI_NODE_MODULES / "@earendil-works" / "pi-coding-agent") if not p.exists()
    ]
    if missing:
        why = f"{', '.join(map(str, missing))} missing: run bash .ci/setup-node.sh"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return NODE


@pytest.fixture
def node() -> Path:
    return node_binary()


def node_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DESKHAND_", "PI_"))}
    env["PATH"] = f"{NODE.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PI_OFFLINE"] = "1"
    env["PI_SKIP_VERSION_CHECK"] = "1"
    env["PI_TELEMETRY"] = "0"
    env["DH_PI_PKG"] = str(PI_DIR)
    env["DH_PI_NODE_MODULES"] = str(PI_NODE_MODULES)
    env["DH_PI_OUR_TOOLS"] = json.dumps(OUR_TOOLS)
    if extra:
        env.update(extra)
    return env


@dataclass
class PiDesk:
    """A real daemon on the simulated desktop, with its socket and the simulator's record."""

    root: Path
    extra_env: dict[str, str]
    proc: DaemonProc
    record: Path
    restarts: int = 0
    children: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def socket(self) -> Path:
        return self.proc.socket

    def records(self, event: str | None = None) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        rows = [json.loads(x) for x in self.record.read_text().splitlines() if x.strip()]
        return [r for r in rows if event is None or r["event"] == event]

    def tool_calls(self) -> list[str]:
        return [r["tool"] for r in self.records("call_start")]

    def status(self) -> dict[str, Any]:
        c = open_client(self.socket, "", answers=False, name="pi-test-probe")
        try:
            reply = c.call("status")
        finally:
            c.sock.close()
        assert reply["type"] == "result", reply
        result: dict[str, Any] = reply["result"]
        return result

    def pi_clients(self) -> list[dict[str, Any]]:
        return [c for c in self.status()["clients"] if c["kind"] == "pi"]

    def restart(self) -> None:
        """Stop the daemon (clients see a going-away close) and start a new one on the same socket."""
        self.proc.stop()
        self.restarts += 1
        self.proc = spawn_daemon(self.root, extra_env=self.extra_env)

    def harness_env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = node_env({"DESKHAND_SOCKET": str(self.socket), "DH_SIM_RECORD": str(self.record)})
        if extra:
            env.update(extra)
        return env

    def run(self, scenario: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        return run_harness(scenario, args, self.harness_env())

    def start(self, scenario: str, args: dict[str, Any] | None = None) -> subprocess.Popen[str]:
        """The harness as a child we talk to line by line (for scenarios that wait for us)."""
        cmd = [str(NODE), str(HARNESS), scenario]
        if args is not None:
            cmd.append(json.dumps(args))
        p = subprocess.Popen(
            cmd,
            cwd=PI_DIR,
            env=self.harness_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.children.append(p)
        return p


def parse_result(stdout: str, stderr: str) -> dict[str, Any]:
    lines = [ln for ln in stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"the harness reported nothing\nstdout:\n{stdout}\nstderr:\n{stderr}"
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def run_harness(
    scenario: str, args: dict[str, Any] | None, env: dict[str, str], pkg: Path | None = None
) -> dict[str, Any]:
    cmd = [str(node_binary()), str(HARNESS), scenario]
    if args is not None:
        cmd.append(json.dumps(args))
    if pkg is not None:
        env = {**env, "DH_PI_PKG": str(pkg)}
    out = subprocess.run(
        cmd, cwd=PI_DIR, env=env, capture_output=True, text=True, timeout=HARNESS_TIMEOUT
    )
    assert out.returncode == 0, (
        f"harness {scenario} exited {out.returncode}\n{out.stdout}\n{out.stderr}"
    )
    return parse_result(out.stdout, out.stderr)


def expect_line(stream: IO[str] | None, wanted: str) -> None:
    assert stream is not None
    line = stream.readline()
    assert line.strip() == wanted, f"expected {wanted!r} from the harness, got {line!r}"


def finish(p: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = p.communicate(timeout=HARNESS_TIMEOUT)
    assert p.returncode == 0, f"harness exited {p.returncode}\n{stdout}\n{stderr}"
    return parse_result(stdout, stderr)


@pytest.fixture
def pi_desk(node: Path) -> Iterator[Any]:
    """Factory: ``pi_desk(scenario=None, grants=SIM_APPS, **env)`` starts a daemon on the sim."""
    desks: list[PiDesk] = []

    def make(
        scenario: dict[str, Any] | None = None,
        *,
        grants: tuple[str, ...] = SIM_APPS,
        **env: str,
    ) -> PiDesk:
        root = short_tmpdir()
        if grants:
            save_grants(root / "config", grants)
        record = root / "record.jsonl"
        extra = {"DESKHAND_BACKEND": "sim", "DESKHAND_SIM_RECORD": str(record), **env}
        if scenario is not None:
            extra["DESKHAND_SIM_SCENARIO"] = json.dumps(scenario)
        desk = PiDesk(
            root=root, extra_env=extra, proc=spawn_daemon(root, extra_env=extra), record=record
        )
        desks.append(desk)
        return desk

    yield make
    for desk in desks:
        for child in desk.children:
            if child.poll() is None:
                child.kill()
            child.communicate(timeout=10)
        if desk.proc.proc.poll() is None:
            desk.proc.proc.kill()
            desk.proc.proc.wait(10)
        shutil.rmtree(desk.root, ignore_errors=True)
