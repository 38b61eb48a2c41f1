"""Doctor's reading of how Sky's jump host ended before its handshake: a SIGKILL is a
launch-constraint clue only when Deskhand did not send it, and a start Deskhand gave up on is
reported as the timeout it is (``deskhand_d/backends/doctor.py``, pure)."""

from __future__ import annotations

from deskhand_d.backends import doctor


def test_deskhands_own_sigkill_is_never_a_launch_constraint() -> None:
    """-9 (or 137 from a parent) is a launch-constraint candidate only when Deskhand did not
    send SIGKILL itself."""
    for status in (-9, 137):
        found = doctor.exit_findings(status, "permissions_profile", "default", sigkill_sent=False)
        assert [f.code for f in found] == ["launch_constraint"]
    for status in (-9, 137):
        assert (
            doctor.exit_findings(status, "permissions_profile", "default", sigkill_sent=True) == []
        )
    # the sandbox's abort is read the same either way
    aborted = doctor.exit_findings(134, "config_override", "pinned", sigkill_sent=True)
    assert [f.code for f in aborted] == ["sandbox_abort"]


def test_a_start_deskhand_gave_up_on() -> None:
    """The phase, the wait and the signals Deskhand sent, and what to do (not a crash)."""
    found = doctor.start_hung_finding("tools_list", 15.0, ["SIGTERM", "SIGKILL"])
    assert found.code == "start_hung"
    assert found.evidence == (
        "the Sky client did not answer tools/list within 15 s; Deskhand stopped it with "
        "SIGTERM then SIGKILL"
    )
    assert "not a crash or a launch constraint" in found.remedy
    assert "backend.start_timeout_s" in found.remedy
    quiet = doctor.start_hung_finding("initialize", 1.5, [])
    assert quiet.evidence.endswith("within 1.5 s; Deskhand stopped it")
