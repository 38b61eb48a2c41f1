"""The real agent hosts, run the way a person sets them up, each with a scripted model of ours.

Claude Code and Codex CLI come pinned from the npm registry (``.ci/setup-hosts.sh`` installs
them with the Node 22 of ``.ci/.node``). Each run gets a home of its own; Deskhand is registered
with the host by ``deskhandctl mcp config --host H --write`` (the command a person runs), the
host's model is :class:`dhtest.fakemodel.FakeModel` on 127.0.0.1, and the host runs headless
(``claude -p``, ``codex exec``), where nobody sits at it: its questions to the person are
answered by the host itself, and a ``deskhandctl questions`` console is how the person answers.

The tests assert on what the fake model received: that is exactly what a real model would see.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dhtest.fakemodel import FakeModel, Request, tool_results

ROOT = Path(__file__).resolve().parents[2]
HOSTS_BIN = ROOT / ".ci" / ".hosts" / "node_modules" / ".bin"
NODE_BIN = ROOT / ".ci" / ".node" / "node_modules" / "node" / "bin"
CLAUDE = HOSTS_BIN / "claude"
CODEX = HOSTS_BIN / "codex"
# The versions these tests were written against (.ci/setup-hosts.sh pins the same).
CLAUDE_CODE_VERSION = "2.1.332"
CODEX_VERSION = "0.171.0"
RUN_TIMEOUT_S = 240.0


def need(program: Path) -> None:
    """The host must be installed; in CI its absence fails the test rather than skipping it."""
    if program.exists():
        return
    message = f"{program} is missing: run `bash .ci/setup-hosts.sh`"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def host_env(home: Path, deskhand_env: Mapping[str, str]) -> dict[str, str]:
    """A person's environment for a host in ``home``: Deskhand's daemon settings, the pinned
    Node first on PATH, nothing of a real account or another host's settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "DESKHAND_"))
    }
    env.update({k: v for k, v in deskhand_env.items() if k.startswith("DESKHAND_")})
    # The person's session: its runtime directory holds the daemon's socket, which
    # `deskhandctl mcp config` then pins into the host's entry.
    env["XDG_RUNTIME_DIR"] = deskhand_env["XDG_RUNTIME_DIR"]
    env["PATH"] = f"{NODE_BIN}:{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["NO_COLOR"] = "1"
    return env


def register(host: str, env: Mapping[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    """``deskhandctl mcp config --host HOST --write``, as the person runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "deskhandctl", "mcp", "config", "--host", host, "--write", *extra],
        env=dict(env),
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done


# ----- Claude Code ------------------------------------------------------------------------------


def claude_env(home: Path, fake: FakeModel, deskhand_env: Mapping[str, str]) -> dict[str, str]:
    env = host_env(home, deskhand_env)
    env.update(
        {
            "ANTHROPIC_BASE_URL": fake.url,
            "ANTHROPIC_API_KEY": "test-key-of-the-fake-model",
            "CLAUDE_CONFIG_DIR": str(home / "claude-config"),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
            "MCP_TIMEOUT": "30000",
        }
    )
    return env


def run_claude(env: Mapping[str, str], prompt: str) -> subprocess.CompletedProcess[str]:
    """``claude -p`` with Deskhand's tools allowed (print mode asks nobody for permission)."""
    return subprocess.run(
        [
            str(CLAUDE),
            "-p",
            prompt,
            "--allowedTools",
            "mcp__deskhand",
            "--output-format",
            "json",
            "--max-turns",
            "12",
        ],
        env=dict(env),
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )


# ----- Codex ------------------------------------------------------------------------------------


def codex_env(home: Path, deskhand_env: Mapping[str, str]) -> dict[str, str]:
    env = host_env(home, deskhand_env)
    env.update({"CODEX_HOME": str(home / "codex-home"), "FAKE_MODEL_KEY": "test-key"})
    return env


def codex_model_settings(
    fake: FakeModel,
    *,
    approval_policy: str = '"never"',
    sandbox: str = "read-only",
    extra: str = "",
) -> str:
    """The top of a person's config.toml for a model served at ``fake``: the custom provider
    (Responses wire), headless approval policy (a TOML value), and no network beyond it;
    ``extra``: more top-level lines."""
    return f"""model = "fake-model"
model_provider = "fake"
approval_policy = {approval_policy}
sandbox_mode = "{sandbox}"
check_for_update_on_startup = false
{extra}
[analytics]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false
in_app_updates = false

[model_providers.fake]
name = "fake"
base_url = "{fake.url}/v1"
wire_api = "responses"
env_key = "FAKE_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


def run_codex(env: Mapping[str, str], prompt: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CODEX), "exec", "--skip-git-repo-check", "--json", prompt],
        env=dict(env),
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )


# ----- what the model received ------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """One tool result as the model received it: its words, its images, its error flag (None
    where the wire has none)."""

    text: str
    images: int
    is_error: bool | None


def seen(result: dict[str, Any]) -> Seen:
    """Read a tool result of either wire (Anthropic ``tool_result``, Responses
    ``function_call_output``)."""
    content = result["content"]
    if isinstance(content, str):
        return Seen(content, 0, result["is_error"])
    texts, images = [], 0
    for block in content or []:
        kind = block.get("type")
        if kind in ("text", "input_text", "output_text"):
            texts.append(str(block.get("text", "")))
        elif kind in ("image", "input_image"):
            images += 1
    return Seen("\n".join(texts), images, result["is_error"])


def latest(req: Request) -> Seen:
    """The newest tool result in the request the model is answering."""
    results = tool_results(req)
    assert results, "the host sent no tool result"
    return seen(results[-1])


def _deskhand_calls(req: Request) -> set[str]:
    """The ids of the calls the model made to Deskhand's tools (the host's own tools, such as
    Claude Code's ToolSearch, are left out), from the conversation the request carries."""
    body = req.body if isinstance(req.body, dict) else {}
    ids: set[str] = set()
    for message in body.get("messages") or []:  # Anthropic: assistant tool_use blocks
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            if "deskhand" in str(block.get("name")):
                ids.add(str(block.get("id")))
    for item in body.get("input") or []:  # Responses: function_call items
        if not isinstance(item, dict) or item.get("type") != "function_call":
            continue
        if "deskhand" in f"{item.get('namespace', '')}{item.get('name', '')}":
            ids.add(str(item.get("call_id")))
    return ids


def every_result(fake: FakeModel) -> list[Seen]:
    """Every result of Deskhand's tools the model received, once each, in order (each request
    repeats the conversation so far: the last main request holds them all)."""
    mains = fake.main_requests()
    assert mains, "the host never asked the model"
    ours = _deskhand_calls(mains[-1])
    return [seen(r) for r in tool_results(mains[-1]) if str(r["id"]) in ours]


def state_id_in(text: str) -> str:
    found = re.search(r"^(?:New )?stateId for .+?: (\S+)$", text, re.MULTILINE)
    assert found, f"no stateId in {text[:400]!r}"
    return found.group(1)


def index_of(text: str, label: str) -> str:
    """The element index on the tree line naming ``label``, as Sky's own tools take it: a
    string of digits."""
    for line in text.splitlines():
        found = re.match(r"\s*(\d+) ", line)
        if found and label in line:
            return found.group(1)
    raise AssertionError(f"no element line with {label!r} in {text[:600]!r}")


def dump(fake: FakeModel, done: subprocess.CompletedProcess[str]) -> str:
    """What to show when a host run went wrong."""
    asked = [
        {"path": r.path, "main": r.main, "results": [seen(t) for t in tool_results(r)]}
        for r in fake.requests
    ]
    return json.dumps(
        {
            "returncode": done.returncode,
            "stdout": done.stdout[-3000:],
            "stderr": done.stderr[-3000:],
            "fake_errors": fake.errors,
            "requests": [str(a)[:1500] for a in asked],
        },
        indent=1,
    )
