"""The pi package itself: manifest, generated protocol types, types check, socket lookup, the
real pi loader, the skills, and the packed tarball installed without dev dependencies."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pirig import (
    JEV_ENV,
    NODE,
    OUR_TOOLS,
    PI_DIR,
    PiDesk,
    node_env,
    run_harness,
)

from deskhand_d import paths
from deskhand_d.schema import render

GENERATOR = PI_DIR / "scripts" / "gen-protocol-types.mjs"
GENERATED = PI_DIR / "src" / "protocol.gen.ts"

# Required parameters of each tool, as the predecessor package had them.
REQUIRED = {
    "cua_status": [],
    "jev_cua_status": [],
    "cua_list_apps": [],
    "cua_get_app_state": ["app"],
    "cua_click": ["app", "stateId"],
    "cua_drag": ["app", "stateId", "from_x", "from_y", "to_x", "to_y"],
    "cua_perform_secondary_action": ["app", "stateId", "element_index", "action"],
    "cua_press_key": ["app", "stateId", "key"],
    "cua_scroll": ["app", "stateId", "element_index", "direction"],
    "cua_select_text": ["app", "stateId", "element_index", "text"],
    "cua_set_value": ["app", "stateId", "element_index", "value"],
    "cua_type_text": ["app", "stateId", "text"],
    "jev_cua_observe": ["appName"],
    "jev_cua_run": ["appName", "goal"],
}
OPTIONAL = {
    "cua_get_app_state": ["disableDiff"],
    "cua_click": ["element_index", "x", "y", "mouse_button", "click_count"],
    "cua_scroll": ["pages"],
    "cua_select_text": ["prefix", "suffix", "selection_type"],
    "jev_cua_run": ["dryRun", "maxSteps", "fullTrace", "plan", "resources", "verify"],
}


def node_run(args: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NODE), *args],
        cwd=PI_DIR,
        env=node_env(),
        capture_output=True,
        text=True,
        timeout=120,
        **kw,
    )


def test_manifest() -> None:
    pkg = json.loads((PI_DIR / "package.json").read_text())
    assert "pi-package" in pkg["keywords"]
    assert pkg["type"] == "module"
    assert pkg["pi"]["extensions"] == ["./src/index.ts"]
    assert pkg["pi"]["skills"] == ["./skills"]
    assert set(pkg["peerDependencies"]) == {"@earendil-works/pi-coding-agent", "typebox"}
    assert pkg["engines"]["node"] == ">=22.19.0"
    # The host's packages are never runtime dependencies (pi maps them to its own copies).
    assert set(pkg["dependencies"]) == {"ws"}
    lock = json.loads((PI_DIR / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"] == pkg["dependencies"]


def test_protocol_types_are_current(node: Path, tmp_path: Path) -> None:
    """src/protocol.gen.ts matches docs/protocol.schema.json and the daemon's own Structs."""
    out = node_run([str(GENERATOR), "--check"])
    assert out.returncode == 0, out.stderr
    fresh = tmp_path / "schema.json"
    fresh.write_text(render())
    out = node_run([str(GENERATOR), "--check", "--schema", str(fresh)])
    assert out.returncode == 0, out.stderr
    # And the check notices a change: a new field in a reply.
    schema = json.loads(render())
    schema["$defs"]["Observation"]["properties"]["new_field"] = {"type": "string"}
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(schema))
    out = node_run([str(GENERATOR), "--check", "--schema", str(changed)])
    assert out.returncode == 1
    assert "out of date" in out.stderr
    # Regenerating from the changed schema writes the field (into a scratch copy).
    scratch = tmp_path / "gen.ts"
    out = node_run([str(GENERATOR), "--schema", str(changed), "--out", str(scratch)])
    assert out.returncode == 0, out.stderr
    assert "new_field?: string;" in scratch.read_text()
    text = GENERATED.read_text()
    for name in (
        "export interface Observation",
        "export type ClientToDaemon",
        "export type DaemonToClient",
    ):
        assert name in text


def test_typescript_typechecks(node: Path) -> None:
    tsc = PI_DIR / "node_modules" / "typescript" / "bin" / "tsc"
    out = node_run([str(tsc), "--noEmit", "-p", "tsconfig.json"])
    assert out.returncode == 0, out.stdout + out.stderr


SOCKET_CASES: list[tuple[str, dict[str, str]]] = [
    ("linux", {"DESKHAND_SOCKET": "/x/y.sock", "XDG_RUNTIME_DIR": "/run/user/7"}),
    ("linux", {"XDG_RUNTIME_DIR": "/run/user/7"}),
    ("linux", {"XDG_RUNTIME_DIR": "/run/user/7/"}),
    ("linux", {}),
    ("linux", {"XDG_RUNTIME_DIR": ""}),
    ("darwin", {"TMPDIR": "/var/folders/ab/T/", "HOME": "/Users/ann"}),
    ("darwin", {"HOME": "/Users/ann"}),
    ("darwin", {}),
    ("darwin", {"DESKHAND_SOCKET": "/s.sock", "TMPDIR": "/t"}),
    ("darwin", {"HOME": "/Users/" + "x" * 60, "TMPDIR": "/var/folders/ab/T/"}),  # too long
    ("darwin", {"HOME": "/Users/" + "x" * 60}),
]


def test_socket_lookup_matches_the_daemon(node: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = (
        "import { defaultSocketPath } from './src/socket.ts';"
        "const cases = JSON.parse(process.argv[1]);"
        "console.log(JSON.stringify(cases.map(([p, env]) => defaultSocketPath(env, p, 1234))));"
    )
    out = node_run(["--input-type=module", "-e", script, json.dumps(SOCKET_CASES)])
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    monkeypatch.setattr(paths.os, "getuid", lambda: 1234)
    for (platform, env), ours in zip(SOCKET_CASES, got, strict=True):
        monkeypatch.setattr(paths.sys, "platform", platform)
        assert ours == paths.default_socket_str(env), (platform, env)


def check_loaded(out: dict[str, Any]) -> None:
    assert out["errors"] == []
    assert out["extensions"] == 1
    assert out["tools"] == OUR_TOOLS
    assert set(out["sequential"]) == {"sequential"}
    assert out["commands"] == ["cua-mode"]
    assert {"session_start", "session_tree", "agent_start", "agent_end", "session_shutdown"} <= set(
        out["handlers"]
    )
    for name, schema in out["schemas"].items():
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False, name
        assert sorted(schema.get("required", [])) == sorted(REQUIRED[name]), name
        assert sorted(schema["properties"]) == sorted(REQUIRED[name] + OPTIONAL.get(name, [])), name
    click = out["schemas"]["cua_click"]["properties"]
    assert click["element_index"]["type"] == "integer" and click["element_index"]["minimum"] == 0
    assert click["mouse_button"]["enum"] == ["left", "right", "middle"]
    assert (click["click_count"]["minimum"], click["click_count"]["maximum"]) == (1, 3)
    run = out["schemas"]["jev_cua_run"]["properties"]
    assert (run["maxSteps"]["minimum"], run["maxSteps"]["maximum"]) == (1, 20)
    assert run["verify"]["required"] == ["role", "labelEquals"]
    assert run["resources"]["additionalProperties"] is False
    assert [s["name"] for s in out["skills"]] == ["deskhand-allow-app", "deskhand-desktop"]
    assert out["skillDiagnostics"] == []


def test_real_loader_registers_everything_and_connects_nothing(pi_desk: Any) -> None:
    """pi's loader: 14 tools, /cua-mode, the handlers, the skills; loading opens no connection."""
    desk: PiDesk = pi_desk()
    check_loaded(desk.run("load"))
    # The only hello the daemon ever served is this status probe's own.
    assert desk.status()["ops"]["hello"]["count"] == 1
    assert desk.pi_clients() == []


def test_packed_tarball_installs_without_dev_deps_and_loads(pi_desk: Any, tmp_path: Path) -> None:
    npm = shutil.which("npm", path=node_env()["PATH"])
    assert npm, "npm is needed to pack the extension"
    env = node_env()
    packed = subprocess.run(
        [npm, "pack", "--json", "--pack-destination", str(tmp_path)],
        cwd=PI_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    (info,) = json.loads(packed.stdout)
    tarball = tmp_path / info["filename"]
    with tarfile.open(tarball) as tar:
        names = {n.removeprefix("package/") for n in tar.getnames()}
    assert {
        "package.json",
        "README.md",
        "src/index.ts",
        "src/daemon.ts",
        "src/protocol.gen.ts",
        "skills/deskhand-desktop/SKILL.md",
        "skills/deskhand-allow-app/SKILL.md",
    } <= names
    assert not any(n.startswith(("node_modules/", "scripts/")) for n in names)
    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "package.json").write_text('{"name": "consumer", "private": true}\n')
    subprocess.run(
        [
            npm,
            "install",
            "--omit=dev",
            "--ignore-scripts",
            "--legacy-peer-deps",
            "--prefer-offline",
            "--no-audit",
            "--no-fund",
            str(tarball),
        ],
        cwd=consumer,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    modules = consumer / "node_modules"
    installed = modules / "@deskhand" / "pi-deskhand"
    assert (installed / "src" / "index.ts").is_file()
    assert (modules / "ws").is_dir()  # the one runtime dependency
    assert not (modules / "@earendil-works").exists()  # pi is the host's, not ours
    assert not (modules / "typebox").exists()
    assert not (modules / "typescript").exists()
    desk: PiDesk = pi_desk({"preapproved": ["*"]})
    check_loaded(run_harness("load", None, desk.harness_env(), pkg=installed))
    # The installed copy also works in a real session against the daemon.
    out = run_harness("calc", None, desk.harness_env(), pkg=installed)
    assert [r["isError"] for r in out["results"]] == [False] * 6
    assert "\u200e13" in out["results"][-1]["text"]


def test_setup_node_is_idempotent(node: Path) -> None:
    """A second run of .ci/setup-node.sh only checks: it finds Node 22 and the packages."""
    root = PI_DIR.parent.parent
    out = subprocess.run(
        ["bash", str(root / ".ci" / "setup-node.sh")],
        cwd=root,
        env=node_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "installing" not in out.stderr
    assert "setup-node: v22." in out.stderr


PI_CLI = (
    PI_DIR / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "bundle" / "cli.js"
)


def rpc_session(
    args: list[str], commands: list[dict[str, Any]], env: dict[str, str], cwd: Path
) -> list[dict[str, Any]]:
    """Run the real `pi --mode rpc`, send ``commands``, and read until each has its response
    (RPC mode ends on end of input, so stdin stays open until then)."""
    p = subprocess.Popen(
        [str(NODE), str(PI_CLI), "--mode", "rpc", "--offline", "--no-session", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert p.stdin is not None and p.stdout is not None
    stdout = p.stdout
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:  # a thread: select() can't see lines already in the pipe's buffer
        for line in stdout:
            lines.put(line)
        lines.put("")

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    seen: list[dict[str, Any]] = []
    wanted = {c["id"] for c in commands}
    deadline = time.monotonic() + 60
    try:
        for c in commands:
            p.stdin.write(json.dumps(c) + "\n")
        p.stdin.flush()
        while wanted and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1.0)
            except queue.Empty:
                continue
            if not line:
                break
            msg = json.loads(line)
            seen.append(msg)
            if msg.get("type") == "response":
                wanted.discard(msg.get("id"))
        assert not wanted, f"no response to {wanted}: {seen}"
    finally:
        p.stdin.close()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
        reader.join(10)
        stdout.close()
    return seen


def test_real_pi_cli_loads_it_and_runs_cua_mode(pi_desk: Any, tmp_path: Path) -> None:
    """`pi --mode rpc -e clients/pi`: /cua-mode jev is handled, persisted and sent to the daemon."""
    desk: PiDesk = pi_desk({"preapproved": ["*"]}, **JEV_ENV)
    env = desk.harness_env({"PI_CODING_AGENT_DIR": str(tmp_path / "agent")})
    work = tmp_path / "work"
    work.mkdir()
    seen = rpc_session(
        ["-e", str(PI_DIR)],
        [
            {"id": "1", "type": "get_commands"},
            {"id": "2", "type": "prompt", "message": "/cua-mode jev"},
            {"id": "3", "type": "get_entries"},
        ],
        env,
        work,
    )
    responses = {m["id"]: m for m in seen if m.get("type") == "response"}
    commands = {c["name"]: c for c in responses["1"]["data"]["commands"]}
    assert commands["cua-mode"]["source"] == "extension"
    assert commands["skill:deskhand-desktop"]["source"] == "skill"
    assert commands["skill:deskhand-allow-app"]["source"] == "skill"
    assert responses["2"]["data"]["disposition"] == "handled"
    appended = [m["entry"] for m in seen if m.get("type") == "entry_appended"]
    assert [(e["customType"], e["data"]) for e in appended] == [("cua-mode", {"mode": "jev"})]
    notices = [m["message"] for m in seen if m.get("method") == "notify"]
    assert any("jev mode" in n for n in notices), notices
    ops = desk.status()["ops"]
    assert ops["mode_set"]["count"] == 1 and ops["mode_set"]["errors"] == 0


def test_pi_install_of_the_checkout(node: Path, tmp_path: Path) -> None:
    """The README's `pi install ./clients/pi` (a local path, loaded in place) and `pi list`."""
    env = node_env({"PI_CODING_AGENT_DIR": str(tmp_path / "agent")})
    root = PI_DIR.parent.parent
    installed = subprocess.run(
        [str(NODE), str(PI_CLI), "install", "./clients/pi"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = subprocess.run(
        [str(NODE), str(PI_CLI), "list"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "clients/pi" in listed.stdout
    settings = json.loads((tmp_path / "agent" / "settings.json").read_text())
    (entry,) = settings["packages"]
    assert (tmp_path / "agent" / entry).resolve() == PI_DIR.resolve()
