"""The pure RFC 6455 codec: frames in and out, fed whole, byte by byte and in random chunks."""

from __future__ import annotations

import itertools
import os

import pytest
from deskhandctl.wire.frames import (
    CLOSE_INVALID_DATA,
    CLOSE_MESSAGE_TOO_BIG,
    CLOSE_NO_STATUS,
    CLOSE_PROTOCOL_ERROR,
    OP_BINARY,
    OP_CLOSE,
    OP_CONTINUATION,
    OP_PING,
    OP_PONG,
    OP_TEXT,
    Close,
    Event,
    FrameReader,
    Message,
    Ping,
    Pong,
    WebSocketProtocolError,
    apply_mask,
    client_frame,
    decode_close_payload,
    encode_close_payload,
    encode_frame,
)
from hypothesis import given
from hypothesis import strategies as st


def feed_whole(
    data: bytes, *, masked: bool = False, max_message_size: int = 1 << 20
) -> list[Event]:
    reader = FrameReader(masked=masked, max_message_size=max_message_size)
    reader.receive_data(data)
    return list(reader.events())


def feed_bytewise(data: bytes) -> list[Event]:
    reader = FrameReader()
    events: list[Event] = []
    for i in range(len(data)):
        reader.receive_data(data[i : i + 1])
        events.extend(reader.events())
    return events


def feed_chunks(data: bytes, cuts: list[int]) -> list[Event]:
    reader = FrameReader()
    events: list[Event] = []
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    for start, end in itertools.pairwise(points):
        reader.receive_data(data[start:end])
        events.extend(reader.events())
    return events


# A conversation a server could send: plain and fragmented messages, a ping between fragments.
CONVERSATION = b"".join(
    [
        encode_frame(OP_TEXT, "héllo".encode()),
        encode_frame(OP_BINARY, bytes(range(256)) * 300),  # 76800 bytes: 16-bit length
        encode_frame(OP_TEXT, b"frag", fin=False),
        encode_frame(OP_PING, b"are you there"),
        encode_frame(OP_CONTINUATION, b"men", fin=False),
        encode_frame(OP_CONTINUATION, b"ted", fin=True),
        encode_frame(OP_PONG, b""),
        encode_frame(OP_BINARY, b"x" * 70000),
        encode_frame(OP_CLOSE, encode_close_payload(1001, "going away")),
    ]
)
EXPECTED = [
    Message("héllo"),
    Message(bytes(range(256)) * 300),
    Ping(b"are you there"),
    Message("fragmented"),
    Pong(b""),
    Message(b"x" * 70000),
    Close(1001, "going away"),
]


def test_conversation_fed_whole() -> None:
    """All events come out in order when every byte arrives at once."""
    assert feed_whole(CONVERSATION) == EXPECTED


@pytest.mark.slow
def test_conversation_fed_byte_by_byte() -> None:
    """One byte at a time yields exactly the same events."""
    assert feed_bytewise(CONVERSATION) == EXPECTED


@given(st.lists(st.integers(min_value=0, max_value=len(CONVERSATION)), max_size=40))
def test_conversation_fed_in_random_chunks(cuts: list[int]) -> None:
    """Any chunking of the byte stream yields the same events."""
    assert feed_chunks(CONVERSATION, cuts) == EXPECTED


@given(
    st.lists(
        st.one_of(st.text(max_size=300), st.binary(max_size=300)),
        min_size=1,
        max_size=8,
    ),
    st.integers(min_value=1, max_value=50),
    st.lists(st.integers(min_value=0), max_size=30),
)
def test_fragmented_messages_reassemble(
    messages: list[str | bytes], piece: int, cuts: list[int]
) -> None:
    """Messages cut into continuation frames of any size come back whole, in any chunking."""
    stream = bytearray()
    for message in messages:
        payload = message.encode() if isinstance(message, str) else message
        opcode = OP_TEXT if isinstance(message, str) else OP_BINARY
        parts = [payload[i : i + piece] for i in range(0, len(payload), piece)] or [b""]
        for index, part in enumerate(parts):
            stream += encode_frame(
                opcode if index == 0 else OP_CONTINUATION, part, fin=index == len(parts) - 1
            )
    assert feed_chunks(bytes(stream), cuts) == [Message(m) for m in messages]


@given(st.binary(max_size=70000), st.booleans())
def test_masked_frames_round_trip(payload: bytes, binary: bool) -> None:
    """A client frame (masked) decodes back to its payload on the server side."""
    frame = client_frame(OP_BINARY if binary else OP_TEXT, payload if binary else b"")
    [event] = feed_whole(frame, masked=True)
    assert event == Message(payload if binary else "")


def test_client_frames_are_masked_with_fresh_keys() -> None:
    """Each client frame sets the mask bit and uses its own random key."""
    first, second = client_frame(OP_TEXT, b"same"), client_frame(OP_TEXT, b"same")
    assert first[1] & 0x80 and second[1] & 0x80
    assert first[2:6] != second[2:6]  # 2**-32 chance of a false failure
    assert first[6:] != b"same"


def test_length_encodings() -> None:
    """7-bit, 16-bit and 64-bit payload lengths are written as RFC 6455 requires."""
    assert encode_frame(OP_BINARY, b"a" * 125)[:2] == bytes([0x82, 125])
    assert encode_frame(OP_BINARY, b"a" * 126)[:4] == bytes([0x82, 126, 0, 126])
    assert encode_frame(OP_BINARY, b"a" * 65536)[:10] == bytes([0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0])


def test_apply_mask_is_an_involution() -> None:
    """Masking twice with the same key restores the data, leading zero bytes included."""
    data = b"\x00\x00" + os.urandom(1001)
    mask = os.urandom(4)
    assert apply_mask(apply_mask(data, mask), mask) == data
    assert apply_mask(b"", mask) == b""
    assert apply_mask(b"\x00\x00\x00\x00\x00", b"\x01\x02\x03\x04") == b"\x01\x02\x03\x04\x01"


def test_encode_frame_rejects_bad_mask() -> None:
    """A mask must be four bytes long."""
    with pytest.raises(ValueError, match="4 bytes"):
        encode_frame(OP_TEXT, b"", mask=b"abc")


@pytest.mark.parametrize(
    ("frame", "message", "code"),
    [
        (bytes([0x81 | 0x40, 0]), "reserved bits", CLOSE_PROTOCOL_ERROR),
        (bytes([0x83, 0]), "unknown opcode 0x3", CLOSE_PROTOCOL_ERROR),
        (bytes([0x8F, 0]), "unknown opcode 0xf", CLOSE_PROTOCOL_ERROR),
        (encode_frame(OP_TEXT, b"hi", mask=b"abcd"), "unexpected masked frame", 1002),
        (encode_frame(OP_PING, b"", fin=False), "fragmented control frame", 1002),
        (bytes([0x89, 126, 0, 126]) + b"x" * 126, "over 125 bytes", 1002),
        (encode_frame(OP_CONTINUATION, b"x"), "continuation frame without", 1002),
        (
            encode_frame(OP_TEXT, b"a", fin=False) + encode_frame(OP_TEXT, b"b"),
            "before the previous one finished",
            CLOSE_PROTOCOL_ERROR,
        ),
        (encode_frame(OP_TEXT, b"\xff\xfe"), "not valid UTF-8", CLOSE_INVALID_DATA),
        (encode_frame(OP_CLOSE, b"\x03"), "1-byte body", CLOSE_PROTOCOL_ERROR),
        (encode_frame(OP_CLOSE, (1005).to_bytes(2, "big")), "invalid code 1005", 1002),
        (encode_frame(OP_CLOSE, (999).to_bytes(2, "big")), "invalid code 999", 1002),
        (encode_frame(OP_CLOSE, b"\x03\xe8\xff"), "close reason", CLOSE_INVALID_DATA),
        (bytes([0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 1]), "most significant bit", 1002),
    ],
)
def test_protocol_violations(frame: bytes, message: str, code: int) -> None:
    """Each violation is reported with a readable message and the right close code."""
    for feed in (feed_whole, feed_bytewise):
        with pytest.raises(WebSocketProtocolError, match=message) as info:
            feed(frame)
        assert info.value.close_code == code


def test_unmasked_frame_refused_by_server_side_reader() -> None:
    """A server-side reader (masked=True) refuses an unmasked client frame."""
    with pytest.raises(WebSocketProtocolError, match="unexpected unmasked frame"):
        feed_whole(encode_frame(OP_TEXT, b"x"), masked=True)


def test_oversized_single_frame_refused_from_its_header() -> None:
    """A frame announcing more than the limit is refused before its payload arrives."""
    reader = FrameReader(max_message_size=1000)
    reader.receive_data(encode_frame(OP_BINARY, b"x" * 1001)[:4])  # the header only
    with pytest.raises(WebSocketProtocolError, match="1000-byte limit") as info:
        reader.next_event()
    assert info.value.close_code == CLOSE_MESSAGE_TOO_BIG


def test_oversized_fragmented_message_refused() -> None:
    """Fragments that add up to more than the limit are refused, each one being small."""
    data = encode_frame(OP_TEXT, b"a" * 600, fin=False) + encode_frame(OP_CONTINUATION, b"b" * 600)
    with pytest.raises(WebSocketProtocolError) as info:
        feed_whole(data, max_message_size=1000)
    assert info.value.close_code == CLOSE_MESSAGE_TOO_BIG


def test_message_at_the_limit_is_accepted() -> None:
    """Exactly max_message_size bytes, split over fragments, is still fine."""
    data = encode_frame(OP_TEXT, b"a" * 500, fin=False) + encode_frame(OP_CONTINUATION, b"b" * 500)
    assert feed_whole(data, max_message_size=1000) == [Message("a" * 500 + "b" * 500)]


def test_control_frames_do_not_count_towards_the_limit() -> None:
    """A ping between fragments is delivered and does not eat into the message allowance."""
    data = (
        encode_frame(OP_BINARY, b"a" * 100, fin=False)
        + encode_frame(OP_PING, b"p" * 125)
        + encode_frame(OP_CONTINUATION, b"b" * 100)
    )
    assert feed_whole(data, max_message_size=200) == [
        Ping(b"p" * 125),
        Message(b"a" * 100 + b"b" * 100),
    ]


def test_reader_stays_broken_after_an_error() -> None:
    """After a violation every call raises the same error; good bytes cannot revive it."""
    reader = FrameReader()
    reader.receive_data(bytes([0x83, 0]))
    with pytest.raises(WebSocketProtocolError) as first:
        reader.next_event()
    reader.receive_data(encode_frame(OP_TEXT, b"fine"))
    with pytest.raises(WebSocketProtocolError) as second:
        reader.next_event()
    assert second.value is first.value


def test_nothing_is_parsed_after_close() -> None:
    """Bytes after a close frame are dropped, and no event follows the close."""
    reader = FrameReader()
    reader.receive_data(encode_frame(OP_CLOSE, b"") + encode_frame(OP_TEXT, b"late"))
    assert list(reader.events()) == [Close(CLOSE_NO_STATUS, "")]
    assert reader.closed
    reader.receive_data(encode_frame(OP_TEXT, b"later"))
    assert reader.next_event() is None
    assert reader.buffered == 0


def test_incomplete_input_waits() -> None:
    """A partial frame produces no event and keeps its bytes."""
    frame = encode_frame(OP_TEXT, b"hello")
    reader = FrameReader()
    reader.receive_data(frame[:-1])
    assert reader.next_event() is None
    assert reader.buffered == len(frame) - 1
    reader.receive_data(frame[-1:])
    assert reader.next_event() == Message("hello")


@pytest.mark.parametrize(("code", "reason"), [(1000, ""), (4001, "custom"), (3000, "ünïcode")])
def test_close_payload_round_trip(code: int, reason: str) -> None:
    """Close bodies encode and decode to the same code and reason."""
    assert decode_close_payload(encode_close_payload(code, reason)) == Close(code, reason)


def test_close_reason_truncated_at_a_character_boundary() -> None:
    """A long reason is cut so the body fits 125 bytes without splitting a character."""
    payload = encode_close_payload(1000, "é" * 200)
    assert len(payload) <= 125
    assert decode_close_payload(payload).reason == "é" * 61


def test_events_compare_by_type_and_value() -> None:
    """Events are value objects: same type and fields means equal, and they hash alike."""
    assert Ping(b"x") == Ping(b"x") and hash(Ping(b"x")) == hash(Ping(b"x"))
    assert Ping(b"x") != Pong(b"x")
    assert Message("a") != Message(b"a")
    assert repr(Close(1000, "bye")) == "Close(code=1000, reason='bye')"
