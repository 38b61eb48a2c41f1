"""The CLI's desktop lines on plain results: status's backend line, doctor's checks, health."""

from __future__ import annotations

from typing import Any

from deskhandctl.cli import deskview

STATUS: dict[str, Any] = {
    "version": "1.2.3",
    "pid": 7,
    "uptime_s": 3.0,
    "socket": "/s",
    "protocol": 1,
    "clients": [],
    "ops": {},
}


def _backend_line(**backend: Any) -> str:
    lines = deskview.status({**STATUS, "backend": backend}).splitlines()
    found = [line for line in lines if line.startswith("  backend")]
    assert len(found) == 1 and lines.index(found[0]) == 3  # after protocol, before clients
    assert lines[4].startswith("  clients")
    return found[0]


def test_status_names_the_backend_and_above_all_a_simulated_desktop() -> None:
    sim = _backend_line(kind="sim", running_pid=None, processes_started=0, simulated=True)
    assert sim == (
        "  backend   sim: SIMULATED desktop: made-up apps, not this computer's; nothing "
        "reaches a real app"
    )
    assert _backend_line(kind="atspi", running_pid=42, processes_started=1) == (
        "  backend   atspi, running (pid 42)"
    )
    assert _backend_line(kind="atspi", running_pid=None, processes_started=0).endswith(
        "not running (starts on first use)"
    )
    assert "not chosen yet" in _backend_line(kind="auto", running_pid=None, processes_started=0)
    # an older daemon without the field: the summary is unchanged
    assert "backend" not in deskview.status(STATUS)


def test_doctor_lists_each_check_with_its_fix_and_is_unhealthy_on_a_failure() -> None:
    result: dict[str, Any] = {
        "backend": "atspi",
        "argv": [],
        "notice": "",
        "handshake_ok": True,
        "tools": [],
        "checks": [
            {"name": "display", "status": "ok", "detail": "X display :1 answers.", "fix": ""},
            {"name": "xtest", "status": "failed", "detail": "no XTEST.", "fix": "use Xorg."},
            {"name": "screenshot", "status": "not_checked", "detail": "needs XTEST.", "fix": ""},
        ],
    }
    text = deskview.doctor(result).splitlines()
    at = text.index("desktop checks (read-only: no input was sent):")
    assert text[at + 1 :] == [
        "  ok          display     X display :1 answers.",
        "  FAILED      xtest       no XTEST.",
        "                          fix: use Xorg.",
        "  not checked screenshot  needs XTEST.",
    ]
    assert not deskview.healthy(result)
    result["checks"] = result["checks"][:1]
    assert deskview.healthy(result)
    assert not deskview.healthy({**result, "handshake_ok": False})
    assert "SIMULATED" in deskview.doctor({**result, "simulated": True})
