"""The connection layer without a socket: a real Connection over an in-memory stream pair,
WebSocket on both ends, on real services and the simulator. Bad payloads, the hello rules,
the outstanding-request limit, cancel, question routing and shutdown, as a client sees them."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import trio
import trio.testing
from dhtest.inproc import open_desk, open_ws_client

from deskhand_d.protocol import PROTOCOL_VERSION

HELLO = {"op": "hello", "protocol": PROTOCOL_VERSION, "client": {"name": "t", "kind": "test"}}


async def test_a_bad_payload_gets_bad_request_and_the_connection_goes_on() -> None:
    async with open_desk() as desk, open_ws_client(desk.services) as c:
        await c.hello()
        await c.send("{not json")
        reply = await c.receive()
        assert reply == {"type": "error", "id": None, "error": reply["error"]}
        assert reply["error"]["code"] == "bad_request"
        await c.send(json.dumps({"op": "warp", "id": 77}))
        reply = await c.receive()
        assert reply["id"] == 77 and reply["error"]["code"] == "bad_request"
        assert (await c.call("ping", data="ok"))["result"] == {"kind": "pong", "data": "ok"}
        invalid = desk.services.hub.counters.snapshot()["<invalid>"]
        assert (invalid.count, invalid.errors) == (2, 2)  # both payloads: neither decodes


async def test_hello_first_once_and_in_our_protocol() -> None:
    """Anything before hello is hello_required; a second hello is bad_request; another
    protocol is protocol_mismatch with the daemon's; the connection stays usable."""
    async with open_desk() as desk:
        async with open_ws_client(desk.services) as c:
            reply = await c.call("status")
            assert reply["error"]["code"] == "hello_required"
            welcome = (await c.hello("named"))["result"]
            assert welcome["kind"] == "welcome" and welcome["session_name"] == "named"
            assert welcome["resumed"] is False and len(welcome["session_id"]) == 32
            assert c.conn.session is not None and c.conn.session.name == "named"
            again = await c.hello()
            assert again["error"]["code"] == "bad_request"
            assert (await c.call("ping"))["type"] == "result"
        async with open_ws_client(desk.services) as c:
            reply = await c.call("hello", protocol=2, client={"name": "future"})
            assert reply["error"]["code"] == "protocol_mismatch"
            assert reply["error"]["data"] == {"daemon_protocol": PROTOCOL_VERSION}
            assert c.conn.client is None


async def test_the_msgpack_subprotocol_uses_binary_frames() -> None:
    async with (
        open_desk() as desk,
        open_ws_client(desk.services, subprotocol="deskhand.v1.msgpack") as c,
    ):
        assert c.ws.subprotocol == "deskhand.v1.msgpack"
        await c.ws.send_message(msgspec.msgpack.encode({**HELLO, "id": 1}))
        frame = await c.ws.get_message()
        assert isinstance(frame, bytes)  # a binary frame
        welcome = msgspec.msgpack.decode(frame)
        assert welcome["result"]["kind"] == "welcome"
        await c.ws.send_message('{"op":"ping","id":50}')  # a text frame on a msgpack connection
        frame = await c.ws.get_message()
        assert isinstance(frame, bytes)
        reply = msgspec.msgpack.decode(frame)
        assert reply["id"] is None  # a frame of the wrong kind is not read at all
        assert reply["error"]["code"] == "bad_request" and "binary" in reply["error"]["message"]


async def test_outstanding_requests_are_bounded_and_ids_unique() -> None:
    """With two requests waiting (one on the person's approval, one queued behind it), a third
    is too_many_requests and a reused id is bad_request; the answer and a cancel still get
    through, so the connection frees itself."""
    async with (
        open_desk(DESKHAND_MAX_OUTSTANDING_REQUESTS="2") as desk,
        open_ws_client(desk.services) as c,
    ):
        await c.hello(answers=True)
        await c.send({"op": "get_app_state", "id": 2, "app": "Calculator"})
        question = await c.receive()
        assert question["type"] == "event" and question["event"]["kind"] == "question"
        assert question["event"]["request_id"] == 2
        await c.send({"op": "get_app_state", "id": 3, "app": "Calculator"})
        await c.send({"op": "ping", "id": 3})
        dup = await c.receive()
        assert dup["id"] == 3 and dup["error"]["code"] == "bad_request"
        await c.send({"op": "ping", "id": 4})
        busy = await c.receive()
        assert busy["id"] == 4 and busy["error"]["code"] == "too_many_requests"
        assert busy["error"]["data"] == {}
        # a cancel and the answer are let through while two are outstanding
        await c.send({"op": "cancel", "id": 6, "request_id": 3})
        await c.send(
            {"op": "answer", "id": 5, "question_id": question["event"]["id"], "choice": "accept"}
        )
        replies = {}
        while len(replies) < 4:
            reply = await c.receive()
            if reply["type"] != "event":
                replies[reply["id"]] = reply
        assert replies[6]["result"]["kind"] == "done"
        assert replies[5]["result"]["kind"] == "done"
        assert replies[3]["error"]["code"] == "cancelled"
        assert replies[3]["error"]["data"]["delivery"] == "refused"  # it was still queued
        assert replies[2]["result"]["kind"] == "observation"
        assert len(desk.calls()) == 1


async def test_cancel_of_a_queued_request_over_the_wire() -> None:
    """A request queued behind another connection's call is cancelled by its own client: the
    reply says cancelled, and the backend never saw it."""
    async with (
        open_desk() as desk,
        open_ws_client(desk.services) as a,
        open_ws_client(desk.services) as b,
    ):
        await a.hello("a", answers=True)
        await b.hello("b")
        await a.send({"op": "get_app_state", "id": 10, "app": "Calculator"})
        question = await a.receive()
        assert question["event"]["kind"] == "question"  # a's call holds the desktop
        await b.send({"op": "get_app_state", "id": 11, "app": "Calculator"})
        while desk.services.status().queue_depth != 1:
            await trio.testing.wait_all_tasks_blocked(cushion=0.005)
        done = await b.call("cancel", request_id=11)
        assert done["result"] == {"kind": "done", "detail": "cancelled request 11"}
        cancelled = await b.reply_to(11)
        assert cancelled["error"]["code"] == "cancelled"
        assert cancelled["error"]["data"]["delivery"] == "refused"  # it never left the queue
        assert "nothing reached the app" in cancelled["error"]["message"]
        answered = await a.call("answer", question_id=question["event"]["id"], choice="accept")
        assert answered["result"]["kind"] == "done"
        observed = await a.reply_to(10)
        assert observed["result"]["kind"] == "observation"
        assert len(desk.calls("get_app_state")) == 1
        again = await b.call("cancel", request_id=11)
        assert again["error"]["code"] == "bad_request"


async def test_a_question_reaches_only_the_connection_that_asked() -> None:
    """Two connections share a session; only the asker gets the question, the other's
    answer to it is refused, and the asker's answer decides."""
    async with (
        open_desk() as desk,
        open_ws_client(desk.services) as asker,
        open_ws_client(desk.services) as other,
    ):
        await asker.hello("shared", answers=True)
        assert (await other.hello("shared", answers=True))["result"]["resumed"] is True
        await asker.send({"op": "get_app_state", "id": 20, "app": "Calculator"})
        question = (await asker.receive())["event"]
        assert (question["kind"], question["request_id"]) == ("question", 20)
        wrong = await other.call("answer", question_id=question["id"], choice="accept")
        assert wrong["error"]["code"] == "bad_request"
        assert other.events == []
        await asker.send(
            {"op": "answer", "id": 21, "question_id": question["id"], "choice": "decline"}
        )
        replies: dict[int, dict[str, Any]] = {}
        events: list[dict[str, Any]] = []
        while len(replies) < 2:
            msg = await asker.receive()
            if msg["type"] == "event":
                events.append(msg["event"])
            else:
                replies[msg["id"]] = msg
        # the one event left: the question is closed, so a client showing it withdraws it
        closed = {"kind": "question_closed", "id": question["id"], "how": "answered"}
        assert events == [{**closed, "by": "client"}]
        assert replies[21]["result"]["kind"] == "done"
        assert replies[20]["error"]["code"] == "approval_declined"
        assert [r["answer"] for r in desk.records("elicitation_answer")] == ["decline"]
        assert (await other.call("ping"))["type"] == "result" and other.events == []


async def test_shutdown_replies_first_then_the_daemon_takes_no_new_requests() -> None:
    async with open_desk() as desk, open_ws_client(desk.services) as c:
        await c.hello()
        hub = desk.services.hub
        assert not hub.shutdown_requested.is_set()
        reply = await c.call("shutdown")
        assert reply["result"]["kind"] == "shutting_down"
        assert hub.shutdown_requested.is_set() and hub.shutdown_reason.startswith("asked by client")
        late = await c.call("ping")
        assert late["error"]["code"] == "shutting_down"
