"""What a message calls the next step, in the words of the client that shows it. Pure.

Every refusal says what to do next, and the same step has a different name for each reader: a
person at ``deskhandctl`` types ``deskhandctl observe Calculator``, the model behind the pi
extension calls its tool ``cua_get_app_state``, a model in an MCP host (``deskhandctl mcp``)
calls the tool ``get_app_state`` and has no turn to begin, an agent speaking the protocol sends
the ``get_app_state`` op. Naming another client's tool (or the backend's, such as ``tool_search``)
sends the reader looking for something they do not have, and a mode or turn command of another
client would even act on another session. :func:`for_client` picks the vocabulary from the
``hello``'s client kind.

Steps only the person takes, at a terminal, are the same for every client and are written out
where they are used: ``deskhandctl apps add``, ``grants restore``, ``unlock``, ``doctor``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

Vocabulary = Literal["cli", "pi", "mcp", "protocol"]


@dataclass(frozen=True, slots=True)
class Words:
    """The names of the steps a message may suggest. ``session`` is, for the CLI, the
    ``--session NAME`` option a command must repeat to reach the same daemon session (empty
    for the CLI's default session); for an MCP host, its session's name, which the person
    gives ``deskhandctl`` to act on that session from a terminal."""

    vocabulary: Vocabulary = "protocol"
    session: str = ""

    def _ctl(self, args: str) -> str:
        option = f" --session {shlex.quote(self.session)}" if self.session else ""
        return f"`deskhandctl{option} {args}`"

    def observe(self, app: str) -> str:
        """How to observe ``app`` (a fresh tree, screenshot and stateId)."""
        if self.vocabulary == "cli":
            return self._ctl(f"observe {shlex.quote(app)}")
        if self.vocabulary == "pi":
            return "cua_get_app_state"
        return "`get_app_state`"

    def list_apps(self) -> str:
        if self.vocabulary == "cli":
            return self._ctl("list-apps")
        if self.vocabulary == "pi":
            return "cua_list_apps"
        return "`list_apps`"

    def new_turn(self) -> str:
        """How a new turn starts, as a clause: "... in a new turn (<this>)"."""
        if self.vocabulary == "cli":
            return f"start one with {self._ctl('turn begin')}"
        if self.vocabulary == "pi":
            return "the person's next message starts one"
        if self.vocabulary == "mcp":
            # MCP has no turns: a host's session is one turn until the person begins another.
            return (
                "the next time this host starts Deskhand's MCP server, or at once after the "
                f"person runs {self._ctl('turn begin')} in a terminal"
            )
        return "send `turn_begin` to start one"

    def set_mode(self, mode: str) -> str:
        """How this session's mode is switched (the person's choice, never the agent's)."""
        if self.vocabulary == "cli":
            return self._ctl(f"mode {mode}")
        if self.vocabulary == "pi":
            return f"/cua-mode {mode}"
        if self.vocabulary == "mcp":
            return f"the `mode_set` tool with mode {mode}"
        return f"`mode_set` with mode {mode}"

    def run(self) -> str:
        """How a goal is handed to Jev."""
        if self.vocabulary == "cli":
            return self._ctl("run")
        if self.vocabulary == "pi":
            return "jev_cua_run"
        return "`run`"

    def person(self) -> str:
        """Who decides, as the reader knows them: at the CLI the reader is the person."""
        return "you" if self.vocabulary == "cli" else "the person"

    def cannot_ask(self, app: str, always: bool) -> str:
        """Why nobody was asked for consent to operate ``app`` and how the person can be;
        ``always``: an "always" answer is possible for this program.

        The ways that are true (``docs/consent.md``): a question the person answers where they
        are (a terminal, an interactive client, a ``deskhandctl questions`` console), or, for a
        program whose identity can be checked, a saved grant the person made by answering
        "always" to such a question earlier, which later requests need no question for. Adding
        the app to the allowlist is not one of them: it only decides which apps may be asked
        about. Every command named here is one ``deskhandctl`` has.
        """
        name = shlex.quote(app)
        console = (
            "keep `deskhandctl questions` running in a terminal: questions from clients that "
            "cannot ask wait there for the person's answer"
        )
        ahead = (
            "; to allow this exact program from then on, the person answers 'always' once when "
            f"asked at a terminal (`deskhandctl observe {name}` there asks), and later requests "
            "need no question"
            if always
            else ""
        )
        allowlist = (
            f"(`deskhandctl apps add {name}` is no way around it: the allowlist only decides "
            "which apps may be asked about)"
        )
        if self.vocabulary == "cli":
            answers = "'once' (for this turn)" + (
                " or 'always' (this exact program, from then on)" if always else ""
            )
            return (
                "it needs your consent, and deskhandctl asks only when its stdin and stderr are "
                "both terminals, which they were not, and no `deskhandctl questions` console "
                f"was open. Run the command from a terminal and answer {answers}, or {console} "
                f"{allowlist}"
            )
        if self.vocabulary == "pi":
            return (
                "it needs the person's consent, and this pi session cannot ask them (it has no "
                "interactive UI) and no console was open. Use it from an interactive pi "
                f"session, where Deskhand asks the person, or {console}; then try again{ahead} "
                f"{allowlist}"
            )
        if self.vocabulary == "mcp":
            return (
                "it needs the person's consent, and nobody was asked: this MCP host answered "
                "Deskhand's question by itself (hosts do in runs nobody sits at, such as "
                "`claude -p` and `codex exec`) or cannot show questions, and no console was "
                f"open. This is not the person's no. The person can {console}{ahead}; then "
                f"call the tool again {allowlist}"
            )
        return (
            "it needs the person's consent, and this client said it cannot answer questions "
            f"and no console was open. The person can answer: {console}; then send the request "
            f"again{ahead}. Or connect with `can_answer_questions` and answer the "
            f"`app_consent` question {allowlist}"
        )

    def act(self) -> str:
        """The native actions, as a noun phrase."""
        if self.vocabulary == "cli":
            return "the action commands (`deskhandctl click`, `type`, `press`, ...)"
        if self.vocabulary == "pi":
            return "the cua_ action tools"
        if self.vocabulary == "mcp":
            return "the action tools (`click`, `type_text`, ...)"
        return "the action ops (`click`, `type_text`, ...)"

    def act_under_handoff(self) -> str:
        """The native actions under Jev's planner handoff, as a noun phrase."""
        if self.vocabulary == "cli":
            return "the action commands with --handoff TOKEN"
        if self.vocabulary == "pi":
            return "the cua_ action tools"
        if self.vocabulary == "mcp":
            return "the action tools with the handoff's token as `handoff`"
        return "the action ops with the handoff's token"


PROTOCOL = Words()

_ACTIONS = {
    "click": "the click",
    "drag": "the drag",
    "scroll": "the scroll",
    "press_key": "the key press",
    "type_text": "the typing",
    "set_value": "setting the value",
    "select_text": "the text selection",
    "perform_secondary_action": "the secondary action",
    "get_app_state": "the observation",
    "list_apps": "listing the apps",
}


def action(tool: str) -> str:
    """A backend tool as the action it is, in words ("the key press", not ``press_key``)."""
    return _ACTIONS.get(tool, "the action")


def for_client(kind: str, *, session: str = "", uid: int | None = None) -> Words:
    """The vocabulary for a client of ``kind`` (the ``hello``'s ``client.kind``). For the CLI,
    ``session`` is the daemon session's name: repeated as ``--session`` unless it is the
    CLI's default for ``uid`` (``cli-<uid>``) or a throwaway session."""
    if kind == "cli":
        default = f"cli-{uid}" if uid is not None else None
        return Words("cli", "" if session in ("", default) else session)
    if kind == "pi":
        return Words("pi")
    if kind == "mcp":
        return Words("mcp", session)
    return PROTOCOL
