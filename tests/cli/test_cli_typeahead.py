"""Keys typed before a question appears never answer it.

``deskhandctl`` runs on a pseudo-terminal against a fake daemon that holds its question back
until the test has typed an answer ahead and seen the terminal echo it (so the keys are in the
terminal's input queue, not merely in flight). The CLI must throw those keys away before it
shows the question; the answer typed after the prompt appeared is the one sent. Without the
flush each case here would send the typed-ahead answer instead, which is what the assertions
on the ``answer`` op catch.
"""

from __future__ import annotations

import io
import json
import os
import select
import time
from typing import Any

import pytest
import trio
import trio_websocket
from deskhandctl.cli.events import discard_typeahead
from fake_daemon import Message, WsStart, action, standard
from terminal import Terminal

A = ["--app", "Calculator", "--state", "st-obs-1"]
QUIET_S = 0.5  # how long the prompt must wait on its own before the fresh answer is typed


def question(kind: str) -> dict[str, Any]:
    if kind == "app_consent":
        return {
            "question": "app_consent",
            "text": "deskhandctl asks to use Calculator.",
            "choices": ["once", "always", "deny"],
        }
    return {
        "question": "backend_approval",
        "text": "Allow ChatGPT to use Calculator?",
        "choices": ["accept", "decline"],
    }


def holding_daemon(kind: str, typed_ahead: trio.Event, received: list[Message]) -> Any:
    """A fake daemon that asks ``kind`` about a click, but only once ``typed_ahead`` is set."""

    async def handler(ws: trio_websocket.WebSocketConnection) -> None:
        click_id = 0
        while True:
            request = json.loads(await ws.get_message())
            received.append(request)
            if request["op"] == "click":
                click_id = request["id"]
                await typed_ahead.wait()
                event = {
                    "kind": "question",
                    "id": "q-1",
                    "request_id": click_id,
                    "app": "Calculator",
                }
                event.update(question(kind))
                await ws.send_message(json.dumps({"type": "event", "event": event}))
            elif request["op"] == "answer":
                done = {"type": "result", "id": request["id"], "result": {"kind": "done"}}
                await ws.send_message(json.dumps(done))
                # Accepted or not, the click's own reply ends the run; its text is not checked.
                reply = {"type": "result", "id": click_id, "result": action("click")}
                await ws.send_message(json.dumps(reply))
            else:
                for message in standard(request):
                    await ws.send_message(json.dumps(message))

    return handler


async def run_typed_ahead(
    ws_server: WsStart, kind: str, ahead: bytes, fresh: bytes, prompt: bytes
) -> tuple[list[Message], bytes, list[Message]]:
    """Type ``ahead`` before the question, ``fresh`` after its prompt; return what arrived.

    The third item is what the daemon had received when the prompt had waited QUIET_S.
    """
    received: list[Message] = []
    typed_ahead = trio.Event()
    path = await ws_server(holding_daemon(kind, typed_ahead, received))
    terminal = Terminal("--socket", path, "click", *A, "--index", "3")
    token = trio.lowlevel.current_trio_token()

    def drive() -> tuple[bytes, list[Message]]:
        terminal.type(ahead)
        # The echo comes from the terminal's line discipline: once it shows, the keys wait in
        # the input queue that the CLI will read from.
        terminal.read_until(ahead.replace(b"\n", b"\r\n"))
        trio.from_thread.run_sync(typed_ahead.set, trio_token=token)
        terminal.read_until(prompt)
        time.sleep(QUIET_S)
        before_fresh = list(received)
        terminal.type(fresh)
        code, _ = terminal.finish()
        assert code in (0, 1), terminal.seen
        return terminal.seen, before_fresh

    try:
        with trio.fail_after(30):
            shown, before_fresh = await trio.to_thread.run_sync(drive)
    finally:
        terminal.close()
    return received, shown, before_fresh


def answers(received: list[Message]) -> list[str]:
    return [r["choice"] for r in received if r["op"] == "answer"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("ahead", "fresh", "choice", "said"),
    [
        # A stray "y" must not accept an approval the person never saw.
        pytest.param(b"y\n", b"\n", "decline", b"declined", id="y-ahead-then-enter"),
        pytest.param(b"y\n", b"\x04", "decline", b"declined", id="y-ahead-then-end-of-input"),
        # The reproduction: an "a" typed earlier declined the next [y/N] question.
        pytest.param(b"a\n", b"y\n", "accept", b"accepted", id="a-ahead-then-y"),
    ],
)
async def test_approval_ignores_keys_typed_before_it(
    ws_server: WsStart, ahead: bytes, fresh: bytes, choice: str, said: bytes
) -> None:
    """Only the answer typed after the [y/N] prompt counts; until then nothing is answered."""
    received, shown, before_fresh = await run_typed_ahead(
        ws_server, "backend_approval", ahead, fresh, b"[y/N] "
    )
    assert answers(before_fresh) == [], "the typed-ahead keys answered the question"
    assert answers(received) == [choice]
    assert shown.rstrip().endswith(said), shown


@pytest.mark.slow
@pytest.mark.parametrize(
    ("ahead", "fresh", "choice"),
    [
        pytest.param(b"a\n", b"o\n", "once", id="always-ahead-then-once"),
        pytest.param(b"o\n", b"\n", "deny", id="once-ahead-then-enter"),
    ],
)
async def test_consent_ignores_keys_typed_before_it(
    ws_server: WsStart, ahead: bytes, fresh: bytes, choice: str
) -> None:
    """Deskhand's own consent question: a typed-ahead 'a' or 'o' is discarded too."""
    received, _, before_fresh = await run_typed_ahead(
        ws_server, "app_consent", ahead, fresh, b"(default deny) "
    )
    assert answers(before_fresh) == []
    assert answers(received) == [choice]


def read_line(fd: int, timeout: float = 5.0) -> bytes:
    assert select.select([fd], [], [], timeout)[0], "nothing to read"
    return os.read(fd, 1024)


def echoed(master: int, text: bytes, timeout: float = 5.0) -> None:
    """Wait until the terminal echoed ``text``: it is then queued for the reader."""
    seen = b""
    deadline = time.monotonic() + timeout
    while text.replace(b"\n", b"\r\n") not in seen:
        assert time.monotonic() < deadline, f"no echo of {text!r}; saw {seen!r}"
        if select.select([master], [], [], 0.05)[0]:
            seen += os.read(master, 1024)


def test_discard_empties_a_terminal_queue() -> None:
    """On a terminal, queued lines are gone after the call; the next line is read intact."""
    master, slave = os.openpty()
    try:
        os.write(master, b"y\n")
        echoed(master, b"y\n")
        with os.fdopen(os.dup(slave), "r") as stdin:
            discard_typeahead(stdin)
        os.write(master, b"n\n")
        assert read_line(slave) == b"n\n"
    finally:
        os.close(master)
        os.close(slave)


def test_discard_leaves_pipes_and_text_buffers_alone() -> None:
    """Answers from a pipe or an in-memory stream are meant: nothing is thrown away."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"y\n")
        with os.fdopen(os.dup(read_end), "r") as stdin:
            discard_typeahead(stdin)
        assert read_line(read_end) == b"y\n"
    finally:
        os.close(read_end)
        os.close(write_end)
    buffer = io.StringIO("y\n")
    discard_typeahead(buffer)  # no file descriptor: nothing to flush, no error
    assert buffer.readline() == "y\n"
