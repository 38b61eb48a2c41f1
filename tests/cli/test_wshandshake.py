"""The pure opening-handshake code: request text, response parsing, acceptance checks."""

from __future__ import annotations

import binascii

import pytest
from deskhandctl.wire.handshake import (
    MAX_HEAD_SIZE,
    HandshakeError,
    HandshakeRejected,
    Response,
    ResponseReader,
    accept_value,
    build_request,
    new_key,
    parse_head,
    verify_accept,
)

RFC_KEY = "dGhlIHNhbXBsZSBub25jZQ=="  # the example in RFC 6455 section 1.3
RFC_ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def ok_response(key: str, **overrides: str | None) -> bytes:
    headers = {
        "Upgrade": "websocket",
        "Connection": "Upgrade",
        "Sec-WebSocket-Accept": accept_value(key),
        "Sec-WebSocket-Protocol": "deskhand.v1.json",
    }
    headers.update(overrides)
    lines = [f"{k}: {v}" for k, v in headers.items() if v is not None]
    return ("HTTP/1.1 101 Switching Protocols\r\n" + "\r\n".join(lines) + "\r\n\r\n").encode()


def parse(data: bytes) -> Response:
    response = ResponseReader().receive_data(data)
    assert response is not None
    return response


def test_accept_value_matches_the_rfc_example() -> None:
    """The accept value for the RFC's sample key is the RFC's sample answer."""
    assert accept_value(RFC_KEY) == RFC_ACCEPT


def test_new_keys_are_random_16_byte_values() -> None:
    """A key is 16 random bytes in base64, different every time."""
    key = new_key()
    assert len(binascii.a2b_base64(key)) == 16
    assert key != new_key()


def test_request_text() -> None:
    """The Upgrade request names the target, the key, version 13 and the subprotocol."""
    text = build_request(host="localhost", target="/v1", key=RFC_KEY, subprotocols=["a.b"])
    assert text.startswith(b"GET /v1 HTTP/1.1\r\nHost: localhost\r\n")
    assert b"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" in text
    assert f"\r\nSec-WebSocket-Key: {RFC_KEY}\r\n".encode() in text
    assert b"\r\nSec-WebSocket-Version: 13\r\n" in text
    assert text.endswith(b"\r\nSec-WebSocket-Protocol: a.b\r\n\r\n")
    assert b"Protocol" not in build_request(host="h", target="/", key=RFC_KEY, subprotocols=[])


def test_response_reader_byte_by_byte() -> None:
    """Fed one byte at a time, the head completes exactly on its final byte."""
    data = ok_response(RFC_KEY)
    reader = ResponseReader()
    for i in range(len(data) - 1):
        assert reader.receive_data(data[i : i + 1]) is None
    response = reader.receive_data(data[-1:])
    assert response is not None and response.status == 101
    assert response.reason == "Switching Protocols"
    assert reader.leftover == b""
    assert reader.received == len(data)


def test_response_reader_whole_keeps_leftover() -> None:
    """Fed in one piece, the frame bytes after the head are returned as leftover."""
    reader = ResponseReader()
    response = reader.receive_data(ok_response(RFC_KEY) + b"\x81\x02hi")
    assert response is not None and reader.leftover == b"\x81\x02hi"


def test_headers_are_case_insensitive_and_repeats_join() -> None:
    """Header lookups ignore case; repeated headers are joined with commas."""
    response = parse_head(b"HTTP/1.1 101 OK\r\nX-A: 1\r\nx-a: 2\r\nCONNECTION: keep-alive, Upgrade")
    assert response.header("X-a") == "1, 2"
    assert response.tokens("connection") == ["keep-alive", "upgrade"]
    assert response.header("missing") is None


def test_verify_accept_passes_a_good_response() -> None:
    """A correct 101 answer passes the checks."""
    verify_accept(parse(ok_response(RFC_KEY)), key=RFC_KEY, subprotocol="deskhand.v1.json")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"Sec-WebSocket-Accept": "AAAAAAAAAAAAAAAAAAAAAAAAAAA="}, "does not match the key"),
        ({"Sec-WebSocket-Accept": None}, "does not match the key"),
        ({"Upgrade": None}, "Upgrade: websocket"),
        ({"Connection": "close"}, "Connection: Upgrade"),
        ({"Sec-WebSocket-Protocol": None}, "did not agree to subprotocol"),
        ({"Sec-WebSocket-Protocol": "deskhand.v1.msgpack"}, "chose subprotocol"),
        ({"Sec-WebSocket-Extensions": "permessage-deflate"}, "extension we did not offer"),
    ],
)
def test_verify_accept_failures(overrides: dict[str, str | None], message: str) -> None:
    """Each way a 101 answer can be wrong is caught and named."""
    with pytest.raises(HandshakeError, match=message):
        verify_accept(
            parse(ok_response(RFC_KEY, **overrides)), key=RFC_KEY, subprotocol="deskhand.v1.json"
        )


def test_non_101_is_a_rejection() -> None:
    """Any status but 101 is reported as a rejection with its status and reason."""
    response = parse(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
    with pytest.raises(HandshakeRejected) as info:
        verify_accept(response, key=RFC_KEY, subprotocol=None)
    assert (info.value.status, info.value.reason) == (403, "Forbidden")
    assert str(info.value) == "HTTP 403 Forbidden"


@pytest.mark.parametrize(
    "head",
    [b"SSH-2.0-OpenSSH_9.2", b"HTTP/1.1 abc OK", b"HTTP/1.1 101 OK\r\nno colon here"],
)
def test_malformed_heads(head: bytes) -> None:
    """Something that is not an HTTP/1.1 response head is a handshake error."""
    with pytest.raises(HandshakeError):
        parse_head(head)


def test_oversized_head_is_refused() -> None:
    """A head that never ends is cut off at MAX_HEAD_SIZE."""
    reader = ResponseReader()
    with pytest.raises(HandshakeError, match="over"):
        for _ in range(MAX_HEAD_SIZE // 1000 + 2):
            reader.receive_data(b"X-Filler: " + b"a" * 990)
