"""``deskhandctl questions``: the person's console for questions their agents' clients cannot ask.

What this owns: the console loop. It connects with ``can_answer_questions`` and long-polls
``questions_watch``, which makes the connection a console: every open question of every client
is listed to it, and questions of clients that cannot ask the person themselves (an MCP host
without elicitation, a script) wait for it instead of being refused. Each question is shown
with who asks (client, pid, session), the app, the exact text quoted as untrusted, the choices
and the time left; it is answered with the ``answer`` op. The prompt is the CLI's own
(:mod:`deskhandctl.cli.events`): typed-ahead keys are discarded first, an unclear answer refuses,
and nothing is ever answered without the person. While the prompt waits, the console keeps
asking the daemon whether the question is still open; once it is not (answered elsewhere,
expired, its request ended) the prompt is withdrawn and says so. Ctrl-C leaves without
answering (exit 130). A console answers for other clients, which only the person may: without a
terminal on stdin and stderr it refuses before it connects (exit 66,
:func:`deskhandctl.cli.person.require_terminal`).

``--once`` answers what is waiting now and exits; ``--json`` prints the open questions as JSON
and exits without answering (it needs no terminal, since it never asks anyone).
"""

from __future__ import annotations

import os
import sys

from deskhandctl.cli import render
from deskhandctl.cli.events import decide, discard_typeahead, present
from deskhandctl.cli.person import require_terminal
from deskhandctl.exitcodes import OK, DaemonError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from deskhandctl.cli.grammar import Args
    from deskhandctl.wire.session import Session

WAIT_S = 25.0  # the long poll: the daemon answers at once when something changes
CHECK_S = 0.5  # while a prompt waits: how often to ask whether its question is still open
MARGIN_S = 5.0  # of --timeout left over the long poll's wait for the reply itself


def run_console(args: Args) -> int:
    """Run ``deskhandctl questions``; the exit code. DaemonError and friends go to ``main``."""
    from deskhand_d import __version__
    from deskhandctl.cli.grammar import leaf
    from deskhandctl.wire.connect import autostart_allowed, open_session, resolve_socket

    if not args.json:  # it answers for other clients: only the person, at their terminal
        require_terminal(
            "questions", " (--json lists the open questions without answering, anywhere)"
        )
    timeout = leaf("questions").timeout if args.timeout is None else args.timeout
    session = open_session(
        resolve_socket(args.socket),
        timeout=timeout,
        autostart=autostart_allowed(args.no_autostart),
        client_version=__version__,
        can_answer_questions=True,  # what makes it a console; with --json it never answers
    )
    try:
        if args.json:
            from deskhandctl.cli.commands import print_json

            print_json(session.request("questions_watch", after=0, wait_s=0))
            return OK
        wait_s = max(0.0, min(WAIT_S, timeout - MARGIN_S))
        return Console(session, wait_s=wait_s).run(once=bool(args.params.get("once")))
    except KeyboardInterrupt:
        # Leave at once: a close handshake would wait behind the long poll's reply, and the
        # daemon sees a dropped console just the same (nothing was answered).
        session.ws.abort()
        raise
    finally:
        session.close()


class Console:
    """The loop over one session: list, ask the person, answer, wait for the next change."""

    def __init__(self, session: Session, *, wait_s: float) -> None:
        self.session = session
        self.wait_s = wait_s
        self.version = 0

    def watch(self, wait_s: float) -> list[dict[str, Any]]:
        listed = self.session.request("questions_watch", after=self.version, wait_s=wait_s)
        self.version = int(listed.get("version", 0))
        questions = listed.get("questions")
        return [q for q in questions if isinstance(q, dict)] if isinstance(questions, list) else []

    def run(self, *, once: bool) -> int:
        questions = self.watch(0)
        waiting_now = {q.get("id") for q in questions}
        handled: set[object] = set()
        if once and not questions:
            say("deskhandctl: no questions are waiting")
            return OK
        if not once:
            say(
                "deskhandctl: waiting for questions from clients that cannot ask you themselves "
                "(and any other open question); Ctrl-C to stop"
            )
        while True:
            todo = [q for q in questions if q.get("id") not in handled]
            if once:
                todo = [q for q in todo if q.get("id") in waiting_now]
                if not todo:
                    return OK
            if not todo:
                questions = self.watch(self.wait_s)
                continue
            question = todo[0]
            handled.add(question.get("id"))
            self.handle(question)
            questions = self.watch(0)

    def handle(self, question: dict[str, Any]) -> None:
        """Ask the person about ``question`` and send the answer, unless it closes first."""
        qid, text = question.get("id"), question.get("text")
        if not (isinstance(qid, str) and isinstance(text, str)):
            return
        event = {"question": question.get("kind"), "app": question.get("app"), **question}
        stdin = sys.stdin
        discard_typeahead(stdin)
        intro, prompt = present(event, text)
        say(heading(question) + intro)
        sys.stderr.write(prompt)
        sys.stderr.flush()
        line = self.read_line(stdin.fileno(), qid)
        if line is None:
            say(
                "\ndeskhandctl: withdrawn: the question is no longer open (answered elsewhere, "
                "expired, or its request ended); nothing was sent from here"
            )
            return
        choice, said = decide(event, line)
        try:
            self.session.request("answer", question_id=qid, choice=choice)
        except DaemonError as exc:
            say(f"deskhandctl: the daemon did not take the answer ({said}): {exc.message}")
            return
        say(f"{said}; sent")

    def read_line(self, fd: int, qid: str) -> str | None:
        """The person's line, or None once question ``qid`` is no longer open. Read from the
        descriptor itself (never Python's buffer), so nothing typed waits unseen."""
        import select

        typed = b""
        while True:
            ready, _, _ = select.select([fd], [], [], CHECK_S)
            if ready:
                chunk = os.read(fd, 1024)
                if not chunk:  # end of file: refuses, as an empty answer does
                    sys.stderr.write("\n")
                    return typed.decode(errors="replace")
                typed += chunk
                if b"\n" in typed:
                    return typed.split(b"\n", 1)[0].decode(errors="replace")
                continue
            if all(q.get("id") != qid for q in self.watch(0)):
                return None


def heading(question: dict[str, Any]) -> str:
    """Who asks and about what; every name here is the asking client's and shown escaped."""

    def shown(key: str, fallback: str) -> str:
        return render.printable(str(question.get(key) or fallback), bidi=True)

    left = question.get("expires_in_s")
    time_left = f"{left:.0f} s left to answer" if isinstance(left, (int, float)) else ""
    return (
        f"\nQuestion from {shown('client', 'an unnamed client')} (pid {shown('client_pid', '?')}, "
        f"session {shown('session', '(unnamed)')}) about {shown('app', 'an app')}; {time_left}"
    )


def say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
