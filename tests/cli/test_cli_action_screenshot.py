"""``--screenshot FILE`` on the action commands, against a real daemon on the simulated desktop.

The simulator sends a screenshot with every action's reply (``action_screenshots``, PNG with
``image_format: "png"``, JPEG by default). The file must be the whole picture, owner-only
(0600), put in place by a rename (no temporary file left beside it, an old file replaced as a
whole), never through a symbolic link; a reply without a picture writes nothing and exits 73
after printing the delivered action.
"""

from __future__ import annotations

import json
import stat
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from dhtest.clidaemon import CliDaemon, sim_desk

from deskhand_d.native.imagesize import image_size
from deskhand_d.programs.sim.apps.calculator import Calculator

__all__ = ["sim_desk"]

pytestmark = pytest.mark.slow
SCREENSHOT_NOT_SAVED = 73
PNG = {"preapproved": ["*"], "image_format": "png"}


def png_size(data: bytes) -> tuple[int, int]:
    """Check that ``data`` is a whole, valid PNG (signature, every chunk's CRC, IHDR first,
    IEND last, image data that inflates to exactly the rows the header announces); its size."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks, idat = 8, [], b""
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert zlib.crc32(kind + body) == crc, kind
        chunks.append(kind)
        idat += body if kind == b"IDAT" else b""
        at += 12 + length
    assert at == len(data) and chunks[0] == b"IHDR" and chunks[-1] == b"IEND"
    ihdr = data[16:29]
    width, height, depth, colour = struct.unpack(">IIBB", ihdr[:10])
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    row = 1 + (width * depth * channels + 7) // 8  # the filter byte, then the packed pixels
    assert len(zlib.decompress(idat)) == height * row
    return width, height


def private(path: Path) -> bool:
    st = path.lstat()
    return stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600


@pytest.mark.parametrize(
    "argv",
    [["click", "--index", "9"], ["press", "5"], ["type", "12+3"]],
    ids=["click", "press", "type"],
)
def test_an_action_writes_its_screenshot_owner_only(
    sim_desk: Any, tmp_path: Path, argv: list[str]
) -> None:
    """The reply's picture lands in FILE: a valid PNG of Calculator's window, mode 0600, no
    temporary file left; the human output says where, and the delivery line stays one."""
    d: CliDaemon = sim_desk(PNG)
    shot = tmp_path / "after.png"
    verb, *rest = argv
    state = d.observe("Calculator")
    done = d.run(verb, "--app", "Calculator", "--state", state, *rest, "--screenshot", str(shot))
    assert done.returncode == 0, done.stderr
    assert private(shot)
    data = shot.read_bytes()
    assert png_size(data) == (Calculator.width, Calculator.height)
    lines = done.stdout.splitlines()
    assert f"screenshot: saved to {shot} (image/png, {len(data)} bytes)" in lines
    assert [x for x in lines if x.startswith("delivery: ")] == ["delivery: dispatched"]
    assert lines[-1].startswith("state: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["after.png"]
    assert done.stderr == ""


def test_json_names_the_file_and_an_old_file_is_replaced_whole(
    sim_desk: Any, tmp_path: Path
) -> None:
    """--json shows the path where the base64 was; a file already at FILE (another mode,
    other bytes) is replaced by the new picture as a whole and ends up 0600."""
    d: CliDaemon = sim_desk()  # JPEG, as Sky sends
    shot = tmp_path / "after.jpg"
    shot.write_bytes(b"an older picture")
    shot.chmod(0o644)
    state = d.observe("Calculator")
    done = d.run(
        "--json", "press", "--app", "Calculator", "--state", state, "7", "--screenshot", str(shot)
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["screenshot"] == str(shot) and shown["screenshot_mime"] == "image/jpeg"
    assert shown["delivery"] == "dispatched" and "screenshot_error" not in shown
    data = shot.read_bytes()
    assert data[:2] == b"\xff\xd8" and data[-2:] == b"\xff\xd9"
    assert image_size(data) == (Calculator.width, Calculator.height)
    assert private(shot)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["after.jpg"]


def test_a_reply_without_a_screenshot_writes_nothing_and_exits_73(
    sim_desk: Any, tmp_path: Path
) -> None:
    """The backend sent no picture with the action: FILE is not created, stderr says so, the
    exit is 73; the action was delivered, and the output still says so once."""
    d: CliDaemon = sim_desk({"preapproved": ["*"], "action_screenshots": False})
    shot = tmp_path / "after.png"
    state = d.observe("Calculator")
    done = d.run(
        "click", "--app", "Calculator", "--state", state, "--index", "9", "--screenshot", str(shot)
    )
    assert done.returncode == SCREENSHOT_NOT_SAVED, done.stderr
    assert not shot.exists()
    assert done.stderr == (
        f"deskhandctl: the action's reply came without a screenshot, so {shot} was not "
        "written; `deskhandctl doctor` checks screenshot capture\n"
    )
    lines = done.stdout.splitlines()
    assert "screenshot: none came with this action's reply (see the error below)" in lines
    assert [x for x in lines if x.startswith("delivery: ")] == ["delivery: dispatched"]
    assert d.received("click") == 1  # delivered: not to be repeated for a picture
    as_json = d.run(
        "--json",
        "click",
        "--app",
        "Calculator",
        "--state",
        d.observe("Calculator"),
        "--index",
        "9",
        "--screenshot",
        str(shot),
    )
    assert as_json.returncode == SCREENSHOT_NOT_SAVED
    shown = json.loads(as_json.stdout)
    assert shown["screenshot"] is None and "without a screenshot" in shown["screenshot_error"]
    assert shown["delivery"] == "dispatched"
    assert not shot.exists()


def test_a_symlink_at_file_is_refused(sim_desk: Any, tmp_path: Path) -> None:
    """A symbolic link at FILE is neither followed nor replaced: exit 73, its target as it
    was; the action itself went through."""
    d: CliDaemon = sim_desk(PNG)
    target = tmp_path / "target"
    target.write_bytes(b"keep me")
    link = tmp_path / "after.png"
    link.symlink_to(target)
    state = d.observe("Calculator")
    done = d.run(
        "click", "--app", "Calculator", "--state", state, "--index", "9", "--screenshot", str(link)
    )
    assert done.returncode == SCREENSHOT_NOT_SAVED, done.stderr
    assert "symbolic link" in done.stderr
    assert link.is_symlink() and target.read_bytes() == b"keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["after.png", "target"]
    assert "delivery: dispatched" in done.stdout.splitlines()


def test_a_refused_action_writes_no_file(sim_desk: Any, tmp_path: Path) -> None:
    """An error reply has no screenshot to save: FILE stays absent; the exit code and the one
    delivery line are the refusal's."""
    d: CliDaemon = sim_desk(PNG)
    shot = tmp_path / "after.png"
    done = d.run(
        "click",
        "--app",
        "Calculator",
        "--state",
        "0" * 32,
        "--index",
        "9",
        "--screenshot",
        str(shot),
    )
    assert done.returncode == 1, done.stderr
    assert not shot.exists()
    assert done.stderr.splitlines()[-1] == (
        "deskhandctl: delivery: refused: nothing was sent to the desktop"
    )


def test_every_action_command_takes_screenshot() -> None:
    """The option is on every command that acts with a state id, it is never sent to the
    daemon, and docs/cli.md describes it."""
    from deskhandctl.cli.commands import request_fields
    from deskhandctl.cli.grammar import COMMANDS

    acting = [c for c in COMMANDS.values() if c.acts]
    assert len(acting) == 8
    for command in acting:
        option = command.options.get("--screenshot")
        assert option is not None and option.local, command.name
        fields = request_fields(command, {"app": "A", "state_id": "S", "screenshot": "/tmp/x"})
        assert fields == {"app": "A", "state_id": "S"}, command.name
    docs = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()
    assert "also takes `--screenshot FILE`" in docs
