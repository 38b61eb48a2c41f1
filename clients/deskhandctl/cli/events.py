"""What ``deskhandctl`` does with events the daemon pushes while a request is pending.

Notices go to stderr as one line (not with ``--json``). A question (``backend_approval``,
``app_consent``, ``full_trace``) is a decision only the person may take: when stdin and stderr
are terminals the CLI declared ``can_answer_questions`` in its hello, shows the question on
stderr with the backend's text quoted as untrusted, reads ``y``/``yes`` from stdin to accept
(anything else, an empty line or end of file declines) and sends the ``answer`` op. Deskhand's
own consent question (``app_consent``) offers ``[o]nce / [a]lways / [d]eny`` (``always`` only
when the daemon offers it) and defaults to deny. Before a question is shown, whatever was typed
on the terminal and not yet read is discarded (as sudo and ssh do before a password prompt), so
only keys pressed after the question appeared can answer it. The pending
request then carries on and its own reply is printed as usual. Without a terminal nothing is
answered, and the daemon cancels the question. Ctrl-C at the prompt sends no answer: the
KeyboardInterrupt leaves through ``main`` (exit 130), the connection closes and the daemon
cancels the question. Nothing here ever answers ``accept`` on its own.
"""

from __future__ import annotations

import os
import sys

from deskhandctl.cli import render
from deskhandctl.exitcodes import DaemonError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

    from deskhandctl.wire.session import Session

_WHAT = {
    "backend_approval": "the computer-use backend asks for approval to use {app}",
    "app_consent": "your consent is needed to use {app}",
    "full_trace": "a full trace of this task would be recorded ({app})",
}
_YES = frozenset({"y", "yes"})


def terminal_attached() -> bool:
    """Whether someone can answer a question here: stdin and stderr are both terminals."""
    try:
        return os.isatty(0) and os.isatty(2)
    except OSError:
        return False


def discard_typeahead(stdin: TextIO) -> None:
    """Throw away what was typed on the terminal ``stdin`` but not read yet.

    Called before every question: a key pressed before the question appeared (a stray ``y``,
    an ``a`` meant for something else) must not answer it. Only a terminal has such a queue;
    from a pipe or a file the answers were written on purpose and are read as they are.
    """
    try:
        fd = stdin.fileno()
    except (OSError, ValueError):  # not backed by a file descriptor, or closed
        return
    if not os.isatty(fd):
        return
    import termios  # only here: the CLI's usual path never shows a question

    try:
        termios.tcflush(fd, termios.TCIFLUSH)
    except termios.error:
        pass  # the terminal went away; the read that follows sees end of file and declines


def what(event: dict[str, Any]) -> str:
    """The question in words, naming the app (both shown escaped: they are untrusted)."""
    app = render.printable(str(event.get("app") or "an app"), bidi=True)
    question = str(event.get("question", ""))
    template = _WHAT.get(question)
    if template is None:
        return f"{render.printable(question or 'a question', bidi=True)} ({app})"
    return template.format(app=app)


def _offered(event: dict[str, Any]) -> list[str]:
    choices = event.get("choices")
    return choices if isinstance(choices, list) else []


def present(event: dict[str, Any], text: str) -> tuple[str, str]:
    """What to show before reading an answer: the question with its text quoted as untrusted,
    and the prompt (no newline) that says which keys answer it and what the default is."""
    if event.get("question") == "app_consent":
        offered = [c for c in ("once", "always", "deny") if c in _offered(event)]
        intro = (
            "\ndeskhand-d asks for your consent (the app name below comes from the requesting "
            "agent):\n" + render.quoted(text)
        )
        return intro, " / ".join(f"[{c[0]}]{c[1:]}" for c in offered) + " (default deny) "
    choices = event.get("choices")
    can_accept = not isinstance(choices, list) or "accept" in choices
    intro = (
        f"\ndeskhand-d needs your decision: {what(event)}.\n"
        "Its message, quoted as received (untrusted text from the backend, not from "
        "Deskhand):\n" + render.quoted(text)
    )
    return intro, "Accept? [y/N] " if can_accept else "It can only be declined. [Enter] "


def decide(event: dict[str, Any], line: str) -> tuple[str, str]:
    """The choice a typed ``line`` makes, and the words that confirm it. Anything unclear, an
    empty line or end of file is the refusing choice: deny, or decline."""
    word = line.strip().lower()
    if event.get("question") == "app_consent":
        offered = [c for c in ("once", "always", "deny") if c in _offered(event)]
        choice = next((c for c in offered if word and c.startswith(word)), "deny")
        said = {"once": "allowed for this task", "always": "always allowed (this exact program)"}
        return choice, said.get(choice, "denied")
    choices = event.get("choices")
    accepted = (not isinstance(choices, list) or "accept" in choices) and word in _YES
    return ("accept", "accepted") if accepted else ("decline", "declined")


class EventHandler:
    """The session's event hook. Assign :attr:`session` once the session is open."""

    def __init__(
        self,
        *,
        show_notices: bool,
        interactive: bool,
        stdin: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.show_notices = show_notices
        self.interactive = interactive
        self.session: Session | None = None
        self._stdin = stdin
        self._stderr = stderr

    def __call__(self, event: dict[str, Any]) -> None:
        """Handle one event; unknown kinds are ignored, as the protocol asks."""
        kind = event.get("kind")
        if kind == "notice":
            line = render.notice(event)
            if line is not None and self.show_notices:
                self._say(line)
        elif kind == "question":
            self._question(event)
        elif kind == "progress" and self.show_notices:
            line = event.get("line")
            if isinstance(line, str):
                self._say("deskhand-d: " + render.printable(line))

    def _question(self, event: dict[str, Any]) -> None:
        question_id, text = event.get("id"), event.get("text")
        session = self.session
        if not (isinstance(question_id, str) and question_id and isinstance(text, str)):
            return  # not a question we could answer by id
        if session is None or not session.outstanding(event.get("request_id")):
            return  # not about a request of ours that is still pending
        if not self.interactive:
            self._say(
                f"deskhand-d asked a question ({what(event)}) that needs a person at a "
                "terminal; none is attached, so it stays unanswered and the daemon cancels it."
            )
            return
        choice = self._ask(event, text)
        try:
            session.request("answer", question_id=question_id, choice=choice)
        except DaemonError as exc:
            # The question may have ended meanwhile; the request's own reply will say how.
            self._say(f"deskhandctl: the daemon did not take the answer: {exc.message}")

    def _ask(self, event: dict[str, Any], text: str) -> str:
        """Show the question and read the person's decision (one of its choices)."""
        stdin = self._stdin or sys.stdin
        stderr = self._stderr or sys.stderr
        discard_typeahead(stdin)
        intro, prompt = present(event, text)
        self._say(intro)
        stderr.write(prompt)
        stderr.flush()
        try:
            line = stdin.readline()
        except KeyboardInterrupt:
            stderr.write("\n")
            raise
        if not line.endswith("\n"):
            stderr.write("\n")  # end of file: keep the next output on a line of its own
        choice, said = decide(event, line)
        self._say(said)
        return choice

    def _say(self, line: str) -> None:
        stderr = self._stderr or sys.stderr
        stderr.write(line + "\n")
        stderr.flush()
