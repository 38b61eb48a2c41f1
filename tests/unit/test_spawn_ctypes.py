"""The posix_spawn path through ctypes (``deskhand_d/backends/mcpclient/spawn.py``), run for real.

The prototypes in ``spawn.SIGNATURES`` are read back against the platform's own ``<spawn.h>``
and ``<signal.h>``, and the flag values and object sizes against a probe compiled with the
system's C compiler (skipped where there are no headers or no compiler). The spawn itself runs
on Linux and macOS: pipes, working directory, a new session, default signal dispositions, the
exact environment and no stray descriptors. The disclaim attribute exists only on macOS; off
macOS the tests check that it is reported missing and never called. So does the lookup of a
child's responsible process, whose answer is judged by a pure function tested on values.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from deskhand_d.backends.mcpclient import spawn, transport

pytestmark = pytest.mark.skipif(not spawn.supported(), reason="posix_spawn path: macOS, Linux")


def _include_dir() -> Path | None:
    if sys.platform == "darwin":
        xcrun = shutil.which("xcrun")
        if xcrun is None:
            return None
        sdk = subprocess.run([xcrun, "--show-sdk-path"], capture_output=True, text=True)
        found = Path(sdk.stdout.strip()) / "usr" / "include"
        return found if sdk.returncode == 0 and found.is_dir() else None
    found = Path("/usr/include")
    return found if (found / "spawn.h").exists() else None


_QUALIFIERS = re.compile(
    r"\b(?:__restrict__|__restrict_arr|__restrict|restrict|_Nullable|_Nonnull|__nonnull)\b"
)
_TYPE_WORDS = {
    "const",
    "char",
    "int",
    "short",
    "long",
    "unsigned",
    "void",
    "pid_t",
    "sigset_t",
    "posix_spawnattr_t",
    "posix_spawn_file_actions_t",
}


def _normalise(param: str) -> str:
    """A C parameter as ``SIGNATURES`` spells it: no qualifiers, no name, ``[]`` for arrays."""
    text = re.sub(r"\[[^\]]*\]", "[]", _QUALIFIERS.sub(" ", param))
    tokens = re.findall(r"[A-Za-z_]\w*|\*|\[\]", text)
    names = [i for i, t in enumerate(tokens) if re.fullmatch(r"[A-Za-z_]\w*", t)]
    if names and tokens[names[-1]] not in _TYPE_WORDS:
        del tokens[names[-1]]  # the parameter's name
    out = " ".join(tokens).replace("short int", "short")
    return out.replace("* const", "*const")  # "char *const []", as the headers write it


def _prototype(headers: str, name: str) -> tuple[str, tuple[str, ...]] | None:
    match = re.search(rf"\b{name}\s*\(", headers)
    if match is None:
        return None
    depth, at = 1, match.end()
    while depth:
        depth += {"(": 1, ")": -1}.get(headers[at], 0)
        at += 1
    inner = headers[match.end() : at - 1]
    before = re.split(r"[;/}]|\n#", headers[max(0, match.start() - 80) : match.start()])[-1]
    ret = " ".join(t for t in before.split() if t not in ("extern", "__BEGIN_DECLS"))
    params = tuple(_normalise(p) for p in inner.split(","))
    return ret, params


def test_prototypes_match_the_platform_headers() -> None:
    """Every public function's return and parameter types are the ones the headers declare;
    the private responsibility functions have no header (only their lookup is tested, below)."""
    include = _include_dir()
    if include is None:
        pytest.skip("no C headers here (on macOS: install the Command Line Tools)")
    headers = (include / "spawn.h").read_text() + (include / "signal.h").read_text()
    if sys.platform == "darwin":
        headers += (include / "sys" / "signal.h").read_text()
    checked = []
    for name, declared in spawn.SIGNATURES.items():
        if name in spawn.PRIVATE:
            continue
        found = _prototype(headers, name)
        if found is None:
            assert name in spawn.OPTIONAL, f"{name} is required but not in the headers"
            continue
        assert found == declared, name
        checked.append(name)
    assert "posix_spawn" in checked and "posix_spawnattr_setflags" in checked
    assert len(checked) >= 10


_PROBE = r"""
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#ifndef POSIX_SPAWN_CLOEXEC_DEFAULT
#define POSIX_SPAWN_CLOEXEC_DEFAULT 0
#endif
int main(void) {
    printf("{\"attr\": %zu, \"actions\": %zu, \"sigset\": %zu, \"pid\": %zu, "
           "\"setsigdef\": %d, \"setsigmask\": %d, \"setsid\": %d, \"cloexec\": %d}\n",
           sizeof(posix_spawnattr_t), sizeof(posix_spawn_file_actions_t), sizeof(sigset_t),
           sizeof(pid_t), POSIX_SPAWN_SETSIGDEF, POSIX_SPAWN_SETSIGMASK, POSIX_SPAWN_SETSID,
           POSIX_SPAWN_CLOEXEC_DEFAULT);
    return 0;
}
"""


def test_flags_and_sizes_match_a_compiled_probe(tmp_path: Path) -> None:
    """The flag values are the headers' and the opaque objects fit in the room given them."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None or _include_dir() is None:
        pytest.skip("no C compiler or headers here")
    source = tmp_path / "probe.c"
    source.write_text(_PROBE)
    built = subprocess.run([cc, str(source), "-o", str(tmp_path / "probe")], capture_output=True)
    assert built.returncode == 0, built.stderr
    facts = json.loads(subprocess.run([str(tmp_path / "probe")], capture_output=True).stdout)
    assert max(facts["attr"], facts["actions"], facts["sigset"]) <= spawn.OPAQUE_BYTES
    assert facts["pid"] == 4  # spawn.ctype maps pid_t * to a pointer to a 32-bit int
    assert facts["setsigdef"] == spawn.POSIX_SPAWN_SETSIGDEF
    assert facts["setsigmask"] == spawn.POSIX_SPAWN_SETSIGMASK
    assert facts["setsid"] == spawn.POSIX_SPAWN_SETSID
    assert facts["cloexec"] == spawn.POSIX_SPAWN_CLOEXEC_DEFAULT


_CHILD = """
import json, os, signal, sys
fds = sorted(int(f) for f in os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd"))
line = sys.stdin.readline()
sys.stderr.write("to stderr\\n")
print(json.dumps({
    "cwd": os.getcwd(),
    "own_session": os.getsid(0) == os.getpid(),
    "env": dict(os.environ),
    "fds": fds,
    "line": line,
}))
"""


async def _read_all(stream: trio.abc.ReceiveStream | None) -> bytes:
    assert stream is not None
    out = b""
    while chunk := await stream.receive_some(65536):
        out += chunk
    return out


def test_spawn_runs_a_real_child(tmp_path: Path) -> None:
    """Pipes, cwd, a new session, SIGPIPE back to default (Python ignores it), exactly the
    environment given, and no descriptor beyond the three (not even an inheritable one)."""
    leak_r, leak_w = os.pipe()
    os.set_inheritable(leak_w, True)

    async def main() -> tuple[int, bytes, bytes, str]:
        env = {"ONLY": "this", "PATH": "/usr/bin:/bin"}
        started = spawn.spawn(
            [sys.executable, "-c", _CHILD], env, str(tmp_path), disclaim=sys.platform != "darwin"
        )
        proc = started.process
        assert proc.stdin is not None
        await proc.stdin.send_all(b"hello\n")
        await proc.stdin.aclose()
        out, err = await _read_all(proc.stdout), await _read_all(proc.stderr)
        code = await proc.wait()
        return code, out, err, started.responsibility

    try:
        code, out, err, responsibility = trio.run(main)
    finally:
        os.close(leak_r)
        os.close(leak_w)
    assert code == 0, err
    seen = json.loads(out)
    assert seen["line"] == "hello\n" and err == b"to stderr\n"
    assert seen["cwd"] == os.path.realpath(tmp_path)
    assert seen["own_session"] is True
    assert {
        k: v for k, v in seen["env"].items() if k not in ("LC_CTYPE", "__CF_USER_TEXT_ENCODING")
    } == {
        "ONLY": "this",
        "PATH": "/usr/bin:/bin",
    }
    assert seen["fds"][:3] == [0, 1, 2] and leak_w not in seen["fds"]
    assert len(seen["fds"]) <= 4  # 0-2 and the directory listing's own descriptor
    if sys.platform != "darwin":
        assert responsibility == (
            f"not disclaimed: this system ({sys.platform}) has no "
            "responsibility_spawnattrs_setdisclaim; not checked: this system "
            f"({sys.platform}) has no responsibility_get_pid_responsible_for_pid"
        )


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_ignored_signals_are_reset() -> None:
    """Python ignores SIGPIPE and an ignored signal survives exec: the child gets it back at
    its default (a Python child would ignore it again itself, so cat reports the kernel's
    view)."""
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN  # the parent's, inherited

    async def main() -> bytes:
        proc = spawn.spawn(["/bin/cat", "/proc/self/status"], {}, None, disclaim=False).process
        out = await _read_all(proc.stdout)
        await proc.wait()
        return out

    ignored = next(ln for ln in trio.run(main).decode().splitlines() if ln.startswith("SigIgn:"))
    assert int(ignored.split()[1], 16) & (1 << (signal.SIGPIPE - 1)) == 0
    unreset = subprocess.run(
        ["/bin/cat", "/proc/self/status"], capture_output=True, text=True, restore_signals=False
    ).stdout
    line = next(ln for ln in unreset.splitlines() if ln.startswith("SigIgn:"))
    assert int(line.split()[1], 16) & (1 << (signal.SIGPIPE - 1))  # the check can fail


def test_exit_statuses_and_signals() -> None:
    """A SIGKILL reads as -9, like trio.Process says it (doctor's launch-constraint clue)."""

    async def main() -> tuple[int, int]:
        killed = spawn.spawn(["/bin/sh", "-c", "kill -9 $$"], {}, None, disclaim=False).process
        plain = spawn.spawn(["/bin/sh", "-c", "exit 134"], {}, None, disclaim=False).process
        return await killed.wait(), await plain.wait()

    assert trio.run(main) == (-9, 134)


def test_a_missing_executable_is_an_oserror_and_leaks_nothing(tmp_path: Path) -> None:
    before = len(os.listdir("/dev/fd"))
    with pytest.raises(OSError) as caught:
        spawn.spawn([str(tmp_path / "nothing")], {}, None, disclaim=False)
    assert caught.value.errno == 2
    assert len(os.listdir("/dev/fd")) == before


def test_the_transport_uses_the_ctypes_path_when_asked() -> None:
    """A backend spawned with ``disclaim`` goes through posix_spawn and says what became of
    responsibility; the others keep trio's open_process."""

    async def main() -> tuple[str, str, bool]:
        asked = await transport.open_process(["/bin/cat"], env={}, cwd=None, disclaim=True)
        plain = await transport.open_process(["/bin/cat"], env={}, cwd=None)
        kinds = isinstance(asked.process, spawn.SpawnedProcess)
        await asked.aclose()
        await plain.aclose()
        return asked.responsibility, plain.responsibility, kinds

    asked, plain, through_ctypes = trio.run(main)
    assert through_ctypes and plain == ""
    assert asked.startswith(("disclaimed", "not disclaimed", "unconfirmed"))


@pytest.mark.skipif(sys.platform == "darwin", reason="off macOS only")
def test_no_disclaim_attribute_off_macos() -> None:
    """The private symbol is looked up, found missing, and never called."""
    assert spawn.disclaim_available() is False


@pytest.mark.skipif(sys.platform == "darwin", reason="off macOS only")
def test_no_responsibility_lookup_off_macos() -> None:
    """The private lookup is looked up, found missing, and answers None (never called)."""
    assert spawn._libc().functions[spawn.RESPONSIBLE_SYMBOL] is None
    assert spawn.responsible_pid(os.getpid()) is None


def test_judging_the_answer_about_responsibility() -> None:
    """The child itself: disclaimed. Deskhand, or whoever is responsible for Deskhand: not.
    No lookup, or no answer: not checked. And how doctor's line reads each way."""
    judge = spawn.judge_responsibility
    yes = judge(900, child=900, daemon=100, daemon_responsible=50)
    assert yes == spawn.Judgement(
        True, "macOS counts the jump host (pid 900) as its own responsible process"
    )
    ours = judge(100, child=900, daemon=100, daemon_responsible=50)
    assert ours.disclaimed is False
    assert (
        ours.detail == "macOS counts Deskhand (pid 100) as responsible for the jump host (pid 900)"
    )
    terminal = judge(50, child=900, daemon=100, daemon_responsible=50)
    assert terminal.disclaimed is False and "responsible for Deskhand (pid 50)" in terminal.detail
    other = judge(77, child=900, daemon=100)
    assert other.disclaimed is False and "another process (pid 77)" in other.detail
    unsaid = judge(-1, child=900, daemon=100)
    assert unsaid.disclaimed is None and unsaid.detail.startswith("not checked: macOS did not")
    absent = judge(None, child=900, daemon=100, platform="darwin")
    assert absent == spawn.Judgement(
        None, "not checked: this macOS has no responsibility_get_pid_responsible_for_pid"
    )

    text = spawn.responsibility_text
    assert text("", yes).startswith("disclaimed: macOS counts the jump host (pid 900)")
    assert text("", ours) == (
        "not disclaimed: the spawn attribute was accepted, but macOS counts Deskhand (pid 100) "
        "as responsible for the jump host (pid 900)"
    )
    assert text("", absent).startswith("unconfirmed: the spawn attribute was accepted; not checked")
    assert text("this macOS has no x", absent).startswith("not disclaimed: this macOS has no x; ")


@pytest.mark.skipif(sys.platform != "darwin", reason="macOS only: not run on Linux CI")
def test_disclaim_on_macos() -> None:
    """On macOS 10.14+ the attribute exists, the child is spawned with it, and macOS then
    names the child as its own responsible process."""
    assert spawn.disclaim_available()

    async def main() -> tuple[int, str]:
        started = spawn.spawn(["/bin/cat"], {}, None, disclaim=True)  # alive until stdin ends
        proc = started.process
        assert proc.stdin is not None
        await proc.stdin.aclose()
        await proc.wait()
        return proc.pid, started.responsibility

    pid, responsibility = trio.run(main)
    assert responsibility == (
        f"disclaimed: macOS counts the jump host (pid {pid}) as its own responsible process"
    )
