"""Drive the real agent hosts end to end against the stand-in MCP server (issue 27). A script.

    .venv/bin/python tests/hosts/probe_hosts.py [claude|codex ...] [--signals log] [--keep]

Needs `bash .ci/setup-hosts.sh` (the pinned hosts in .ci/.hosts). For each host: a fake model
(tests/dhtest/fakemodel.py) on 127.0.0.1 plays five turns (look, snap index 3, peek, fail, ask)
and a final text; the host runs tests/hosts/standin_mcp.py as its MCP server. Printed: the exact
tool results the fake model received per tool, the other requests, the stand-in server's log
(what the host sent it, the elicitation answer and its timing, the signals at shutdown), the
host's stdout/stderr and the time the run took. --signals log makes the stand-in only log
signals (to see a host escalate); --keep leaves the temporary home in place.

Knobs (environment), for the experiments behind issue 27's facts:
- PROBE_DUMP=PREFIX: every request the fake model got, as JSON, to PREFIX.<host>.json.
- PROBE_WRAP="strace -f -e trace=kill -o F": run the host under a command.
- Claude Code: PROBE_CLAUDE_ALLOW=0 drops --allowedTools; PROBE_CLAUDE_ARGS adds arguments
  (e.g. --debug-file F); PROBE_CLAUDE_HOOK=SECONDS installs an Elicitation hook in
  $CLAUDE_CONFIG_DIR/settings.json that accepts after SECONDS.
- Codex: PROBE_CODEX_APPROVE=0 drops the per-tool approval_mode; PROBE_CODEX_POLICY (default
  never) or PROBE_CODEX_POLICY_TOML (a TOML value) sets approval_policy; PROBE_CODEX_SANDBOX
  (default read-only) sandbox_mode; PROBE_CODEX_SERVER_EXTRA adds lines to
  [mcp_servers.standin]; PROBE_CODEX_EXTRA adds top-level lines; PROBE_CODEX_MODEL_FROM=SLUG
  gives fake-model a bundled model's metadata (PROBE_CODEX_MODALITIES=text,image);
  PROBE_CODEX_CODE=1 plays the script in code mode (use with PROBE_CODEX_MODEL_FROM=gpt-6.2-sol).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from agenthosts import codex_model_settings  # noqa: E402
from dhtest.fakemodel import Call, Code, FakeModel, Request, tool_results  # noqa: E402

HOSTS = ROOT / ".ci" / ".hosts" / "node_modules" / ".bin"
NODE_DIR = ROOT / ".ci" / ".node" / "node_modules" / "node" / "bin"
STANDIN = Path(__file__).with_name("standin_mcp.py")
TOOLS = ["look", "snap", "peek", "fail", "ask"]
SCRIPT = [
    Call("look", {"app": "Calculator"}),
    Call("snap", {"index": 3}),
    Call("peek"),
    Call("fail"),
    Call("ask"),
    "All the tools were called.",
]
# Codex's code mode (the bundled OpenAI models' tool_mode): the model writes JavaScript.
CODE_SCRIPT = [
    Code('const r = await tools.mcp__standin__look({app: "Calculator"});\ntext(r);'),
    Code(
        "const r = await tools.mcp__standin__snap({index: 3});\n"
        'for (const c of r.content) { if (c.type === "image") image(c); else text(c.text); }'
    ),
    Code("const r = await tools.mcp__standin__peek({});\ntext(r);"),
    Code("const r = await tools.mcp__standin__fail({});\ntext(r);"),
    Code("const r = await tools.mcp__standin__ask({});\ntext(r);"),
    "All the tools were called.",
]
PROMPT = "Use the standin tools: look, snap, peek, fail, ask."


def wrap() -> list[str]:
    """PROBE_WRAP: a command line to run the host under (e.g. strace -f -e trace=kill)."""
    return shlex.split(os.environ.get("PROBE_WRAP", ""))


def base_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_"))
    }
    env["PATH"] = f"{NODE_DIR}:{env.get('PATH', '/usr/bin:/bin')}"
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["NO_COLOR"] = "1"
    return env


def claude_run(
    fake: FakeModel, home: Path, log: Path, signals: str
) -> subprocess.CompletedProcess[str]:
    cfg = home / "mcp.json"
    cfg.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "standin": {
                        "type": "stdio",
                        "command": sys.executable,
                        "args": [str(STANDIN)],
                        "env": {"STANDIN_LOG": str(log), "STANDIN_SIGNALS": signals},
                    }
                }
            }
        )
    )
    env = base_env(home) | {
        "ANTHROPIC_BASE_URL": fake.url,
        "ANTHROPIC_API_KEY": "dummy",
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
        "MCP_TIMEOUT": "30000",
    }
    if os.environ.get("PROBE_CLAUDE_HOOK"):  # an Elicitation hook that answers for a person
        hook = home / "elicitation-hook.sh"
        hook.write_text(
            "#!/bin/sh\n"
            f"cat > {home}/hook-input.json\n"
            f"sleep {os.environ['PROBE_CLAUDE_HOOK']}\n"
            'echo \'{"hookSpecificOutput": {"hookEventName": "Elicitation", '
            '"action": "accept", "content": {"allow": true}}}\'\n'
        )
        hook.chmod(0o755)
        (home / ".claude").mkdir(exist_ok=True)
        (home / ".claude" / "settings.json").write_text(
            json.dumps(
                {
                    "hooks": {
                        "Elicitation": [
                            {
                                "matcher": "standin",
                                "hooks": [{"type": "command", "command": str(hook)}],
                            }
                        ]
                    }
                }
            )
        )
    allowed = ",".join(f"mcp__standin__{t}" for t in TOOLS)
    cmd = [
        str(HOSTS / "claude"),
        "-p",
        PROMPT,
        "--mcp-config",
        str(cfg),
        "--strict-mcp-config",
        *(["--allowedTools", allowed] if os.environ.get("PROBE_CLAUDE_ALLOW", "1") == "1" else []),
        "--output-format",
        "json",
        "--max-turns",
        "10",
        *shlex.split(os.environ.get("PROBE_CLAUDE_ARGS", "")),
    ]
    return subprocess.run(
        wrap() + cmd,
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def codex_config(fake: FakeModel, log: Path, signals: str, extra: str = "") -> str:
    """PROBE_CODEX_APPROVE=0 leaves out the per-tool approval_mode; PROBE_CODEX_POLICY sets
    approval_policy (default never), PROBE_CODEX_SANDBOX sandbox_mode (default read-only),
    PROBE_CODEX_SERVER_EXTRA adds lines to [mcp_servers.standin], PROBE_CODEX_EXTRA top-level
    lines."""
    approve = os.environ.get("PROBE_CODEX_APPROVE", "1") == "1" and "".join(
        f'[mcp_servers.standin.tools.{t}]\napproval_mode = "approve"\n\n' for t in TOOLS
    )
    policy = os.environ.get("PROBE_CODEX_POLICY", "never")
    settings = codex_model_settings(
        fake,
        approval_policy=os.environ.get("PROBE_CODEX_POLICY_TOML", f'"{policy}"'),
        sandbox=os.environ.get("PROBE_CODEX_SANDBOX", "read-only"),
        extra=extra,
    )
    return (
        settings
        + f'''
[mcp_servers.standin]
command = "{sys.executable}"
args = ["{STANDIN}"]
tool_timeout_sec = 60
env = {{ STANDIN_LOG = "{log}", STANDIN_SIGNALS = "{signals}" }}
{os.environ.get("PROBE_CODEX_SERVER_EXTRA", "")}

{approve or ""}'''
    )


def codex_catalog(codex_home: Path, env: dict[str, str]) -> str:
    """PROBE_CODEX_MODEL_FROM=<slug>: a model catalog (config model_catalog_json) whose one
    entry, fake-model, copies a bundled model's metadata (`codex debug models`), with
    PROBE_CODEX_MODALITIES (comma-separated, default text,image) as input_modalities and the
    tool search off (so MCP tools are offered directly). Returns the config line, or ''."""
    slug = os.environ.get("PROBE_CODEX_MODEL_FROM")
    if not slug:
        return ""
    out = subprocess.run(
        [str(HOSTS / "codex"), "debug", "models"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    entry = next(m for m in json.loads(out)["models"] if m["slug"] == slug)
    mods = os.environ.get("PROBE_CODEX_MODALITIES", "text,image").split(",")
    entry |= {
        "slug": "fake-model",
        "display_name": "Fake",
        "input_modalities": mods,
        "supports_search_tool": False,
        "prefer_websockets": False,
    }
    path = codex_home / "catalog.json"
    path.write_text(json.dumps({"models": [entry]}))
    return f'model_catalog_json = "{path}"\n'


def codex_run(
    fake: FakeModel, home: Path, log: Path, signals: str
) -> subprocess.CompletedProcess[str]:
    codex_home = home / ".codex"
    codex_home.mkdir(exist_ok=True)
    env = base_env(home) | {
        "CODEX_HOME": str(codex_home),
        "FAKE_MODEL_KEY": "dummy",
        "RUST_LOG": os.environ.get("PROBE_RUST_LOG", "warn"),
    }
    extra = codex_catalog(codex_home, env) + os.environ.get("PROBE_CODEX_EXTRA", "")
    (codex_home / "config.toml").write_text(codex_config(fake, log, signals, extra))
    cmd = [
        str(HOSTS / "codex"),
        "exec",
        "--skip-git-repo-check",
        "--json",
        *shlex.split(os.environ.get("PROBE_CODEX_ARGS", "")),
        PROMPT,
    ]
    return subprocess.run(
        wrap() + cmd,
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def short(obj: Any, limit: int = 600) -> str:
    s = json.dumps(obj)
    return s if len(s) <= limit else s[:limit] + f"...(+{len(s) - limit})"


def strip_images(obj: Any) -> Any:
    """Long base64 strings shortened so the output stays readable."""
    if isinstance(obj, dict):
        return {k: strip_images(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [strip_images(v) for v in obj]
    if isinstance(obj, str) and len(obj) > 80 and (obj.startswith(("iVBOR", "data:image"))):
        return obj[:40] + f"...<{len(obj)} chars>"
    return obj


def report(
    host: str, fake: FakeModel, log: Path, proc: subprocess.CompletedProcess[str], seconds: float
) -> None:
    print(f"===== {host}: exit {proc.returncode} in {seconds:.1f} s")
    print("--- requests to the fake model:")
    for r in fake.requests:
        b = r.body if isinstance(r.body, dict) else {}
        print(
            f"  {r.method} {r.path} main={r.main} turn={r.turn} model={b.get('model')} "
            f"stream={b.get('stream')} tools={len(r.tool_names())} ua={r.headers.get('user-agent')}"
        )
    mains = fake.main_requests()
    if mains:
        last: Request = mains[-1]
        print(f"--- tool names offered: {[n for n in last.tool_names() if 'standin' in n]}")
        calls = {}
        for r in mains:
            body = r.body if isinstance(r.body, dict) else {}
            for it in body.get("input") or []:
                if isinstance(it, dict) and it.get("type") == "function_call":
                    calls[it.get("call_id")] = it.get("name")
            for m in body.get("messages") or []:
                if m.get("role") == "assistant" and isinstance(m.get("content"), list):
                    for c in m["content"]:
                        if c.get("type") == "tool_use":
                            calls[c.get("id")] = c.get("name")
        for tr in tool_results(last):
            print(f"--- tool result for {calls.get(tr['id'], tr['id'])}:")
            print("  " + json.dumps(strip_images(tr), indent=None))
    if fake.errors:
        print(f"--- fake model errors: {fake.errors}")
    print("--- stand-in server log (tools/list and results elided):")
    if log.exists():
        for line in log.read_text().splitlines():
            e = json.loads(line)
            msg = e.get("msg") or {}
            if e["kind"] == "out" and "tools" in (msg.get("result") or {}):
                continue
            if e["kind"] == "out" and "content" in (msg.get("result") or {}):
                continue
            print(f"  {short(strip_images(e), 400)}")
    print(f"--- stdout: {proc.stdout[-1500:]}")
    print(f"--- stderr: {proc.stderr[-2500:]}")


def main(argv: list[str]) -> int:
    signals = "log" if "--signals" in argv and "log" in argv else "exit"
    keep = "--keep" in argv
    hosts = [a for a in argv if a in ("claude", "codex")] or ["claude", "codex"]
    for host in hosts:
        home = Path(tempfile.mkdtemp(prefix=f"probe-{host}-"))
        log = home / "standin.log"
        code_mode = host == "codex" and os.environ.get("PROBE_CODEX_CODE") == "1"
        with FakeModel(CODE_SCRIPT if code_mode else SCRIPT) as fake:
            t0 = time.monotonic()
            run = claude_run if host == "claude" else codex_run
            proc = run(fake, home, log, signals)
            seconds = time.monotonic() - t0
            time.sleep(1.5 if signals == "exit" else 6)  # let the server log its end
            report(host, fake, log, proc, seconds)
            if os.environ.get("PROBE_DUMP"):
                Path(os.environ["PROBE_DUMP"] + f".{host}.json").write_text(
                    json.dumps(
                        [
                            {
                                "method": r.method,
                                "path": r.path,
                                "headers": r.headers,
                                "body": r.body,
                            }
                            for r in fake.requests
                        ],
                        indent=1,
                    )
                )
        if keep:
            print(f"--- home kept at {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
