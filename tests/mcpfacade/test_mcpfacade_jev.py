"""``deskhandctl mcp`` in jev mode, against the real daemon on the simulator and the scripted fake
Jev server: a run's steps as ``notifications/progress`` (only when the host asked, increasing),
and ``notifications/tools/list_changed`` when ``mode_set`` changes the session's mode."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from dhtest.jev_rig import BUTTON, jev_factory, pick
from dhtest.mcpsaid import said_code
from facade_rig import JevTarget, RawHost

pytestmark = pytest.mark.slow
__all__ = ["jev_factory"]


@pytest.fixture
def raw(jev_factory: Any) -> Iterator[Any]:
    made: list[RawHost] = []

    def make(script: list[dict[str, Any]]) -> RawHost:
        made.append(RawHost(JevTarget(jev_factory(script))))
        return made[-1]

    yield make
    for host in made:
        host.shut()


def test_run_reports_progress_when_asked(raw: Any) -> None:
    script = [pick(BUTTON[k]) for k in ["1", "+", "2", "="]]
    host: RawHost = raw(script + script)
    host.initialize()
    verify = {"role": "text", "label_equals": "3"}
    args = {"app": "Calculator", "goal": "Calculate 1 + 2", "max_steps": 6, "verify": verify}
    host.call(1, "run", args, progressToken="tok-1")
    result = host.reply(1, timeout=60)["result"]
    assert not result["isError"], result
    assert result["structuredContent"]["status"] == "done"
    assert result["structuredContent"]["verified"] is True
    progress = [m for m in host.seen if m.get("method") == "notifications/progress"]
    assert progress, host.seen
    values = [m["params"]["progress"] for m in progress]
    assert values == sorted(set(values)) and all(
        m["params"]["progressToken"] == "tok-1" and m["params"]["message"] for m in progress
    )
    host.seen.clear()
    host.call(2, "run", {**args, "goal": "again"})  # no token: no progress
    assert host.reply(2, timeout=60)["result"]["structuredContent"]["status"] in (
        "done",
        "model_done",
        "max_steps",
    )
    assert not [m for m in host.seen if m.get("method") == "notifications/progress"]


def test_mode_set_announces_a_changed_tool_list(raw: Any) -> None:
    host: RawHost = raw([])
    host.initialize()
    host.request(1, "tools/list")
    tools = {t["name"]: t for t in host.reply(1)["result"]["tools"]}
    assert "handoff" in tools["click"]["inputSchema"]["properties"]
    assert not tools["run"]["description"].startswith("Not available")
    host.call(2, "mode_set", {"mode": "native"})
    assert host.reply(2)["result"]["structuredContent"]["mode"] == "native"
    host.method("notifications/tools/list_changed")
    host.request(3, "tools/list")
    tools = {t["name"]: t for t in host.reply(3)["result"]["tools"]}
    assert "handoff" not in tools["click"]["inputSchema"]["properties"]
    assert tools["run"]["description"].startswith("Not available")
    host.call(4, "run", {"app": "Calculator", "goal": "x"})
    refused = host.reply(4)["result"]
    assert refused["isError"] and said_code(refused) == "jev_mode_required"
    host.call(5, "mode_get", {})
    assert host.reply(5)["result"]["structuredContent"]["mode"] == "native"
    host.call(6, "mode_set", {"mode": "jev"})
    assert host.reply(6)["result"]["structuredContent"]["mode"] == "jev"
    host.method("notifications/tools/list_changed")
    host.call(7, "mode_set", {"mode": "jev"})  # no change, no notification
    host.reply(7)
    host.request(8, "ping")
    host.reply(8)
    assert not [m for m in host.seen if m.get("method") == "notifications/tools/list_changed"]
