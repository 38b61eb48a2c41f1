"""No input may cost more than its size: memory per byte of input on the request decode path.

Hypothesis draws hostile payloads of up to 4 MiB in both encodings (``dhtest.hostile``: wide
and deep arrays and maps, long strings of every character width, big numbers, msgpack ext and
bin values and lying headers, requests with such a value in any field or as a key, valid
requests with long text, truncated or with trailing bytes) and feeds each to
``Codec.decode_request``, the function every connection calls, under tracemalloc. The peak
of each call must stay within ``FACTOR`` bytes per input byte plus ``ALLOWANCE``:

* ``FACTOR = 8``: the costliest thing the decoder may build is a string, 5 bytes per byte
  (CPython decodes UTF-8 into a 1-byte-per-character buffer, then widens it to 4 when one
  character is outside the BMP), plus 1 for the UTF-8 copy of a text frame; 8 leaves room
  without admitting any per-item structure (a list item or dict entry costs 50-100 bytes).
* ``ALLOWANCE = 1 MiB``: what may cost more per byte (msgspec quotes an unknown key or a bad
  enum value in its error, about 13 bytes per byte; a JSON array is built before its length
  is checked, about 12) is confined to 64 KiB per message by the size checks: 16 x 64 KiB.

Before the fix a 16 MiB msgpack array of empty maps cost 1.2 GB (72 bytes per byte).
"""

from __future__ import annotations

import time
import tracemalloc
from collections import Counter

import msgspec
import pytest
from dhtest.hostile import JSON, MSGPACK, MiB, Payload, payloads
from hypothesis import HealthCheck, given, settings

from deskhand_d import protocol as p
from deskhand_d.errors import BadRequest

FACTOR = 8
ALLOWANCE = 1 * MiB
MAX_SIZE = 4 * MiB
EXAMPLES = 1500

CODECS = {JSON: p.Codec(p.SUBPROTOCOL_JSON), MSGPACK: p.Codec(p.SUBPROTOCOL_MSGPACK)}


def cost(codec: p.Codec, data: str | bytes) -> tuple[int, str]:
    """Peak bytes allocated while decoding ``data``, and the outcome (decoded or a code)."""
    tracemalloc.start()
    try:
        try:
            codec.decode_request(data)
            outcome = "decoded"
        except BadRequest as exc:
            outcome = exc.code
            assert len(exc.message) < 1000, exc.message[:200]  # a reply never echoes bulk
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, outcome


def bound(size: int) -> int:
    return FACTOR * size + ALLOWANCE


def test_fuzz_memory_per_byte_of_input() -> None:
    """Every hostile payload costs at most 8 bytes per byte plus 1 MiB to decode or refuse."""
    seen: list[tuple[Payload, int, str]] = []
    started = time.monotonic()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(case=payloads(MAX_SIZE))
    def fuzz(case: Payload) -> None:
        peak, outcome = cost(CODECS[case.subprotocol], case.data)
        seen.append((case, peak, outcome))
        assert peak <= bound(case.size), (
            f"{case!r}: decoding cost {peak} bytes, {peak / max(case.size, 1):.1f} per byte "
            f"(bound: {FACTOR} per byte + {ALLOWANCE})"
        )

    fuzz()
    elapsed = time.monotonic() - started

    big = [(c, peak) for c, peak, _ in seen if c.size >= 256 * 1024]
    worst_big = max(big, key=lambda x: x[1] / x[0].size)
    worst_any = max(seen, key=lambda x: (x[1] - ALLOWANCE) / max(x[0].size, 1))
    outcomes = Counter(outcome for _, _, outcome in seen)
    print(
        f"decode cost: {len(seen)} payloads in {elapsed:.1f}s, {sum(c.size for c, *_ in seen)} "
        f"bytes; outcomes {dict(outcomes)}; worst for >= 256 KiB: "
        f"{worst_big[1] / worst_big[0].size:.2f} bytes per byte ({worst_big[0]!r}); "
        f"largest peak beyond the allowance per byte: "
        f"{(worst_any[1] - ALLOWANCE) / max(worst_any[0].size, 1):.2f} ({worst_any[0]!r})"
    )
    # The search reached what it is meant to: many large payloads in both encodings, and
    # every way a payload can end (decoded, refused as malformed, refused unread as too large).
    assert len(seen) >= EXAMPLES
    for sub in (JSON, MSGPACK):
        assert sum(1 for c, _ in big if c.subprotocol == sub and c.size >= MiB) >= 20, sub
    assert {"decoded", "bad_request", "request_too_large"} <= set(outcomes), outcomes


# The reproductions from issue 15, in process: refused from a view that builds nothing.

N16 = 16 * MiB
MSGPACK_ARRAY_OF_MAPS = b"\xdd" + (N16 - 5).to_bytes(4, "big") + b"\x80" * (N16 - 5)
JSON_ARRAY_OF_OBJECTS = "[" + ",".join(["{}"] * (4 * MiB // 3)) + "]"


@pytest.mark.parametrize(
    ("sub", "data"),
    [
        (MSGPACK, MSGPACK_ARRAY_OF_MAPS),
        (JSON, JSON_ARRAY_OF_OBJECTS.encode()),
        (JSON, JSON_ARRAY_OF_OBJECTS),
    ],
    ids=["msgpack_16MiB_array_of_maps", "json_4MiB_array_binary", "json_4MiB_array_text"],
)
def test_wrong_type_payload_is_refused_without_being_built(sub: str, data: str | bytes) -> None:
    """A huge array is no request: refused at its first byte; a text frame costs its copy."""
    peak, outcome = cost(CODECS[sub], data)
    assert outcome == "bad_request"
    copy = len(data) + 64 * 1024 if isinstance(data, str) else 0  # the UTF-8 copy of text
    assert peak < 64 * 1024 + copy, peak
    with pytest.raises(BadRequest, match="not a request object") as info:
        CODECS[sub].decode_request(data)
    assert "id" not in info.value.data


def test_an_id_is_never_salvaged_by_building_the_payload() -> None:
    """A large map with a usable id gets its id back, at no cost per entry."""
    wide = {f"k{i}": [{}] for i in range(200_000)}
    for sub, codec in CODECS.items():
        data = (
            msgspec.msgpack.encode({**wide, "id": 42})
            if sub == MSGPACK
            else (msgspec.json.encode({**wide, "id": 42}))
        )
        peak, outcome = cost(codec, data)
        assert outcome == "request_too_large" and peak < 64 * 1024, (sub, outcome, peak)
        with pytest.raises(BadRequest) as info:
            codec.decode_request(data)
        assert info.value.data["id"] == 42
