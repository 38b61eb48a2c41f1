"""One story about what lets an app through for an agent that cannot ask: the refusal's words,
docs/mcp.md and docs/consent.md, and what the daemon really does.

Every ``deskhandctl`` command the consent refusal names, and every one docs/mcp.md names, is a
command of the CLI's grammar; neither ever offers ``apps add`` as a way past consent. Then the
story itself, against a real daemon on the simulated desktop: a host without forms is refused
with those words; a host that declines forms on its own is a no for the rest of its session; and
a saved "always" grant, made beforehand by answering a question at a terminal, lets it through.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from deskhandctl.cli.grammar import COMMANDS, OPTION_BY_FLAG
from deskhandctl.cli.parser import parse_fast
from dhtest.clidaemon import CliDaemon, sim_desk
from dhtest.mcpsaid import said_code, said_state_id
from dhtest.mcpstdio import McpChild
from terminal import Terminal

from deskhand_d.nextsteps import Words

__all__ = ["sim_desk"]

DOCS = Path(__file__).parents[2] / "docs"
_NAMED = re.compile(r"`(deskhandctl [^`]+)`")
PLACEHOLDERS = {"APP": "Calculator", "NAME": "Calculator", "HOST": "codex"}


def named_commands(text: str) -> list[str]:
    """Every `deskhandctl ...` command quoted in ``text``."""
    return _NAMED.findall(text)


def is_cli_command(line: str) -> bool:
    """Whether ``line`` names a command of deskhandctl's grammar (a subcommand where it has
    them) and, when it gives arguments too, parses as a whole (placeholders such as APP filled
    in); a command that also runs without a subcommand (mcp) counts alone."""
    words = [PLACEHOLDERS.get(w, w) for w in shlex.split(line)[1:] if w not in ("…", "...")]
    given = list(words)
    while words and words[0] in OPTION_BY_FLAG:  # global options before the command
        words = words[1 if OPTION_BY_FLAG[words[0]].convert is None else 2 :]
    if not words or words[0] not in COMMANDS:
        return False
    command, used = COMMANDS[words[0]], 1
    if command.subcommands and not (command.alone and len(words) == 1):
        if len(words) < 2 or words[1] not in command.subcommands:
            return False
        used = 2
    return len(words) == used or parse_fast(given) is not None


@pytest.mark.parametrize("vocabulary", ["cli", "pi", "protocol"])
@pytest.mark.parametrize("always", [True, False])
def test_the_refusal_names_only_real_commands_and_never_apps_add_as_a_way(
    vocabulary: Any, always: bool
) -> None:
    """The refusal for a client that cannot ask: the console, and (where "always" exists) the
    terminal question that saves a grant; apps add only as no way around it."""
    text = Words(vocabulary).cannot_ask("Calculator", always)
    named = named_commands(text)
    assert "deskhandctl questions" in named
    assert all(is_cli_command(c) for c in named), named
    assert "`deskhandctl apps add Calculator` is no way around it" in text
    says_always = "'always'" in text
    assert says_always is always
    if always and vocabulary != "cli":
        assert "deskhandctl observe Calculator" in named  # the question that saves a grant


def test_the_docs_tell_the_same_story() -> None:
    """docs/mcp.md names only commands the CLI has, never offers apps add as a way to allow an
    app, and names the console and the saved "always" grant; docs/consent.md agrees."""
    mcp = (DOCS / "mcp.md").read_text()
    consent = (DOCS / "consent.md").read_text()
    for doc in (mcp, consent):
        bad = [c for c in named_commands(doc) if not is_cli_command(c)]
        assert bad == [], bad
    flat = " ".join(mcp.split())
    for wrong in ("beforehand with `deskhandctl apps add", "first with `deskhandctl apps add"):
        assert wrong not in flat
    for sentence in re.split(r"(?<=[.])\s", flat):
        if "apps add" in sentence:
            assert re.search(r"outer limit|no way around|answers no question", sentence), sentence
    assert "`deskhandctl questions`" in flat
    assert "run `deskhandctl observe APP` in a terminal and answer `a`" in flat
    assert "No command makes a grant without a question" in flat
    flat_consent = " ".join(consent.split())
    assert "there is no command that writes one" in flat_consent
    assert "runs `deskhandctl observe APP` in a terminal and answers `a`" in flat_consent


def _facade(desk: CliDaemon, *, forms: bool) -> McpChild:
    argv = [sys.executable, "-m", "deskhandctl", "--socket", str(desk.daemon.socket), "mcp"]
    host = McpChild(argv, desk.env, accept_elicitations=False, initialize=False)
    capabilities = {"elicitation": {}} if forms else {}
    init = {"protocolVersion": "2025-06-18", "capabilities": capabilities}
    init["clientInfo"] = {"name": "story-host", "version": "1"}
    assert "result" in host.request("initialize", init)
    return host


@pytest.mark.slow
def test_a_host_without_forms_is_told_the_true_ways(sim_desk: Any) -> None:
    """No form, no console: refused at once, and the words name the console and the terminal
    question that saves a grant, and say that apps add does not help."""
    desk: CliDaemon = sim_desk(grants=())
    host = _facade(desk, forms=False)
    try:
        result = host.call("get_app_state", app="Calculator")
    finally:
        host.close()
    assert result.is_error and said_code(result.raw) == "consent_denied"
    message = "Deskhand may not operate 'Calculator': " + Words("mcp").cannot_ask(
        "Calculator", True
    )
    assert message + ". Nothing was sent." in result.text
    assert desk.received("get_app_state") == 0


@pytest.mark.slow
def test_a_saved_always_grant_lets_a_host_that_declines_through(sim_desk: Any) -> None:
    """A host that declines every form at once (as `codex exec` does) asked nobody: each call
    is refused as asked of nobody, never as the person's no, so it is asked again next time;
    the person answers 'always' to `deskhandctl observe APP` at a terminal, and the same
    host's next call goes through without a question."""
    desk: CliDaemon = sim_desk(grants=())
    host = _facade(desk, forms=True)
    try:
        for _ in range(2):
            refused = host.call("get_app_state", app="Calculator")
            assert said_code(refused.raw) == "consent_denied"
            assert "nobody was asked" in refused.text and "said no" not in refused.text
        terminal = Terminal(*desk.argv("observe", "Calculator"), env=desk.env)
        try:
            shown = terminal.read_until(b"(default deny) ").decode()
            assert "[o]nce / [a]lways / [d]eny" in shown
            terminal.type(b"a\n")
            code, _ = terminal.finish()
        finally:
            terminal.close()
        assert code == 0, terminal.seen
        assert [g["app"] for g in desk.json("grants", "list")["grants"]] == ["Calculator"]
        through = host.call("get_app_state", app="Calculator")
    finally:
        host.close()
    assert not through.is_error, through.text
    assert said_state_id(through.raw)
    assert desk.received("get_app_state") == 2  # the terminal's observation, then the host's
