"""``deskhandctl mcp`` hands a model nothing that takes the person's decisions: no tool releases
the emergency stop, allows an app, restores a grant, watches or answers questions, and none of
the facade's modules sends those ops. Its connection says it is an agent's (kind ``agent``), so
the daemon refuses them to it as well (``tests/consent/test_agent_limits.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from deskhandctl.facade import tools as mcptools
from dhtest.clidaemon import CliDaemon
from facade_rig import RawHost

PERSON_ONLY_OPS = ("unlock", "apps_add", "grants_restore", "questions_watch", "answer")
FACADE_MODULES = ("server.py", "tools.py", "link.py", "core.py")


@pytest.mark.parametrize("mode", ["native", "jev"])
def test_no_tool_takes_the_persons_decisions(mode: str) -> None:
    names = {t["name"] for t in mcptools.tool_list(mcptools.load_schemas(), mode)}
    assert names.isdisjoint(PERSON_ONLY_OPS), names
    for name in names:  # nor under another name
        assert not any(word in name for word in ("unlock", "allow", "grant", "answer", "question"))


def test_the_facade_sends_no_person_only_op() -> None:
    """The facade answers only the questions its host's person answered (elicitation), which
    are its own connection's; it never names another of these ops."""
    package = Path(mcptools.__file__).parent
    for module in FACADE_MODULES:
        text = (package / module).read_text()
        for op in PERSON_ONLY_OPS:
            if op == "answer" and module == "server.py":
                continue  # relaying the host's own answer to its own question
            assert f'"{op}"' not in text and f"'{op}'" not in text, (module, op)


def test_a_live_facade_lists_none_refuses_them_and_says_it_is_an_agent(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
    desk = desks({"preapproved": ["*"]}, TYPESAFE_API_KEY="")
    host = hosts(desk)
    host.initialize("2025-11-25", {"elicitation": {}})
    host.request(1, "tools/list")
    names = {t["name"] for t in host.reply(1)["result"]["tools"]}
    assert names and names.isdisjoint(PERSON_ONLY_OPS)
    for n, op in enumerate(PERSON_ONLY_OPS, start=2):
        host.call(n, op, {})
        assert host.reply(n)["error"]["code"] == -32602  # unknown tool
    kinds = {c["name"]: c["kind"] for c in desk.json("status")["clients"]}
    assert kinds["raw-host"] == "mcp", kinds  # the facade's own connection, named for its host
