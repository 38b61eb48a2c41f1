"""Every shape of ``codex sandbox`` in circulation starts Sky (issue 25 §2), through a real
daemon with the fake ``codex`` playing each shape and the fake Sky client.

For each shape: ``doctor --backend sky`` (a throwaway start from a daemon that serves the
simulator) and then a real start (a daemon whose own backend is Sky, answering ``list_apps``
for a client). The codex's help is read once per codex build: the second daemon finds the
answer in the state directory; a codex whose modification time changed is asked again; a codex
that cannot be asked is started with the spellings used before, and asked again next time.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest import skyfake
from dhtest.daemon import DaemonProc, spawn_tracked, tracked_root
from dhtest.desk import open_client

from deskhand_d.backends import codexprobe

QUESTIONS = [["--version"], ["sandbox", "--help"]]


@pytest.fixture
def root() -> Iterator[Path]:
    with tracked_root() as path:
        yield path


def _start(root: Path, fake: skyfake.SkyFake, backend: str, **extra: str) -> DaemonProc:
    return spawn_tracked(root, {"DESKHAND_BACKEND": backend, **fake.env, **extra})


def _list_apps(d: DaemonProc) -> dict[str, object]:
    c = open_client(d.socket, "shapes", answers=False, name="test")
    try:
        reply: dict[str, object] = c.call("list_apps")
    finally:
        c.close()
    return reply


def _tail(fake: skyfake.SkyFake) -> list[str]:
    return ["--", str(fake.client), "mcp"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "options", "attempts"),
    [
        (
            "needs_p",
            ["--permissions-profile", ":danger-full-access", "--allow-unix-socket", "IPC"],
            [("permissions_profile", "ok")],
        ),
        ("long_profile", ["--permissions-profile", ":danger-full-access"],
         [("permissions_profile", "ok")]),
        ("sandbox_macos", ["macos", "--config", 'sandbox_mode="danger-full-access"'],
         [("config_override", "ok")]),
        ("ignores_c", ["--sandbox-state-json", "STATE"],
         [("config_override", "refused"), ("sandbox_state", "ok")]),
    ],
)  # fmt: skip
def test_each_shape_starts_sky_through_doctor_and_for_real(
    root: Path, mode: str, options: list[str], attempts: list[tuple[str, str]]
) -> None:
    """The command line follows the codex's own help: long option names, the subcommand of
    its shape, the unix-socket allowance only where offered, `--` before the client; a recipe
    whose option it lacks is never tried. Doctor proves the action path, then a daemon whose
    backend is Sky answers list_apps, without asking the codex again."""
    fake = skyfake.install(root, codex_mode=mode)
    d = _start(root, fake, "sim")
    status, result = skyfake.doctor(d)
    assert status == 0, result
    assert result["probe"]["status"] == "ok" and result["findings"] == []
    assert [(a["recipe"], a["outcome"]) for a in result["attempts"]] == attempts
    assert "notice" not in result or "could not tell" not in result["notice"]
    argv = fake.client_starts()[-1]
    want = [str(fake.codex), "sandbox", *options, *_tail(fake)]
    want = [str(fake.ipc) if w == "IPC" else w for w in want]
    if "STATE" in want:
        assert argv[3].startswith('{"permissionProfile"'), argv
        want[want.index("STATE")] = argv[3]
    assert argv == want
    assert all("-P" not in argv for argv in fake.client_starts())
    questions = QUESTIONS + ([["sandbox", "macos", "--help"]] if mode == "sandbox_macos" else [])
    assert fake.help_reads() == questions
    assert '"event": "backend.codex_shape"' in d.log_text()
    assert d.stop() == 0

    own = _start(root, fake, "sky")
    reply = _list_apps(own)
    assert reply["type"] == "result", reply
    assert fake.client_starts()[-1] == want
    assert fake.help_reads() == questions  # the answer came from the cache
    assert '"origin": "cached"' in own.log_text()
    assert own.stop() == 0


@pytest.mark.slow
def test_the_answer_is_kept_per_codex_build(root: Path) -> None:
    """The help is read at the first start only; the cache is an owner-only file keyed by the
    codex's path, modification time and size; a new modification time reads it again."""
    fake = skyfake.install(root, codex_mode="long_profile")
    d = _start(root, fake, "sim")
    for _ in range(2):
        status, result = skyfake.doctor(d)
        assert status == 0, result
    assert fake.help_reads() == QUESTIONS
    cache = root / "state" / "deskhand" / codexprobe.CACHE_NAME
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert str(fake.codex) in cache.read_text()
    st = fake.codex.stat()
    os.utime(fake.codex, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    status, result = skyfake.doctor(d)
    assert status == 0, result
    assert fake.help_reads() == QUESTIONS * 2
    status, result = skyfake.doctor(d)
    assert status == 0 and fake.help_reads() == QUESTIONS * 2
    assert d.stop() == 0


@pytest.mark.slow
def test_a_codex_that_cannot_be_asked_gets_the_old_spellings(root: Path) -> None:
    """`codex sandbox --help` fails: doctor says so in its note, the predecessor's spellings
    are tried as they are (here the first works), and nothing is cached, so the next start
    asks again."""
    fake = skyfake.install(root, codex_mode="needs_p")
    d = _start(root, fake, "sim", FAKE_CODEX_HELP="fails")
    status, result = skyfake.doctor(d)
    assert status == 0, result
    assert "could not tell which command lines this codex accepts" in result["notice"]
    assert "`codex sandbox --help` ended with status 1" in result["notice"]
    assert fake.client_starts()[-1] == [
        str(fake.codex), "sandbox", "-P", ":danger-full-access",
        "--allow-unix-socket", str(fake.ipc), *_tail(fake),
    ]  # fmt: skip
    status, result = skyfake.doctor(d)
    assert status == 0, result
    assert fake.help_reads() == QUESTIONS * 2
    assert not (root / "state" / "deskhand" / codexprobe.CACHE_NAME).exists()
    assert d.stop() == 0
