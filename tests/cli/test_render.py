"""Human output: durations, the status summary, and tolerance of odd or missing fields."""

from __future__ import annotations

import pytest
from deskhandctl.cli import render


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0.0s"),
        (4.24, "4.2s"),
        (59.94, "59.9s"),
        (60, "1m 00s"),
        (423, "7m 03s"),
        (7500, "2h 05m"),
        (3 * 86400 + 4 * 3600 + 59, "3d 4h"),
        (None, "?"),
        ("12", "?"),
        (True, "?"),
    ],
)
def test_duration(seconds: object, text: str) -> None:
    """Durations use at most two units; anything that is not a number shows as '?'."""
    assert render.duration(seconds) == text


def test_status_without_clients_or_requests() -> None:
    """A fresh daemon's status says so instead of printing empty tables."""
    text = render.status(
        {
            "version": "1.0",
            "pid": 7,
            "uptime_s": 1.5,
            "socket": "/s",
            "protocol": 1,
            "clients": [],
            "ops": {},
        }
    )
    assert text.splitlines() == [
        "deskhand-d 1.0 is running (pid 7, up 1.5s)",
        "  socket    /s",
        "  protocol  1",
        "  clients   0 connected",
        "  requests  none yet",
    ]


def test_status_table_is_aligned_and_sorted() -> None:
    """Ops are listed alphabetically in aligned columns under one header."""
    stats = {"count": 12, "errors": 1, "p50_ms": 0.5, "p90_ms": 2, "p99_ms": 10.125}
    text = render.status({"ops": {"status": stats, "hello": stats}})
    lines = text.splitlines()
    header = lines.index("  requests") + 1
    assert lines[header].split() == ["op", "count", "errors", "p50", "ms", "p90", "ms", "p99", "ms"]
    assert [line.split()[0] for line in lines[header + 1 :]] == ["hello", "status"]
    assert lines[header + 1].split() == ["hello", "12", "1", "0.50", "2.00", "10.12"]
    assert len({len(line) for line in lines[header:]}) == 1


def test_status_survives_missing_and_wrong_fields() -> None:
    """An older or newer daemon's status still renders; unknowns are '?'."""
    text = render.status({"clients": ["weird"], "ops": {"x": "not a dict"}})
    assert text.splitlines()[0] == "deskhand-d ? is running (pid ?, up ?)"
    assert "    ?" in text.splitlines()
    assert text.splitlines()[-1].split() == ["x", "?", "?", "?", "?", "?"]


def test_pong_and_shutdown_lines() -> None:
    """ping and shutdown lines name the daemon from its welcome."""
    welcome = {"daemon_version": "2.0", "pid": 99}
    assert render.pong(welcome, 0.00042) == "pong from deskhand-d 2.0 (pid 99) in 0.42 ms"
    assert render.shutting_down(welcome) == "deskhand-d (pid 99) is shutting down"


def test_only_notices_are_shown() -> None:
    """Notice events become one line; other event kinds are not shown."""
    assert render.notice({"kind": "notice", "message": "stopping"}) == "deskhand-d: stopping"
    assert render.notice({"kind": "question"}) is None


def test_status_shows_native_mode_and_the_lock() -> None:
    """A daemon with native mode reports sessions, queue and holder; a lock stands out."""
    result = {
        "sessions": 2,
        "queue_depth": 1,
        "desktop_holder": "cli-0 / deskhandctl (pid 9)",
        "locked_by": "",
    }
    assert (
        "  native    2 session(s), 1 queued, desktop held by cli-0 / deskhandctl (pid 9)"
        in render.status(result)
    )
    locked = render.status({**result, "desktop_holder": "", "locked_by": "deskhandctl (pid 5)"})
    assert "desktop held by nobody" in locked
    assert (
        "  LOCKED    emergency stop by deskhandctl (pid 5); 'deskhandctl unlock' releases it"
        in locked
    )
    assert "native" not in render.status({})


@pytest.mark.parametrize(
    ("data", "acts", "line"),
    [
        (
            {"delivery": "unknown"},
            True,
            "delivery: unknown: outcome unknown, the action may or may not have happened; "
            "observe again",
        ),
        (
            {"delivery": "unknown", "delivered": {"done": 3, "total": 9, "unit": "keys"}},
            False,
            "delivery: unknown: outcome unknown, the request may or may not have taken effect "
            "(3 of 9 keys had been sent); observe again",
        ),
        (
            {"delivery": "refused", "app": "X"},
            True,
            "delivery: refused: nothing was sent to the desktop",
        ),
        (
            {"delivery": "dispatched", "text": "The user changed\x1b[0m it"},
            True,
            "delivery: dispatched: the backend received the action and answered; the message "
            "above says what came of it; it said:\n  > The user changed\\x1b[0m it",
        ),
        (
            {"delivery": "dispatched", "withheld": True, "reason": "declined"},
            False,
            "delivery: dispatched: the backend observed the app, and Deskhand withheld that "
            "observation; no input was sent to the app",
        ),
        (
            {},
            False,
            "delivery: unknown: the reply did not say whether anything reached the desktop; "
            "observe again before acting",
        ),
        (
            {"delivery": 7},
            True,
            "delivery: unknown: the reply named a delivery this deskhandctl does not know (7); "
            "observe again before acting",
        ),
    ],
)
def test_error_delivery_lines(data: dict[str, object], acts: bool, line: str) -> None:
    """data.delivery of an error reply becomes one line starting "delivery: " with the
    daemon's value (backend text quoted); a missing or strange value says unknown."""
    assert render.error_delivery(data, acts=acts) == line


@pytest.mark.parametrize(
    ("result", "line"),
    [
        ({"delivery": "dispatched", "ok": True}, "delivery: dispatched"),
        (
            {"delivery": "dispatched", "ok": False},
            "delivery: dispatched (the backend reported an error, see above)",
        ),
        (
            {"ok": True},
            "delivery: unknown (the reply did not say what reached the desktop; observe before "
            "acting again)",
        ),
    ],
)
def test_result_delivery_lines(result: dict[str, object], line: str) -> None:
    """An action result's delivery line: the stated value, unknown when none came."""
    assert render.result_delivery(result) == line


def test_quoted_untrusted_text() -> None:
    """Quoted text: every line behind '> ', controls and bidi overrides escaped, long text cut."""
    assert render.quoted("a\r\nb\u202ec\u2028d") == "  > a\n  > b\\u202ec\n  > d"
    assert render.quoted("x" * 10, limit=4) == "  > xxxx\n  (and 6 more characters, not shown)"
    assert render.printable("tab\tok, bell\x07, csi\x9b") == "tab\tok, bell\\x07, csi\\x9b"


def test_an_action_shows_the_handoff_steps_the_daemon_states() -> None:
    done = {"kind": "action", "text": "t", "delivery": "dispatched", "ok": True}
    assert "handoff" not in render.action(done)  # native mode: the daemon states none
    assert render.action({**done, "handoff_steps_left": 2}).endswith(
        "handoff: 2 native step(s) left"
    )
    assert render.action({**done, "handoff_steps_left": 0}).endswith("handoff: used up")
