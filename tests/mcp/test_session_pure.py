"""The pure MCP pieces: framing, the JSON-RPC session, argument fitting, approvals, results."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deskhand_d import surface
from deskhand_d.backends.mcpclient import approvals as ap
from deskhand_d.backends.mcpclient import results
from deskhand_d.backends.mcpclient.arguments import ArgumentsRefused, negotiate
from deskhand_d.backends.mcpclient.framing import FramingError, LineSplitter
from deskhand_d.backends.mcpclient.session import (
    ErrorResponse,
    Invalid,
    McpSession,
    Notification,
    Response,
    ServerRequest,
    Stray,
)

U2028 = "\u2028"


def _stream(session: McpSession) -> tuple[bytes, list[type]]:
    """A realistic server output for requests 1 and 2, with the kinds of event expected."""
    msgs = [
        {
            "jsonrpc": "2.0",
            "id": "0A1B-UUID",
            "method": "elicitation/create",
            "params": {"message": "x"},
        },
        {"jsonrpc": "2.0", "id": 0, "method": "elicitation/create", "params": {}},
        {"jsonrpc": "2.0", "id": 1, "result": {"text": f"line{U2028}still one line\r"}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "bad"}},
        {"jsonrpc": "2.0", "id": 99, "result": {}},
    ]
    kinds = [ServerRequest, ServerRequest, Response, Notification, ErrorResponse, Stray]
    data = b"".join(json.dumps(m, ensure_ascii=False).encode() + b"\n" for m in msgs)
    return data, kinds


def _events(chunks: list[bytes]) -> list[object]:
    session = McpSession()
    session.request("tools/call", {})
    session.request("tools/list", {})
    splitter = LineSplitter()
    out: list[object] = []
    for chunk in chunks:
        out.extend(session.receive(line) for line in splitter.feed(chunk))
    return out


def test_session_whole_and_byte_by_byte() -> None:
    """The same stream gives the same events fed whole or one byte at a time."""
    data, kinds = _stream(McpSession())
    whole = _events([data])
    assert [type(e) for e in whole] == kinds
    assert _events([data[i : i + 1] for i in range(len(data))]) == whole


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=64), min_size=1, max_size=200))
def test_session_random_chunks(cuts: list[int]) -> None:
    """Any chunking of the stream yields identical events (hypothesis)."""
    data, kinds = _stream(McpSession())
    chunks, pos = [], 0
    for n in cuts:
        chunks.append(data[pos : pos + n])
        pos += n
    chunks.append(data[pos:])
    events = _events(chunks)
    assert [type(e) for e in events] == kinds


def test_server_request_ids_keep_their_type() -> None:
    """String and numeric server ids (even 0 and ones equal to ours) are echoed unchanged."""
    s = McpSession()
    rid, _ = s.request("tools/call", {})
    assert rid == 1
    for sid in ("ABC-123", 0, 1):
        ev = s.receive(
            json.dumps({"jsonrpc": "2.0", "id": sid, "method": "elicitation/create"}).encode()
        )
        assert isinstance(ev, ServerRequest) and ev.id == sid and type(ev.id) is type(sid)
        reply = json.loads(s.result(ev.id, {"action": "cancel"}))
        assert reply["id"] == sid and type(reply["id"]) is type(sid)
    assert s.pending == {1: "tools/call"}  # a server request with id 1 did not answer our 1


def test_string_id_response_is_not_ours() -> None:
    """A response with id "1" does not complete our request 1."""
    s = McpSession()
    s.request("ping", {})
    assert isinstance(s.receive(b'{"jsonrpc":"2.0","id":"1","result":{}}'), Stray)
    assert isinstance(s.receive(b'{"jsonrpc":"2.0","id":1,"result":{}}'), Response)


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[1,2]",
        b'{"id":1,"result":{}}',
        b'{"jsonrpc":"2.0"}',
        b'{"jsonrpc":"2.0","method":5}',
        b'{"jsonrpc":"2.0","id":[1],"method":"x"}',
        b"[" * 10000,
    ],
)
def test_invalid_lines(line: bytes) -> None:
    """Lines that are not JSON-RPC 2.0 become Invalid, never an exception."""
    s = McpSession()
    s.request("x", {})
    assert isinstance(s.receive(line), Invalid)


def test_framing_limit() -> None:
    """A line over the limit is a framing error, whether or not its LF has arrived."""
    sp = LineSplitter(max_line=10)
    assert sp.feed(b"0123456789\n") == [b"0123456789"]
    with pytest.raises(FramingError):
        sp.feed(b"01234567890123")
    with pytest.raises(FramingError):
        LineSplitter(max_line=10).feed(b"0123456789012\n")


def test_arguments_are_fitted_to_sky_schema() -> None:
    """element_index becomes a string, disableDiff is dropped, selection_type is renamed."""
    out = negotiate(
        "select_text",
        {
            "app": "TextEdit",
            "element_index": 2,
            "text": "a",
            "selection_type": "cursor_after",
            "disableDiff": True,
        },
        surface.input_schema("select_text"),
    )
    assert out == {
        "app": "TextEdit",
        "element_index": "2",
        "text": "a",
        "selection": "cursor_after",
    }


def test_disallowed_and_missing_arguments_are_refused() -> None:
    """Unknown arguments under additionalProperties:false and missing required ones are refused."""
    with pytest.raises(ArgumentsRefused, match="index"):
        negotiate("click", {"app": "X", "index": 3}, surface.input_schema("click"))
    with pytest.raises(ArgumentsRefused, match="key"):
        negotiate("press_key", {"app": "X"}, surface.input_schema("press_key"))
    kept = negotiate(
        "get_app_state",
        {"app": "X", "disableDiff": True},
        {"properties": {"app": {}, "disableDiff": {}}},
    )
    assert kept["disableDiff"] is True  # kept where a backend does advertise it


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (
            {
                "message": "Allow ChatGPT to use Calculator?",
                "requestedSchema": {"type": "object", "properties": {}},
            },
            None,
        ),
        (
            {
                "mode": "form",
                "message": "ok?",
                "requestedSchema": {"type": "object", "properties": {}, "title": "T"},
            },
            None,
        ),
        (
            {
                "mode": "url",
                "message": "open",
                "url": "https://x",
                "requestedSchema": {"type": "object"},
            },
            ap.Reason.UNSUPPORTED_REQUEST,
        ),
        (
            {
                "message": "name?",
                "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}},
            },
            ap.Reason.UNSUPPORTED_REQUEST,
        ),
        (
            {"message": "", "requestedSchema": {"type": "object", "properties": {}}},
            ap.Reason.INCOMPLETE_REQUEST,
        ),
        (
            {"message": "x" * 4001, "requestedSchema": {"type": "object", "properties": {}}},
            ap.Reason.INCOMPLETE_REQUEST,
        ),
        ({"requestedSchema": {"type": "object", "properties": {}}}, ap.Reason.INCOMPLETE_REQUEST),
        ({"message": "ok?"}, ap.Reason.INCOMPLETE_REQUEST),
        (None, ap.Reason.INCOMPLETE_REQUEST),
    ],
)
def test_elicitation_classification(params: object, expected: ap.Reason | None) -> None:
    """Only confirmation-only requests may reach the person."""
    got = ap.classify(params)
    if expected is None:
        assert isinstance(got, ap.Confirmation)
    else:
        assert got == ap.Unusable(expected)


def test_refusal_is_sticky_within_a_call() -> None:
    """After a decline, later requests are declined unasked and a late accept changes nothing."""
    c = ap.CallApprovals()
    ok = ap.Confirmation(message="m")
    assert c.prefilter(ok) is None
    assert c.settle("accept", ap.Reason.USER_ACCEPTED) == "accept"
    assert c.prefilter(ok) is None
    assert c.settle("decline", ap.Reason.USER_DECLINED) == "decline"
    assert c.prefilter(ok) == "decline"
    assert c.reason is ap.Reason.USER_DECLINED and c.asked == 2


def test_concurrent_request_cancels_and_beats_late_accept() -> None:
    """A second request while one is pending is cancelled; the first's late accept becomes cancel."""
    c = ap.CallApprovals()
    ok = ap.Confirmation(message="m")
    assert c.prefilter(ok) is None
    assert c.prefilter(ok) == "cancel"
    assert c.settle("accept", ap.Reason.USER_ACCEPTED) == "cancel"
    assert c.reason is ap.Reason.CONCURRENT_REQUEST
    assert ap.reply_for("accept") == {"action": "accept", "content": {}}


def _result(text: str, *, is_error: bool = False, image: bool = False) -> dict[str, object]:
    content: list[dict[str, object]] = [{"type": "text", "text": text}]
    if image:
        content.append(
            {
                "type": "image",
                "mimeType": "image/jpeg",
                "data": base64.b64encode(b"\xff\xd8jpg").decode(),
            }
        )
    out: dict[str, object] = {"content": content}
    if is_error:
        out["isError"] = True
    return out


def test_result_classification() -> None:
    """Stop notice, denials, -10000, tool errors and diffs are told apart by Sky's exact texts."""
    k = results.Kind
    assert results.classify(_result(results.STOP_NOTICE)).kind is k.SESSION_STOPPED
    assert results.classify(_result(results.STOP_NOTICE, is_error=True)).kind is k.SESSION_STOPPED
    assert (
        results.classify(_result("Computer Use server error -10012: " + results.STOP_NOTICE)).kind
        is k.SESSION_STOPPED
    )
    inside = (
        'App=com.apple.TextEdit (pid 4)\nWindow: "a", App: TextEdit.\n0 standard window a\n\t1 text entry area (settable) Value: '
        + results.STOP_NOTICE
    )
    assert results.classify(_result(inside)).kind is k.OK
    denied = "Computer Use approval denied via MCP elicitation for app 'com.apple.calculator'."
    assert results.classify(_result(denied, is_error=True)).kind is k.APPROVAL_DECLINED
    unauth = "Computer Use server error -10000: Sender process is not authenticated"
    assert results.classify(_result(unauth, is_error=True)).kind is k.NOT_AUTHENTICATED
    assert results.classify(_result("boom", is_error=True)).kind is k.TOOL_ERROR
    diff = 'The following is a diff from the previous accessibility tree for Window: "C" with ~ and + representing changed and added elements, respectively.'
    assert results.classify(_result(diff)).kind is k.PARTIAL_UPDATE
    assert results.classify(_result("Updated elements:\n~ 4 text 5")).kind is k.PARTIAL_UPDATE
    out = results.classify(_result("App=x (pid 1)", image=True))
    assert out.kind is k.OK and (out.images[0].decode() or b"").startswith(b"\xff\xd8")


def test_diff_marker_inside_a_document_is_content() -> None:
    """A document line saying 'Updated elements:' inside a full tree is not a diff."""
    tree = 'App=com.apple.TextEdit (pid 4)\nWindow: "n", App: TextEdit.\n0 standard window n\n\t1 text entry area (settable) Value: notes\nUpdated elements: none'
    assert results.classify(_result(tree)).kind is results.Kind.OK
