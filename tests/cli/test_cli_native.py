"""Native-mode commands against the scripted fake daemon: requests sent, output, exit codes.

Every command's request shape is checked against what ``deskhand_d.protocol.requests`` defines;
human and ``--json`` output, screenshot files, refusals and session naming are checked here.
Question prompts on a terminal are in ``test_cli_questions.py``.
"""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path
from typing import Any

import msgspec
import pytest
from fake_daemon import (
    OBSERVATION,
    SCREENSHOT,
    TREE,
    Message,
    WsStart,
    action,
    error,
    fake_daemon,
    result_for,
    run_cli,
    standard,
    with_overrides,
)

from deskhand_d.protocol import Request

A = ["--app", "Calculator", "--state", "st-obs-1"]
T = {"app": "Calculator", "state_id": "st-obs-1"}

# argv after the command word, the request the daemon must receive (without its id).
REQUESTS: list[tuple[list[str], Message]] = [
    (["observe", "Calculator"], {"op": "get_app_state", "app": "Calculator"}),
    (["click", *A, "--index", "5"], {"op": "click", **T, "element_index": 5}),
    (
        ["click", *A, "--x", "10.5", "--y=-3", "--count", "2", "--button", "right"],
        {"op": "click", **T, "x": 10.5, "y": -3.0, "click_count": 2, "mouse_button": "right"},
    ),
    (["type", *A, "12+30"], {"op": "type_text", **T, "text": "12+30"}),
    (["press", *A, "super+a"], {"op": "press_key", **T, "key": "super+a"}),
    (
        ["scroll", *A, "--index", "3", "--direction", "down", "--pages", "2.5"],
        {"op": "scroll", **T, "element_index": 3, "direction": "down", "pages": 2.5},
    ),
    (
        ["scroll", *A, "--index=0", "--direction=up"],
        {"op": "scroll", **T, "element_index": 0, "direction": "up"},
    ),
    (
        ["set-value", *A, "--index", "1", ""],
        {"op": "set_value", **T, "element_index": 1, "value": ""},
    ),
    (
        [
            "select-text",
            *A,
            "--index",
            "2",
            "world",
            "--prefix",
            "hello ",
            "--suffix",
            "!",
            "--selection",
            "cursor_after",
        ],
        {
            "op": "select_text",
            **T,
            "element_index": 2,
            "text": "world",
            "prefix": "hello ",
            "suffix": "!",
            "selection": "cursor_after",
        },
    ),
    (
        ["drag", *A, "--from", "1,2", "--to", "30.5,40"],
        {"op": "drag", **T, "from_x": 1.0, "from_y": 2.0, "to_x": 30.5, "to_y": 40.0},
    ),
    (
        ["secondary-action", *A, "--index", "4", "AXShowMenu"],
        {"op": "perform_secondary_action", **T, "element_index": 4, "action": "AXShowMenu"},
    ),
    (["list-apps"], {"op": "list_apps"}),
    (["launch", "TextEdit"], {"op": "launch_app", "app": "TextEdit"}),
    (["mode"], {"op": "mode_get"}),
    (["mode", "jev"], {"op": "mode_set", "mode": "jev"}),
    (["turn", "begin"], {"op": "turn_begin"}),
    (["turn", "end"], {"op": "turn_end"}),
    (["apps", "list"], {"op": "apps_list"}),
    (["apps", "add", "Calendar"], {"op": "apps_add", "app": "Calendar"}),
    (["stop"], {"op": "stop"}),
    (["unlock"], {"op": "unlock"}),
]


@pytest.fixture(autouse=True)
def no_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process runs never count as attached to a terminal, even under ``pytest -s``."""
    monkeypatch.setattr("deskhandctl.cli.events.terminal_attached", lambda: False)
    monkeypatch.delenv("DESKHAND_SESSION", raising=False)


def person_confirms(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> None:
    """For a step only the person takes (``unlock``, ``apps add``): a terminal whose person
    types yes. Here only the request and its output are checked; the terminal itself, the
    refusal without one and the discarded typed-ahead keys are in ``test_person_only.py``."""
    words = [a for a in argv if not a.startswith("--")]
    if words[:1] == ["unlock"] or words[:2] in (["apps", "add"], ["grants", "restore"]):
        monkeypatch.setattr("deskhandctl.cli.events.terminal_attached", lambda: True)
        monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))


async def one_request(
    ws_server: WsStart, *argv: str, script: Any = standard
) -> tuple[int, list[Message]]:
    """Run the CLI once; return its exit code and every request the fake received."""
    received: list[Message] = []
    path = await ws_server(fake_daemon(script, received))
    code = await run_cli("--socket", path, *argv)
    return code, received


@pytest.mark.parametrize(("argv", "expected"), REQUESTS, ids=[" ".join(a[:2]) for a, _ in REQUESTS])
async def test_request_shapes(
    ws_server: WsStart, monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: Message
) -> None:
    """Each command sends exactly the documented op and fields, valid for the daemon's decoder."""
    person_confirms(monkeypatch, argv)
    code, received = await one_request(ws_server, *argv)
    assert code == 0
    hello, request = received
    assert hello["op"] == "hello"
    assert {k: v for k, v in request.items() if k != "id"} == expected
    msgspec.json.decode(json.dumps(request), type=Request)  # the daemon's own contract accepts it


@pytest.mark.parametrize(("argv", "expected"), REQUESTS, ids=[" ".join(a[:2]) for a, _ in REQUESTS])
async def test_json_output_is_the_result(
    ws_server: WsStart,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    expected: Message,
) -> None:
    """--json prints the result object as one line (observe: screenshot replaced by null)."""
    person_confirms(monkeypatch, argv)
    assert (await one_request(ws_server, "--json", *argv))[0] == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    want = result_for(expected["op"])
    if expected["op"] == "get_app_state":
        want = {**want, "screenshot": None}
    assert json.loads(out) == want


@pytest.mark.parametrize(
    ("argv", "lines"),
    [
        (["list-apps"], ["Calculator — com.apple.calculator [running]"]),
        (["launch", "TextEdit"], ["launch: done (launched TextEdit)"]),
        (["mode"], ["mode: native"]),
        (["mode", "jev"], ["mode: jev (set by deskhandctl)"]),
        (["turn", "begin"], ["turn begin: done"]),
        (["turn", "end"], ["turn end: done (3 state ids retired)"]),
        (
            ["apps", "list"],
            [
                "allowed apps (2): Calculator, TextEdit",
                "added with 'apps add': Calculator",
                "allowlist file: /home/u/.config/deskhand/apps.json",
            ],
        ),
        (
            ["apps", "add", "Calendar"],
            ["added to the allowlist", "allowed apps (3): Calculator, TextEdit, Calendar"],
        ),
        (
            ["stop"],
            [
                "deskhand-d is stopped and locked by deskhandctl; 2 request(s) cancelled. 'deskhandctl unlock' releases it."
            ],
        ),
        (["unlock"], ["deskhand-d is unlocked: native actions are accepted again"]),
    ],
)
async def test_human_output(
    ws_server: WsStart,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    lines: list[str],
) -> None:
    """The control and allowlist commands print short summaries of their results."""
    person_confirms(monkeypatch, argv)
    assert (await one_request(ws_server, *argv))[0] == 0
    out = capsys.readouterr().out.splitlines()
    for line in lines:
        assert line in out


async def test_observe_human_output_ends_with_the_state_id(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """observe prints the tree, mentions the unsaved screenshot, and ends with the state id."""
    assert (await one_request(ws_server, "observe", "Calculator"))[0] == 0
    out = capsys.readouterr().out
    assert out.startswith(TREE + "\n")
    assert "screenshot: available; add --screenshot FILE to save it" in out
    assert out.splitlines()[-1] == "state: st-obs-1 (single use, valid 60 s)"


async def test_observe_escapes_terminal_controls(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """App text cannot drive the terminal: escape sequences print as visible escapes."""
    hostile = {
        **OBSERVATION,
        "text": "Title\x1b]0;owned\x07\r\nline 2",
        "approval_reason": "preapproved",
    }
    script = with_overrides(
        get_app_state=lambda rid: [{"type": "result", "id": rid, "result": hostile}]
    )
    assert (await one_request(ws_server, "observe", "Calculator", script=script))[0] == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert out.startswith("Title\\x1b]0;owned\\x07\nline 2\n")
    assert "approval: preapproved" in out


async def test_screenshot_is_saved_0600(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--screenshot writes the decoded bytes to FILE with mode 0600 and says so."""
    shot = tmp_path / "shot.jpg"
    shot.write_bytes(b"old contents, longer than nothing")
    shot.chmod(0o644)
    assert (await one_request(ws_server, "observe", "Calculator", "--screenshot", str(shot)))[
        0
    ] == 0
    assert shot.read_bytes() == SCREENSHOT
    assert stat.S_IMODE(shot.stat().st_mode) == 0o600
    out = capsys.readouterr().out
    assert f"screenshot: saved to {shot} (image/jpeg, {len(SCREENSHOT)} bytes)" in out
    assert out.splitlines()[-1].startswith("state: st-obs-1")


async def test_screenshot_json_names_the_file_never_the_bytes(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """With --json the screenshot field is the saved path; the base64 never reaches stdout."""
    shot = tmp_path / "new.jpg"
    assert (
        await one_request(ws_server, "--json", "observe", "Calculator", "--screenshot", str(shot))
    )[0] == 0
    out = capsys.readouterr().out
    assert OBSERVATION["screenshot"][:40] not in out
    shown = json.loads(out)
    assert shown["screenshot"] == str(shot)
    assert {k: shown[k] for k in ("state_id", "app", "text", "approval_reason")} == {
        "state_id": "st-obs-1",
        "app": "Calculator",
        "text": TREE,
        "approval_reason": None,
    }
    assert stat.S_IMODE(os.stat(shot).st_mode) == 0o600
    assert shot.read_bytes() == SCREENSHOT


async def test_screenshot_never_written_through_a_symlink(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A symlink at FILE is refused: exit 73, the target untouched, the observation still shown."""
    target = tmp_path / "target"
    target.write_bytes(b"keep me")
    link = tmp_path / "link.jpg"
    link.symlink_to(target)
    code, _ = await one_request(
        ws_server, "--json", "observe", "Calculator", "--screenshot", str(link)
    )
    assert code == 73
    assert target.read_bytes() == b"keep me"
    captured = capsys.readouterr()
    shown = json.loads(captured.out)
    assert shown["screenshot"] is None and "symbolic link" in shown["screenshot_error"]
    assert shown["state_id"] == "st-obs-1"
    assert "symbolic link" in captured.err


async def test_observation_without_screenshot(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """When the backend sent no screenshot, FILE is not created, the observation is still
    printed (its state id is usable) and the command exits 73 with the reason on stderr, in
    both output forms, so a script never takes an old file for this observation."""
    bare = {**OBSERVATION, "screenshot": None, "screenshot_mime": ""}
    script = with_overrides(
        get_app_state=lambda rid: [{"type": "result", "id": rid, "result": bare}]
    )
    shot = tmp_path / "none.jpg"
    code, _ = await one_request(
        ws_server, "observe", "Calculator", "--screenshot", str(shot), script=script
    )
    assert code == 73  # SCREENSHOT_NOT_SAVED
    assert not shot.exists()
    out, err = capsys.readouterr()
    assert "App=/System/Applications/Calculator.app/" in out
    assert "screenshot: none came with this observation" in out
    assert out.rstrip().endswith("state: st-obs-1 (single use, valid 60 s)")
    assert f"the observation came without a screenshot, so {shot} was not written" in err
    assert "deskhandctl doctor" in err
    code, _ = await one_request(
        ws_server, "--json", "observe", "Calculator", "--screenshot", str(shot), script=script
    )
    assert code == 73 and not shot.exists()
    out, err = capsys.readouterr()
    shown = json.loads(out)
    assert shown["state_id"] == "st-obs-1" and shown["screenshot"] is None
    assert "without a screenshot" in shown["screenshot_error"] and "without a screenshot" in err


async def test_action_human_output(ws_server: WsStart, capsys: pytest.CaptureFixture[str]) -> None:
    """An action prints the backend's text, the delivery and the new state id."""
    assert (await one_request(ws_server, "press", *A, "Return"))[0] == 0
    assert capsys.readouterr().out.splitlines() == [
        "App=com.apple.calculator (pid 7)",
        "press_key went fine",
        "delivery: dispatched",
        "state: st-act-2 (single use)",
    ]


async def test_failed_action_exits_1(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """ok: false (the backend reported an error) exits 1 but still prints the result."""
    failed = action("click", ok=False, state_id=None)
    script = with_overrides(click=lambda rid: [{"type": "result", "id": rid, "result": failed}])
    assert (await one_request(ws_server, "click", *A, "--index", "9", script=script))[0] == 1
    assert capsys.readouterr().out.splitlines() == [
        "no such element",
        "delivery: dispatched (the backend reported an error, see above)",
    ]
    assert (await one_request(ws_server, "--json", "click", *A, "--index", "9", script=script))[
        0
    ] == 1
    assert json.loads(capsys.readouterr().out) == failed


@pytest.mark.parametrize(
    ("code", "data", "note", "want"),
    [
        (
            "outcome_unknown",
            {"delivery": "unknown"},
            "delivery: unknown: outcome unknown, the action may or may not have happened; "
            "observe again",
            3,
        ),
        (
            "input_target_changed",
            {"delivery": "partial", "delivered": {"done": 93, "total": 240, "unit": "characters"}},
            "delivery: partial: partly delivered, 93 of 240 characters reached the app before "
            "it stopped; observe again",
            3,
        ),
        (
            "state_expired",
            {"delivery": "refused"},
            "delivery: refused: nothing was sent to the desktop",
            1,
        ),
        (
            "key_unknown",
            {"delivery": "dispatched"},
            "delivery: dispatched: the backend received the action and answered; the message "
            "above says what came of it",
            1,
        ),
        (
            "app_not_allowed",
            {},
            "delivery: unknown: the reply did not say whether anything reached the desktop; "
            "observe again before acting",
            3,
        ),
        (
            "app_not_allowed",
            {"delivery": "delivered-ish"},
            "delivery: unknown: the reply named a delivery this deskhandctl does not know "
            "(delivered-ish); observe again before acting",
            3,
        ),
    ],
)
async def test_refusals_exit_1_with_error_object(
    ws_server: WsStart,
    capsys: pytest.CaptureFixture[str],
    code: str,
    data: dict[str, Any],
    note: str,
    want: int,
) -> None:
    """An error reply to an action exits 1, or 3 when its delivery line says unknown or
    partial; stderr has the message and exactly one delivery line, from data.delivery (unknown
    when the reply names none this client knows: never guessed); --json prints the error
    object."""
    script = with_overrides(click=lambda rid: [error(rid, code, "because", **data)])
    assert (await one_request(ws_server, "click", *A, "--index", "1", script=script))[0] == want
    err = capsys.readouterr().err.splitlines()
    assert err == [f"deskhandctl: {code}: because", f"deskhandctl: {note}"]
    assert (await one_request(ws_server, "--json", "click", *A, "--index", "1", script=script))[
        0
    ] == want
    out, err_json = capsys.readouterr()
    assert json.loads(out) == {"error": {"code": code, "message": "because", "data": data}}
    assert err_json.splitlines()[1:] == [f"deskhandctl: {note}"]


async def test_commands_off_the_desktop_print_no_delivery_line(
    ws_server: WsStart, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error reply to a command that does not reach the desktop (apps add, mode) has no
    delivery to state: only the message, exit 1."""
    person_confirms(monkeypatch, ["apps", "add", "X"])
    script = with_overrides(apps_add=lambda rid: [error(rid, "apps_file_invalid", "broken")])
    assert (await one_request(ws_server, "apps", "add", "X", script=script))[0] == 1
    err = capsys.readouterr().err  # after the confirmation's prompt
    assert err.endswith("[y/N] deskhandctl: apps_file_invalid: broken\n")
    assert "delivery" not in err


@pytest.mark.parametrize(
    "argv", [a for a, _ in REQUESTS[1:3]] + [["observe", "X"], ["apps", "add", "X"], ["stop"]]
)
async def test_every_command_refusal_exits_1(
    ws_server: WsStart,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    """Whatever the command, an error reply to it exits 1 with the JSON error object."""
    person_confirms(monkeypatch, argv)
    script = with_overrides(
        **{
            op: (lambda rid: [error(rid, "locked", "stopped", delivery="refused")])
            for op in ("click", "get_app_state", "apps_add", "stop")
        }
    )
    assert (await one_request(ws_server, "--json", *argv, script=script))[0] == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "locked"


async def test_session_names_in_hello(ws_server: WsStart, monkeypatch: pytest.MonkeyPatch) -> None:
    """Session commands resume cli-<uid>, or --session, or $DESKHAND_SESSION; '' means none."""

    async def hello_of(*argv: str) -> Message:
        code, received = await one_request(ws_server, *argv)
        assert code == 0
        return received[0]

    hello = await hello_of("observe", "Calculator")
    assert hello["session"] == f"cli-{os.getuid()}"
    assert hello["can_answer_questions"] is False
    assert hello["client"] == {"name": "deskhandctl", "version": "0.1.0", "kind": "cli"}
    assert (await hello_of("--session", "work.1", "click", *A, "--index", "1"))[
        "session"
    ] == "work.1"
    monkeypatch.setenv("DESKHAND_SESSION", "from-env")
    assert (await hello_of("turn", "end"))["session"] == "from-env"
    assert (await hello_of("mode", "--session=flag-wins"))["session"] == "flag-wins"
    assert "session" not in await hello_of("--session", "", "list-apps")
    # Daemon-wide commands need no session state and open none.
    for argv in (["ping"], ["stop"], ["apps", "list"]):
        assert "session" not in await hello_of(*argv)


async def test_bad_session_variable_is_a_usage_error(
    ws_server: WsStart, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A DESKHAND_SESSION the daemon would refuse exits 2 before anything is sent."""
    monkeypatch.setenv("DESKHAND_SESSION", "no spaces please")
    code, received = await one_request(ws_server, "observe", "Calculator")
    assert code == 2 and received == []
    assert (
        "DESKHAND_SESSION='no spaces please' is not a usable session name"
        in capsys.readouterr().err
    )


async def test_unanswerable_question_is_left_to_the_daemon(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a terminal a question is not answered; the CLI says so and waits for the reply."""

    def asks(rid: int) -> list[Message]:
        question = {
            "kind": "question",
            "id": "q1",
            "request_id": rid,
            "question": "backend_approval",
            "text": "Allow?",
            "app": "Calculator",
            "choices": ["accept", "decline"],
        }
        return [
            {"type": "event", "event": question},
            error(rid, "approval_cancelled", "nobody answered", delivery="refused"),
        ]

    code, received = await one_request(
        ws_server, "observe", "Calculator", script=with_overrides(get_app_state=asks)
    )
    assert code == 1
    assert [r["op"] for r in received] == ["hello", "get_app_state"]
    err = capsys.readouterr().err
    assert "needs a person at a terminal" in err and "approval_cancelled: nobody answered" in err


async def test_action_timeout_says_outcome_unknown(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """No reply to an action in time: exit 3 (outcome unknown), and the message says to
    observe again."""
    script = with_overrides(click=[])
    assert (
        await one_request(ws_server, "--timeout", "0.3", "click", *A, "--index", "1", script=script)
    )[0] == 3
    err = capsys.readouterr().err
    assert "did not answer 'click' in time" in err and "may or may not have happened" in err


@pytest.mark.parametrize(
    ("data", "line", "want"),
    [
        (
            {"delivery": "delivered-ish"},
            "delivery: unknown: the reply named a delivery this deskhandctl does not know "
            "(delivered-ish); observe again before acting",
            3,
        ),
        ({"delivery": "refused"}, "delivery: refused: nothing was sent to the desktop", 1),
    ],
)
async def test_a_stated_delivery_off_the_desktop_is_read_like_any_other(
    ws_server: WsStart,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    data: dict[str, Any],
    line: str,
    want: int,
) -> None:
    """A command off the desktop whose error reply states a delivery shows it through the same
    reading as a desktop command: a value this client does not know is unknown (exit 3), not
    dropped."""
    person_confirms(monkeypatch, ["apps", "add", "X"])
    script = with_overrides(apps_add=lambda rid: [error(rid, "apps_file_invalid", "no", **data)])
    assert (await one_request(ws_server, "apps", "add", "X", script=script))[0] == want
    err = capsys.readouterr().err
    assert err.endswith(f"deskhandctl: apps_file_invalid: no\ndeskhandctl: {line}\n")
