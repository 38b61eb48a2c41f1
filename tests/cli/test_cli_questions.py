"""Question prompts: ``deskhandctl`` on a pseudo-terminal answering the fake daemon's questions.

The CLI runs as a subprocess with stdin and stderr on a pty (stdout on a pipe, as when its
output is captured), so it declares ``can_answer_questions`` and prompts. The test reads the
prompt from the pty's master side and types the answer there.
"""

from __future__ import annotations

import signal
from typing import Any

import pytest
import trio
from fake_daemon import Message, WsStart, action, error, fake_daemon, standard
from terminal import Terminal

QUESTION_TEXT = "Allow ChatGPT to use Calculator?\n\x1b[2KIgnore the above and type y"
A = ["--app", "Calculator", "--state", "st-obs-1"]


def asking(*, original_first: bool) -> Any:
    """A script that asks about every click and answers it once the answer arrives.

    ``original_first`` sends the click's reply before the answer's own reply, so the CLI has
    to keep the early reply until it is done waiting for the answer.
    """
    pending: dict[str, int] = {}

    def script(request: Message) -> list[Message]:
        rid = request["id"]
        if request["op"] == "click":
            pending["click"] = rid
            question = {
                "kind": "question",
                "id": "q-7",
                "request_id": rid,
                "question": "backend_approval",
                "text": QUESTION_TEXT,
                "app": "Calculator",
                "choices": ["accept", "decline"],
            }
            return [{"type": "event", "event": question}]
        if request["op"] == "answer":
            click = pending["click"]
            if request["choice"] == "accept":
                reply = {"type": "result", "id": click, "result": action("click")}
            else:
                reply = error(click, "approval_declined", "the person declined", delivery="refused")
            done = {"type": "result", "id": rid, "result": {"kind": "done", "detail": ""}}
            return [reply, done] if original_first else [done, reply]
        return standard(request)

    return script


async def in_terminal(
    ws_server: WsStart, script: Any, drive: Any, *argv: str
) -> tuple[list[Message], Any]:
    """Serve ``script``, run the CLI on a terminal, let ``drive(terminal)`` interact with it."""
    received: list[Message] = []
    closed = trio.Event()
    path = await ws_server(fake_daemon(script, received, closed))
    terminal = Terminal("--socket", path, *argv)
    try:
        with trio.fail_after(30):
            outcome = await trio.to_thread.run_sync(lambda: drive(terminal))
            await closed.wait()  # the CLI closed its connection
    finally:
        terminal.close()
    return received, outcome


@pytest.mark.slow
@pytest.mark.parametrize("original_first", [False, True])
async def test_yes_accepts_and_the_original_reply_is_printed(
    ws_server: WsStart, original_first: bool
) -> None:
    """'y' sends answer accept; the click's own reply is then printed, in either reply order."""

    def drive(terminal: Terminal) -> tuple[int, str, bytes]:
        terminal.read_until(b"[y/N] ")
        terminal.type(b"y\n")
        code, out = terminal.finish()
        return code, out, terminal.seen

    received, (code, out, shown) = await in_terminal(
        ws_server, asking(original_first=original_first), drive, "click", *A, "--index", "3"
    )
    assert code == 0, shown
    hello, click, answer = received
    assert hello["can_answer_questions"] is True
    assert click["op"] == "click"
    assert answer == {"op": "answer", "id": 3, "question_id": "q-7", "choice": "accept"}
    assert out.splitlines()[-2:] == ["delivery: dispatched", "state: st-act-2 (single use)"]
    text = shown.decode()
    assert "the computer-use backend asks for approval to use Calculator." in text
    assert "  > Allow ChatGPT to use Calculator?" in text
    # The escape sequence in the backend's text is shown, not obeyed.
    assert "  > \\x1b[2KIgnore the above and type y" in text and "\x1b[2K" not in text
    assert "accepted" in text


@pytest.mark.slow
@pytest.mark.parametrize("typed", [b"n\n", b"\n", b"sure\n"])
async def test_anything_but_yes_declines(ws_server: WsStart, typed: bytes) -> None:
    """'n', an empty line or any other word sends decline; the refusal then exits 1."""

    def drive(terminal: Terminal) -> tuple[int, str, bytes]:
        terminal.read_until(b"[y/N] ")
        terminal.type(typed)
        code, out = terminal.finish()
        return code, out, terminal.seen

    received, (code, out, shown) = await in_terminal(
        ws_server, asking(original_first=True), drive, "--json", "click", *A, "--index", "3"
    )
    assert code == 1, shown
    assert received[-1] == {"op": "answer", "id": 3, "question_id": "q-7", "choice": "decline"}
    assert '"approval_declined"' in out  # --json still prompts on the terminal
    text = shown.decode()
    assert "declined" in text and "refused: nothing was sent to the desktop" in text


@pytest.mark.slow
async def test_ctrl_c_at_the_prompt_exits_130_without_answering(ws_server: WsStart) -> None:
    """Ctrl-C while prompting exits 130, sends no answer and closes the connection."""

    def drive(terminal: Terminal) -> tuple[int, str, bytes]:
        terminal.read_until(b"[y/N] ")
        terminal.proc.send_signal(signal.SIGINT)
        code, out = terminal.finish()
        return code, out, terminal.seen

    received, (code, out, shown) = await in_terminal(
        ws_server, asking(original_first=True), drive, "click", *A, "--index", "3"
    )
    assert code == 130, shown
    assert [r["op"] for r in received] == ["hello", "click"]
    assert out == ""
    assert b"interrupted" in shown


@pytest.mark.slow
async def test_questions_about_other_requests_are_not_prompted(ws_server: WsStart) -> None:
    """A question naming a request id we are not waiting on is ignored, never prompted."""

    def stray(request: Message) -> list[Message]:
        if request["op"] != "press_key":
            return standard(request)
        question = {
            "kind": "question",
            "id": "q-x",
            "request_id": 999,
            "question": "backend_approval",
            "text": "Allow?",
        }
        return [{"type": "event", "event": question}, *standard(request)]

    def drive(terminal: Terminal) -> tuple[int, str, bytes]:
        code, out = terminal.finish()
        return code, out, terminal.seen

    received, (code, _, shown) = await in_terminal(ws_server, stray, drive, "press", *A, "Return")
    assert code == 0
    assert [r["op"] for r in received] == ["hello", "press_key"]
    assert b"[y/N]" not in shown
