"""The pi extension hands the model nothing that takes the person's decisions: none of its tools
releases the emergency stop, allows an app, restores a grant, watches or answers other clients'
questions; its sources send none of those ops (``answer`` only for its own requests' questions,
from pi's dialogs); and its allow-app skill has the person run the command in their own
terminal instead of telling the model to run it. Its connection says ``pi``, which the daemon
refuses those steps (``tests/consent/test_agent_limits.py``)."""

from __future__ import annotations

import re
from typing import Any

from pirig import PI_DIR, PiDesk

PERSON_ONLY_OPS = ("unlock", "apps_add", "grants_restore", "questions_watch", "answer")


def test_the_loaded_extension_offers_no_person_only_tool(pi_desk: Any) -> None:
    desk: PiDesk = pi_desk()
    tools = desk.run("load")["tools"]
    assert tools
    for name in tools:
        assert not any(word in name for word in ("unlock", "allow", "grant", "answer", "question"))


def test_the_extension_sends_no_person_only_op() -> None:
    for source in sorted((PI_DIR / "src").glob("*.ts")):
        if source.name == "protocol.gen.ts":
            continue  # the protocol's types: every op is named there
        text = source.read_text()
        for op in PERSON_ONLY_OPS:
            if op == "answer" and source.name == "daemon.ts":
                continue  # the person's answer, from pi's dialog, to this connection's question
            assert f'"{op}"' not in text, (source.name, op)


def test_the_allow_app_skill_leaves_the_command_to_the_person() -> None:
    text = (PI_DIR / "skills" / "deskhand-allow-app" / "SKILL.md").read_text()
    description = re.search(r"^description: (.*)$", text, re.MULTILINE)
    assert description is not None
    assert "You cannot add an app yourself" in description.group(1)
    assert "Tell them to run this in their own terminal" in text
    assert "Do not run the command yourself" in text
