"""The steps only the person takes (``unlock``, ``apps add``, ``grants restore``, ``questions``)
run only from a terminal, and the first three only once the person confirms there.

A real daemon on the simulated desktop, ``deskhandctl`` as a subprocess. Without a terminal (an
agent's shell tool, a script, a pipe that says yes) the command exits 66 before it connects,
so the daemon never sees the op; its state shows nothing changed. On a pseudo-terminal a ``y``
typed before the prompt appeared is thrown away, an answer other than yes sends nothing, and a
yes typed at the prompt goes through.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from dhtest.clidaemon import CliDaemon, sim_desk
from dhtest.terminal import CONFIRM_PROMPT, Terminal

__all__ = ["sim_desk"]

# argv, the op it sends
CONFIRMED = [
    (["unlock"], "unlock"),
    (["apps", "add", "Safari"], "apps_add"),
    (["grants", "restore", "Calculator"], "grants_restore"),
]
NO_TERMINAL = 66


def staged(sim_desk: Any, op: str) -> CliDaemon:
    """A daemon where each step has something to change: Calculator's saved grant revoked,
    Safari not allowed, and for ``unlock`` the emergency stop engaged."""
    d: CliDaemon = sim_desk()
    assert d.run("grants", "revoke", "Calculator").returncode == 0
    if op == "unlock":
        assert d.json("stop")["locked"] is True
    return d


def unchanged(d: CliDaemon, op: str) -> None:
    """Nothing the step would change has changed, and the daemon never received its op."""
    status = d.json("status")
    assert op not in status["ops"], status["ops"]
    assert bool(status["locked_by"]) is (op == "unlock")
    if op != "unlock":  # while locked, listing the allowlist is refused too
        assert "Safari" not in d.json("apps", "list")["apps"]
    revoked = [g["revoked_at"] is not None for g in d.json("grants", "list")["grants"]]
    assert revoked.count(True) == 1


@pytest.mark.parametrize(
    ("argv", "op"),
    [*CONFIRMED, (["questions"], "questions_watch")],
    ids=["unlock", "apps add", "grants restore", "questions"],
)
def test_without_a_terminal_nothing_is_sent_even_when_yes_is_piped_in(
    sim_desk: Any, argv: list[str], op: str
) -> None:
    d = staged(sim_desk, op)
    done = subprocess.run(
        [sys.executable, "-m", "deskhandctl", *d.argv(*argv)],
        env=d.env,
        input="y\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == NO_TERMINAL, done.stderr
    assert done.stdout == ""
    assert "runs only from your own terminal" in done.stderr
    assert "nothing was sent" in done.stderr
    assert f"run `deskhandctl {' '.join(argv[:2])}" in done.stderr
    unchanged(d, op)


@pytest.mark.parametrize(("argv", "op"), CONFIRMED, ids=[" ".join(a[:2]) for a, _ in CONFIRMED])
def test_a_yes_typed_ahead_never_confirms_and_only_yes_at_the_prompt_does(
    sim_desk: Any, argv: list[str], op: str
) -> None:
    d = staged(sim_desk, op)
    term = Terminal(*d.argv(*argv), env=d.env, typed_ahead=b"y\n")
    try:
        shown = term.read_until(CONFIRM_PROMPT)
        assert b"deskhandctl: " in shown and b"?" in shown  # the step, in words, then the prompt
        term.type(b"\n")  # no answer: the refusing default
        code, out = term.finish()
    finally:
        term.close()
    assert (code, out) == (1, "")
    assert b"not confirmed, so nothing was sent" in term.seen
    unchanged(d, op)

    done = d.at_terminal("--json", *argv)  # y, typed once the prompt shows
    assert done.returncode == 0, done.stderr
    status = d.json("status")
    assert status["ops"][op]["count"] == 1
    assert not status["locked_by"]
    if op == "apps_add":
        assert "Safari" in d.json("apps", "list")["apps"]
    if op == "grants_restore":
        assert all(g["revoked_at"] is None for g in d.json("grants", "list")["grants"])
