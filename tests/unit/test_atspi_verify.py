"""The judgements around an action, on values: modal dialogs in the way, where the focus is,
what reading an element back means; the notes they become, and how the daemon reads them.

Real apps show each of these in ``tests/atspi/test_browsers.py`` and
``tests/atspi/test_app_lifecycle.py``; here every rule is pinned down case by case.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from deskhand_d import errors as E
from deskhand_d import surface
from deskhand_d.backends.mcpclient.info import CallResult
from deskhand_d.backends.mcpclient.results import Kind, classify, effect, shortfall
from deskhand_d.native.interpret import NOTE_CODES, raise_input_stopped
from deskhand_d.native.sessions import Session
from deskhand_d.programs.atspi import programs
from deskhand_d.programs.atspi.model import Node
from deskhand_d.programs.atspi.notes import Withheld, describe_exit
from deskhand_d.programs.atspi.render import render
from deskhand_d.programs.atspi.roles import Role, State
from deskhand_d.programs.atspi.verify import (
    Expectation,
    blocking_dialog,
    caret_at,
    focus_verdict,
    judge,
)

APP = ":1.42"
MODAL = 1 << State.MODAL


def node(path: str, role: int, name: str = "", *children: Node, states: int = 0) -> Node:
    return Node(ref=(APP, path), role=role, name=name, states=states, children=children)


def _two_surfaces(dialog_states: int) -> tuple[Node, Node]:
    dialog = node(
        "/d",
        Role.DIALOG,
        "Save changes?",
        node("/d/ok", Role.PUSH_BUTTON, "OK"),
        states=dialog_states,
    )
    window = node("/w", Role.FRAME, "Editor", node("/w/b", Role.PUSH_BUTTON, "Bold"))
    return dialog, window


def test_a_modal_dialog_blocks_the_window_behind_it_not_itself() -> None:
    dialog, window = _two_surfaces(MODAL)
    rendering = render([dialog, window])  # the dialog is listed first (it is in front)
    assert [n.name for n in rendering.nodes] == ["Save changes?", "OK", "Editor", "Bold"]
    assert blocking_dialog(rendering, 1) is None  # the dialog's own button
    assert blocking_dialog(rendering, 0) is None  # the dialog itself
    assert blocking_dialog(rendering, 3) == "Save changes?"  # behind it
    assert blocking_dialog(rendering, 2) == "Save changes?"


def test_a_dialog_that_is_not_modal_blocks_nothing() -> None:
    dialog, window = _two_surfaces(0)
    rendering = render([dialog, window])
    assert all(blocking_dialog(rendering, i) is None for i in range(4))


def test_a_popup_in_front_of_a_modal_dialog_is_not_blocked() -> None:
    popup = node("/m", Role.MENU, "", node("/m/1", Role.MENU_ITEM, "Copy"))
    dialog, window = _two_surfaces(MODAL)
    rendering = render([popup, dialog, window])
    assert blocking_dialog(rendering, 1) is None  # the menu, opened from the dialog
    assert blocking_dialog(rendering, 5) == "Save changes?"


def test_a_modal_dialog_inside_the_window_tree_blocks_its_siblings() -> None:
    inner = node("/w/d", Role.DIALOG, "", node("/w/d/ok", Role.PUSH_BUTTON, "OK"), states=MODAL)
    window = node("/w", Role.FRAME, "Editor", node("/w/b", Role.PUSH_BUTTON, "Bold"), inner)
    rendering = render([window])
    names = [n.name for n in rendering.nodes]
    assert blocking_dialog(rendering, names.index("Bold")) == "untitled dialog"
    assert blocking_dialog(rendering, names.index("OK")) is None
    assert blocking_dialog(rendering, 99) is None


@pytest.mark.parametrize(
    ("focus", "known", "verdict"),
    [
        ((APP, "/f"), True, "in_app"),
        ((":1.7", "/f"), True, "elsewhere"),
        (None, True, "unknown"),  # the last holder said it lost it; nobody says they have it
        (None, False, "unknown"),
        ((":1.7", "/f"), False, "unknown"),
    ],
)
def test_focus_verdict(focus: tuple[str, str] | None, known: bool, verdict: str) -> None:
    assert focus_verdict(focus, known, APP) == verdict


@pytest.mark.parametrize(
    ("expect", "after", "verdict"),
    [
        (Expectation((APP, "/e"), "value", "", wanted="Ada"), "Ada", "changed"),
        (Expectation((APP, "/e"), "value", "", wanted="Ada"), "", "unchanged"),
        (Expectation((APP, "/e"), "value", "1", wanted="42"), "42.5", "changed"),  # formatted
        (Expectation((APP, "/e"), "value", "x", wanted="x"), "x", "changed"),  # as asked
        (Expectation((APP, "/e"), "value", None, wanted="Ada"), "Ada", "unreadable"),
        (Expectation((APP, "/e"), "value", "", wanted="Ada"), None, "unreadable"),
        (Expectation((APP, "/e"), "text", "Hello"), "Hello world", "changed"),
        (Expectation((APP, "/e"), "text", "Hello"), "Hello", "unchanged"),
        (Expectation((APP, "/e"), "text", None), "Hello", "unreadable"),
        (Expectation((APP, "/e"), "selection", None, wanted="lazy"), "lazy", "changed"),
        (Expectation((APP, "/e"), "selection", None, wanted="lazy"), "", "unchanged"),
        (Expectation((APP, "/e"), "selection", None, wanted=caret_at(4)), caret_at(4), "changed"),
        (Expectation((APP, "/e"), "selection", None, wanted=caret_at(4)), caret_at(0), "unchanged"),
        (Expectation((APP, "/e"), "selection", None, wanted="lazy"), None, "unreadable"),
    ],
)
def test_judge(expect: Expectation, after: str | None, verdict: str) -> None:
    assert judge(expect, after) == verdict


def test_exit_words() -> None:
    assert describe_exit(None) == ""
    assert describe_exit(-11) == "signal 11 (SIGSEGV)"
    killed = subprocess.run([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    assert describe_exit(killed.returncode) == "signal 9 (SIGKILL)"
    pid = os.fork()
    if pid == 0:
        os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert describe_exit(status) == "status 3"
    pid = os.fork()
    if pid == 0:
        faulthandler.disable()  # pytest's handler would print a traceback for the signal
        signal.signal(signal.SIGSEGV, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGSEGV)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert describe_exit(status) == "signal 11 (SIGSEGV)"


def _result(note: dict[str, object]) -> dict[str, object]:
    return {
        "content": [{"type": "text", "text": "x"}],
        "isError": True,
        "_meta": {surface.DELIVERY_META: note},
    }


def test_the_backend_writes_notes_in_the_shape_the_daemon_reads() -> None:
    out = Withheld("gone", reason="app_exited", state="unknown", exit="status 1", during="acting")
    outcome = out.outcome()
    assert outcome.is_error
    note = outcome.meta[surface.DELIVERY_META]
    result = {"content": outcome.content, "isError": True, "_meta": outcome.meta}
    read = shortfall(result)
    assert read is not None and (read.state, read.reason, read.exit, read.during) == (
        "unknown",
        "app_exited",
        "status 1",
        "acting",
    )
    assert note["reason"] == "app_exited"


@pytest.mark.parametrize(
    ("note", "code", "delivery"),
    [
        (
            {
                "state": "refused",
                "reason": "app_exited",
                "exit": "signal 11 (SIGSEGV)",
                "during": "reading",
            },
            "app_exited",
            "refused",
        ),
        (
            {
                "state": "unknown",
                "reason": "app_exited",
                "exit": "",
                "during": "acting",
                "done": 3,
                "total": 9,
                "unit": "characters",
            },
            "app_exited",
            "unknown",
        ),
        (
            {"state": "refused", "reason": "not_accessible", "hint": "restart_chromium"},
            "app_not_accessible",
            "refused",
        ),
        ({"state": "refused", "reason": "focus_elsewhere"}, "focus_outside_app", "refused"),
        (
            {"state": "refused", "reason": "modal_dialog", "dialog": "About"},
            "blocked_by_dialog",
            "refused",
        ),
        (
            {"state": "dispatched", "reason": "no_effect", "what": "value"},
            "no_effect",
            "dispatched",
        ),
    ],
)
def test_each_note_becomes_its_error_with_its_delivery(
    note: dict[str, object], code: str, delivery: str
) -> None:
    """From the backend's result to the daemon's error: the code, the delivery, the words."""
    out = classify(_result(note))
    assert out.kind is Kind.INPUT_STOPPED and out.shortfall is not None
    assert NOTE_CODES[out.shortfall.reason] == code
    session = Session(session_id="s", name="t", mode="native")
    res = CallResult(
        output=out, approval_reason=None, approvals_asked=0, usable=True, elapsed_s=0.1
    )
    with pytest.raises(E.DeskhandError) as caught:
        raise_input_stopped(session, "FeatherPad", res)
    err = caught.value
    assert err.code == code
    assert err.reply_data()["delivery"] == delivery
    assert "'FeatherPad'" in err.message
    if note.get("exit"):
        assert str(note["exit"]) in err.message
    if note.get("dialog"):
        assert "'About'" in err.message
    if "done" in note:
        assert err.reply_data()["delivered"] == {"done": 3, "total": 9, "unit": "characters"}
        assert session.launch_banned == {"FeatherPad"}


def test_a_malformed_note_is_not_trusted() -> None:
    # dispatched only goes with no_effect, and no_effect only with dispatched
    assert shortfall(_result({"state": "dispatched", "reason": "app_exited"})) is None
    assert shortfall(_result({"state": "refused", "reason": "no_effect"})) is None
    assert shortfall(_result({"state": "sent", "reason": "x"})) is None
    long = shortfall(_result({"state": "refused", "reason": "modal_dialog", "dialog": "x" * 999}))
    assert long is not None and len(long.dialog) == 200


def test_effect_note_only_on_success() -> None:
    ok = {"content": [], "_meta": {surface.EFFECT_META: {"effect": "changed", "what": "value"}}}
    assert effect(ok) == ("changed", "value")
    assert classify(ok).effect == ("changed", "value")
    assert effect({"_meta": {surface.EFFECT_META: {"effect": "maybe"}}}) is None
    assert classify({**ok, "isError": True}).effect is None


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_launcher_script_counts_by_the_binary_it_starts(tmp_path: Path) -> None:
    """The packagers' conventions: a binary beside the script with the same stem, in a
    directory named after it, or one level above a bin/ script; nothing else."""
    (tmp_path / "program").mkdir()
    script = _script(tmp_path / "program" / "office", "#!/bin/sh\nexec ./office.bin\n")
    binary = _script(tmp_path / "program" / "office.bin", "\x7fELF")
    other = _script(tmp_path / "program" / "writer.bin", "\x7fELF")
    assert programs.runs_program(str(binary), str(script))
    assert not programs.runs_program(str(other), str(script))
    assert programs.runs_program(str(script), str(script))
    # an ELF program counts only as itself
    assert not programs.runs_program(str(binary), str(other))
    app = tmp_path / "share" / "app"
    (app / "bin").mkdir(parents=True)
    launcher = _script(app / "bin" / "app", "#!/bin/sh\nexec ../app\n")
    real = _script(app / "app", "\x7fELF")
    assert programs.binaries(str(launcher)) == (str(launcher), str(real))
    assert programs.runs_program(str(real), str(launcher))


def test_chromium_family_gets_its_switch(tmp_path: Path) -> None:
    app = tmp_path / "share" / "code"
    (app / "bin").mkdir(parents=True)
    launcher = _script(app / "bin" / "code", '#!/bin/sh\nexec ../code "$@"\n')
    _script(app / "code", "\x7fELF")
    plain = _script(tmp_path / "plain", "\x7fELF")
    argv = (str(launcher), "--new-window")
    assert programs.launch_argv(argv, str(launcher)) == argv  # no resources yet
    (app / "resources.pak").write_bytes(b"")
    assert programs.launch_argv(argv, str(launcher)) == (
        str(launcher),
        programs.CHROMIUM_A11Y_SWITCH,
        "--new-window",
    )
    switched = (str(launcher), programs.CHROMIUM_A11Y_SWITCH)
    assert programs.launch_argv(switched, str(launcher)) == switched  # not twice
    assert programs.launch_argv((str(plain),), str(plain)) == (str(plain),)
    assert not programs.started_with_switch(os.getpid())
