"""Half-sent messages cost one shared budget, are refused at the header, and give memory back.

Reproduces issue #24 §2 on a real daemon: connections (msgpack) each send a 1 MiB binary frame
with FIN=0 and then 1 MiB continuation frames, never finishing the message. Before the fix each
connection could hold up to ``max_message_bytes`` (64 MiB): 8 such clients took the daemon from
36 MB to 523 MB, and it stayed there after they closed; a header announcing more than 64 MiB was
refused only once the bytes had arrived. Now every partly received byte is taken from one
budget across connections (128 MiB), a frame that cannot fit is refused as its header arrives,
and the heap is trimmed when such a connection ends.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest.daemon import DaemonProc, running_daemon
from dhtest.wsclient import Closed, SyncClient

MiB = 1024 * 1024
BUDGET = 128 * MiB  # deskhand_d.protocol.sharedbytes.PARTIAL_MESSAGES_BYTES
CLIENTS = 12
FRAMES = 24  # 24 MiB each, 288 MiB offered in all


def memory(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == key:
            return int(value.split()[0]) * 1024
    raise AssertionError(f"no {key} for {pid}")


def frame_header(opcode: int, fin: bool, length: int) -> bytes:
    """A masked client frame header with a 64-bit length and an all-zero mask."""
    return bytes([(0x80 if fin else 0) | opcode, 0x80 | 127]) + struct.pack("!Q", length) + bytes(4)


def frame(opcode: int, fin: bool, payload: bytes) -> bytes:
    return frame_header(opcode, fin, len(payload)) + payload  # a zero mask leaves it as is


@pytest.fixture
def daemon() -> Iterator[DaemonProc]:
    with running_daemon({"DESKHAND_BACKEND": "sim"}) as d:
        yield d


def test_half_sent_messages_share_one_budget_and_memory_comes_back(daemon: DaemonProc) -> None:
    pid = daemon.proc.pid
    bystander = SyncClient(daemon.socket, name="bystander")
    start = memory(pid, "VmRSS")
    clients = [
        SyncClient(daemon.socket, "deskhand.v1.msgpack", name=f"half{n}") for n in range(CLIENTS)
    ]
    chunk = b"\x91" + bytes(MiB - 1)  # the start of a msgpack array, then filler
    refused: list[SyncClient] = []
    for k in range(FRAMES):
        for c in clients:
            if c in refused:
                continue
            try:
                c.send_raw(frame(0x2 if k == 0 else 0x0, False, chunk))
            except OSError:
                refused.append(c)  # closed by the daemon: it is out of the budget
        assert bystander.call("ping", data=str(k))["result"]["data"] == str(k)
    peak = memory(pid, "VmHWM") - start
    # The budget, the chunks' bookkeeping and a few MiB in flight; not 12 x 24 MiB.
    assert peak < BUDGET + 48 * MiB, f"{peak / MiB:.0f} MiB held for half-sent messages"
    assert refused
    closes = []
    for c in refused:
        try:
            c.recv_message()
        except Closed as exc:
            closes.append(exc.code)
        except OSError:
            closes.append(None)  # reset before the close frame could be read
    assert 1013 in closes, closes  # "try again later": the shared budget was spent
    for c in clients:
        c.sock.close()
    # Memory goes back once they are gone (the daemon trims its heap), not just to the allocator.
    deadline = time.monotonic() + 10
    while memory(pid, "VmRSS") - start > 32 * MiB:
        assert time.monotonic() < deadline, f"RSS stays {memory(pid, 'VmRSS') / MiB:.0f} MiB"
        time.sleep(0.1)
    assert bystander.call("ping", data="after")["result"]["data"] == "after"
    bystander.close()


@pytest.mark.parametrize("length", [64 * MiB + 1, 1 << 40, (1 << 63) - 1])
def test_a_header_announcing_too_much_is_refused_before_its_bytes(
    daemon: DaemonProc, length: int
) -> None:
    c = SyncClient(daemon.socket, "deskhand.v1.msgpack", name="liar", timeout=10)
    c.send_raw(frame_header(0x2, True, length))  # and not one byte of payload
    with pytest.raises(Closed) as info:
        c.recv_message()
    assert info.value.code == 1009
    assert "message too big" in info.value.reason
    c.sock.close()


def test_continuations_past_the_message_limit_are_refused_at_their_header(
    daemon: DaemonProc,
) -> None:
    """A message's frames count together: a continuation whose header takes the message past
    the limit is refused before its payload."""
    c = SyncClient(daemon.socket, "deskhand.v1.msgpack", name="grows", timeout=10)
    c.send_raw(frame(0x2, False, b"\x91" + bytes(MiB - 1)))
    c.send_raw(frame_header(0x0, True, 63 * MiB + 1))
    with pytest.raises(Closed) as info:
        c.recv_message()
    assert info.value.code == 1009
    c.sock.close()
