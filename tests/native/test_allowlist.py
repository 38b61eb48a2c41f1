"""The app-name rule, the effective allowlist, and the apps.json store (real files, real processes)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from deskhand_d import paths
from deskhand_d.errors import AppsFileError, BadRequest
from deskhand_d.native.allowlist import (
    MAX_APPS,
    MAX_FILE_BYTES,
    AddResult,
    AppsFile,
    default_apps_path,
    effective_allowlist,
    is_allowed,
    validate_app_name,
)

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, doc: object, mode: int = 0o600) -> None:
    if isinstance(doc, bytes):
        path.write_bytes(doc)
    else:
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    os.chmod(path, mode)


def _reason(excinfo: pytest.ExceptionInfo[AppsFileError]) -> str:
    return str(excinfo.value.data["reason"])


# -- the name rule --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("a" * 201, "too_long"),
        ("😀" * 101, "too_long"),  # 202 UTF-16 code units, as the predecessor counted
        ("Calc\x00", "control"),
        ("\tCalculator", "control"),  # the raw value is checked, before trimming
        ("Calculator\n", "control"),
        ("Calc\u200bulator", "control"),  # zero-width space, Cf
        ("\ufeffCalculator", "control"),  # byte-order mark, Cf
        ("Calc\u202eulator", "control"),  # right-to-left override, Cf
        ("Calc\udc80", "control"),  # lone surrogate from undecodable argv bytes
        ("Calculator,Safari", "pattern"),
        ("*", "pattern"),
        ("Calc?", "pattern"),
        ("[Cc]alculator", "pattern"),
        ("Calc]", "pattern"),
        ("{Calculator}", "pattern"),
        ("--all", "option"),
        ("  --help", "option"),
        ("all", "bulk"),
        ("ALL", "bulk"),
        (" All Apps ", "bulk"),
        ("全部", "bulk"),
        ("所有", "bulk"),
        ("所有应用", "bulk"),
        ("全部应用", "bulk"),
        ("/Applications/Calculator", "path"),
        ("/Applications/Calculator.APP", "path"),
        ("/Applications/Calculator.app/Contents/MacOS/Calculator", "path"),
        ("/", "path"),
    ],
)
def test_rejected_names(value: str, rule: str) -> None:
    """Each class of bad name is refused as bad_request, naming the rule it broke."""
    with pytest.raises(BadRequest) as excinfo:
        validate_app_name(value)
    assert excinfo.value.code == "bad_request"
    assert excinfo.value.data == {"rule": rule}


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("Calculator", "Calculator"),
        ("  Calculator  ", "Calculator"),
        ("\u3000微信\u3000", "微信"),  # ideographic spaces are trimmed like JS trim()
        ("Wechat Devtools", "Wechat Devtools"),
        ("计算器", "计算器"),
        ("com.apple.calculator", "com.apple.calculator"),
        ("com.tencent.xinWeChat", "com.tencent.xinWeChat"),
        ("/Applications/Calculator.app", "/Applications/Calculator.app"),
        ("/Applications/Calculator.app/", "/Applications/Calculator.app/"),
        ("/Applications/My Tools/Foo Bar.app", "/Applications/My Tools/Foo Bar.app"),
        ("a" * 200, "a" * 200),
        ("😀" * 100, "😀" * 100),
        ("-x", "-x"),
        ("Allways", "Allways"),
        ("all in one", "all in one"),
        ("Calculator (beta)", "Calculator (beta)"),
    ],
)
def test_accepted_names(value: str, stored: str) -> None:
    """Names, bundle ids, .app paths and CJK names pass, trimmed."""
    assert validate_app_name(value) == stored


# -- the effective list ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "env", "granted", "expected"),
    [
        ([], {}, [], ["Calculator"]),
        (["TextEdit"], {}, [], ["TextEdit"]),
        (
            ["TextEdit"],
            {"JEV_CUA_ALLOWED_APPS": "Safari"},
            [],
            ["Safari"],
        ),
        (
            ["TextEdit"],
            {"DESKHAND_ALLOWED_APPS": " Notes , ,Mail,", "JEV_CUA_ALLOWED_APPS": "Safari"},
            [],
            ["Notes", "Mail"],
        ),
        (
            ["TextEdit"],
            {"DESKHAND_ALLOWED_APPS": " , ", "JEV_CUA_ALLOWED_APPS": "Safari"},
            [],
            ["Safari"],
        ),
        (["TextEdit"], {"DESKHAND_ALLOWED_APPS": ""}, [], ["TextEdit"]),
        ([" ", ""], {}, [], ["Calculator"]),
        (
            [],
            {"DESKHAND_ALLOWED_APPS": "Notes,Calculator,Notes"},
            ["Calculator", "微信", "Notes", "Calendar"],
            ["Notes", "Calculator", "微信", "Calendar"],
        ),
        ([], {}, ["Calendar"], ["Calculator", "Calendar"]),
    ],
)
def test_effective_allowlist_precedence(
    config: list[str], env: dict[str, str], granted: list[str], expected: list[str]
) -> None:
    """DESKHAND_ALLOWED_APPS > JEV_CUA_ALLOWED_APPS > config > Calculator, then grants unioned."""
    assert effective_allowlist(config, env, granted) == expected


@pytest.mark.parametrize(
    ("app", "allowlist", "allowed"),
    [
        ("Calculator", ["Calculator"], True),
        ("  Calculator ", ["Calculator"], True),
        ("calculator", ["Calculator"], True),
        ("COM.APPLE.CALCULATOR", ["com.apple.calculator"], True),
        ("/Applications/Calculator.app/", ["/Applications/Calculator.app"], True),
        ("/Applications/Calculator.app", ["/Applications/Calculator.app/"], True),
        ("/applications/calculator.app", ["/Applications/Calculator.app"], False),
        ("Calc", ["Calculator"], False),
        ("Calculator Pro", ["Calculator"], False),
        ("Calculator", ["*"], False),
        ("*", ["*"], False),
        ("all", ["all", "Calculator"], False),
        ("Calculator,Safari", ["Calculator,Safari"], False),
        ("Safari", [], False),
    ],
)
def test_is_allowed(app: str, allowlist: list[str], allowed: bool) -> None:
    """Whole-entry match only; names case-insensitive, paths exact; patterns never match."""
    assert is_allowed(app, allowlist) is allowed


def test_default_path_is_beside_the_config() -> None:
    """apps.json lives in the config directory."""
    env = {"HOME": "/home/someone", "XDG_CONFIG_HOME": "/home/someone/.cfg"}
    assert default_apps_path(env) == paths.config_dir(env) / "apps.json"


# -- the store ------------------------------------------------------------------------------


def test_missing_file_means_no_grants(tmp_path: Path) -> None:
    """Reading a file that does not exist gives an empty list and creates nothing."""
    assert AppsFile(tmp_path / "apps.json").read() == []
    assert list(tmp_path.iterdir()) == []


def test_round_trip_and_format(tmp_path: Path) -> None:
    """add() creates a private directory and an exact pretty-printed 0600 file read() returns."""
    path = tmp_path / "cfg" / "deskhand" / "apps.json"
    store = AppsFile(path)
    assert store.add("  Calculator ") == AddResult(added=True, app="Calculator", path=str(path))
    assert store.add("微信") == AddResult(added=True, app="微信", path=str(path))
    assert store.read() == ["Calculator", "微信"]
    expected = '{\n  "version": 1,\n  "apps": [\n    "Calculator",\n    "微信"\n  ]\n}\n'
    assert path.read_text(encoding="utf-8") == expected
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == ["apps.json", "apps.json.lock"]


def test_file_is_0600_even_under_a_loose_umask(tmp_path: Path) -> None:
    """The written file is exactly 0600 whatever the process umask."""
    old = os.umask(0o000)
    try:
        AppsFile(tmp_path / "apps.json").add("Calculator")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "apps.json").stat().st_mode) == 0o600


def test_duplicate_add_leaves_the_file_untouched(tmp_path: Path) -> None:
    """Adding an app that is already granted returns added=False; inode and mtime unchanged."""
    path = tmp_path / "apps.json"
    store = AppsFile(path)
    store.add("Calculator")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.stat()
    assert store.add(" Calculator") == AddResult(added=False, app="Calculator", path=str(path))
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, 1_000_000_000)


def test_duplicates_in_the_file_collapse(tmp_path: Path) -> None:
    """Repeated entries in a hand-edited file are read once, in first-seen order."""
    path = tmp_path / "apps.json"
    _write(path, {"version": 1, "apps": ["Notes", "Calculator", "Notes"]})
    assert AppsFile(path).read() == ["Notes", "Calculator"]


def test_symlink_is_refused(tmp_path: Path) -> None:
    """A symlink at the path is never followed, even to a valid private file."""
    real = tmp_path / "real.json"
    _write(real, {"version": 1, "apps": ["Calculator"]})
    link = tmp_path / "apps.json"
    link.symlink_to(real)
    with pytest.raises(AppsFileError) as excinfo:
        AppsFile(link).read()
    assert _reason(excinfo) == "unsafe"
    assert "symbolic link" in excinfo.value.message
    with pytest.raises(AppsFileError):
        AppsFile(link).add("Safari")
    assert json.loads(real.read_text()) == {"version": 1, "apps": ["Calculator"]}


def test_symlinked_lock_is_refused(tmp_path: Path) -> None:
    """A symlink planted at the lock path makes add() fail without creating its target."""
    (tmp_path / "apps.json.lock").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(AppsFileError):
        AppsFile(tmp_path / "apps.json").add("Calculator")
    assert not (tmp_path / "elsewhere").exists()
    assert not (tmp_path / "apps.json").exists()


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_loose_permissions_are_refused(tmp_path: Path, mode: int) -> None:
    """A file with any group/other bit is refused and left as it was."""
    path = tmp_path / "apps.json"
    _write(path, {"version": 1, "apps": ["Calculator"]}, mode)
    before = path.read_bytes()
    with pytest.raises(AppsFileError) as excinfo:
        AppsFile(path).add("Safari")
    assert _reason(excinfo) == "unsafe"
    assert "chmod 600" in excinfo.value.message
    assert path.read_bytes() == before
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_directory_and_fifo_are_refused(tmp_path: Path) -> None:
    """A directory or a FIFO at the path is refused (and opening the FIFO does not hang)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "apps.json").mkdir(mode=0o700)
    os.mkfifo(tmp_path / "apps.json", 0o600)
    for path in (tmp_path / "d" / "apps.json", tmp_path / "apps.json"):
        with pytest.raises(AppsFileError) as excinfo:
            AppsFile(path).read()
        assert _reason(excinfo) == "unsafe"


def test_oversized_file_is_refused(tmp_path: Path) -> None:
    """A file over 16 KiB is refused before it is parsed."""
    path = tmp_path / "apps.json"
    _write(path, json.dumps({"version": 1, "apps": ["Calculator"]}) + " " * MAX_FILE_BYTES)
    with pytest.raises(AppsFileError) as excinfo:
        AppsFile(path).read()
    assert _reason(excinfo) == "unsafe"
    assert "16384" in excinfo.value.message


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '{"version": 1, "apps": ["Calculator"]',
        b'{"version": 1, "apps": ["\xff"]}',  # not UTF-8
        "[" * 16_000,  # nesting deep enough to hit the recursion limit
        "",
    ],
)
def test_bad_json_is_refused(tmp_path: Path, content: str | bytes) -> None:
    """Unparseable content is corrupt; add() then changes nothing."""
    path = tmp_path / "apps.json"
    _write(path, content)
    before = path.read_bytes()
    with pytest.raises(AppsFileError) as excinfo:
        AppsFile(path).add("Safari")
    assert _reason(excinfo) == "corrupt"
    assert "Nothing was changed" in excinfo.value.message
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    "doc",
    [
        [],
        ["Calculator"],
        {"apps": ["Calculator"]},
        {"version": 1},
        {"version": 2, "apps": []},
        {"version": "1", "apps": []},
        {"version": True, "apps": []},
        {"version": 1, "apps": "Calculator"},
        {"version": 1, "apps": {"Calculator": True}},
        {"version": 1, "apps": [], "all": True},
        {"version": 1, "apps": [], "comment": "hand edited"},
        {"version": 1, "apps": [f"App {n}" for n in range(MAX_APPS + 1)]},
    ],
)
def test_bad_shape_is_refused(tmp_path: Path, doc: object) -> None:
    """Anything but {"version": 1, "apps": [...]} with at most 100 apps is corrupt."""
    path = tmp_path / "apps.json"
    _write(path, doc)
    with pytest.raises(AppsFileError) as excinfo:
        AppsFile(path).read()
    assert _reason(excinfo) == "corrupt"


@pytest.mark.parametrize("entry", [" Calculator", "Calculator\n", "*", "all", "", 7, None, ["X"]])
def test_bad_entry_is_refused(tmp_path: Path, entry: object) -> None:
    """Each entry must be a string equal to its own validated form."""
    path = tmp_path / "apps.json"
    _write(path, {"version": 1, "apps": ["Notes", entry]})
    with pytest.raises(AppsFileError) as excinfo:
        AppsFile(path).read()
    assert _reason(excinfo) == "corrupt"
    assert "apps[1]" in excinfo.value.message


def test_count_limit(tmp_path: Path) -> None:
    """At 100 apps a new app is refused with the file unchanged; a present one is still fine."""
    path = tmp_path / "apps.json"
    store = AppsFile(path)
    for n in range(MAX_APPS):
        store.add(f"App {n}")
    before = path.read_bytes()
    with pytest.raises(AppsFileError) as excinfo:
        store.add("One Too Many")
    assert _reason(excinfo) == "limit"
    assert path.read_bytes() == before
    assert store.add("App 42").added is False
    assert len(store.read()) == MAX_APPS


def test_size_limit(tmp_path: Path) -> None:
    """An add that would grow the file past 16 KiB is refused with the file unchanged."""
    path = tmp_path / "apps.json"
    apps: list[str] = []
    while True:
        candidate = [*apps, f"{len(apps):03d}" + "x" * 197]
        body = json.dumps({"version": 1, "apps": candidate}, indent=2) + "\n"
        if len(body.encode()) > MAX_FILE_BYTES:
            break
        apps = candidate
    assert len(apps) < MAX_APPS
    _write(path, {"version": 1, "apps": apps})
    before = path.read_bytes()
    with pytest.raises(AppsFileError) as excinfo:
        AppsFile(path).add("y" * 200)
    assert _reason(excinfo) == "limit"
    assert path.read_bytes() == before


def test_bad_name_is_bad_request_and_touches_nothing(tmp_path: Path) -> None:
    """A bad name fails validation before the directory, lock or file is touched."""
    path = tmp_path / "new" / "apps.json"
    with pytest.raises(BadRequest):
        AppsFile(path).add("all apps")
    assert not path.parent.exists()


# -- locking --------------------------------------------------------------------------------


def _hold_lock(path: Path) -> int:
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def test_busy_lock_times_out(tmp_path: Path) -> None:
    """If another writer keeps the lock past the bound, add() gives up and changes nothing."""
    path = tmp_path / "apps.json"
    fd = _hold_lock(path)
    try:
        start = time.monotonic()
        with pytest.raises(AppsFileError) as excinfo:
            AppsFile(path, lock_wait_s=0.2).add("Calculator")
        elapsed = time.monotonic() - start
    finally:
        os.close(fd)
    assert _reason(excinfo) == "locked"
    assert 0.2 <= elapsed < 2.0
    assert not path.exists()


def test_writers_queue_for_the_lock(tmp_path: Path) -> None:
    """A writer that finds the lock held waits for it and then succeeds."""
    path = tmp_path / "apps.json"
    fd = _hold_lock(path)
    results: list[AddResult] = []
    worker = threading.Thread(target=lambda: results.append(AppsFile(path).add("Calculator")))
    worker.start()
    time.sleep(0.3)
    assert results == []
    os.close(fd)
    worker.join(timeout=5)
    assert results == [AddResult(added=True, app="Calculator", path=str(path))]


_CHILD_ADD = """
import sys
from deskhand_d.native.allowlist import AppsFile
path, worker = sys.argv[1], int(sys.argv[2])
sys.stdin.readline()  # start line: every child is imported and waiting, then all go at once
print(sum(AppsFile(path).add(f"App {worker}-{n}").added for n in range(10)))
"""


@pytest.mark.slow
def test_ten_processes_adding_at_once(tmp_path: Path) -> None:
    """10 processes x 10 adds at the same moment: all 100 names land and the file stays valid."""
    path = tmp_path / "apps.json"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD_ADD, str(path), str(worker)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for worker in range(10)
    ]
    outputs = []
    try:
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            outputs.append((proc.returncode, out.strip(), err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert outputs == [(0, "10", "")] * 10
    apps = AppsFile(path).read()
    assert sorted(apps) == sorted(f"App {w}-{n}" for w in range(10) for n in range(10))
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert set(doc) == {"version", "apps"}
    assert len(doc["apps"]) == MAX_APPS
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


_CHILD_STALL = """
import os, sys
from deskhand_d.native.allowlist import AppsFile
path, stage = sys.argv[1], sys.argv[2]
real_write, real_replace = os.write, os.replace

def stall():
    sys.stdout.write("stalled\\n")
    sys.stdout.flush()
    sys.stdin.readline()  # the parent never answers: it sends SIGKILL

def half_write(fd, data):
    n = real_write(fd, bytes(data[: len(data) // 2]))
    stall()
    return n

def replace_then_stall(src, dst):
    real_replace(src, dst)
    stall()

def stall_then_replace(src, dst):
    stall()
    real_replace(src, dst)

if stage == "mid_write":
    os.write = half_write
elif stage == "before_rename":
    os.replace = stall_then_replace
else:
    os.replace = replace_then_stall
AppsFile(path).add("Newcomer")
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stage", "expected"),
    [
        ("mid_write", ["Calculator"]),
        ("before_rename", ["Calculator"]),
        ("after_rename", ["Calculator", "Newcomer"]),
    ],
)
def test_writer_killed_mid_update(tmp_path: Path, stage: str, expected: list[str]) -> None:
    """SIGKILL during an update leaves the old or the new file, and the lock is free at once."""
    path = tmp_path / "apps.json"
    AppsFile(path).add("Calculator")
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD_STALL, str(path), stage],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line == "stalled\n", proc.stderr.read() if proc.stderr else ""
        temps = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        assert len(temps) == (0 if stage == "after_rename" else 1)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert AppsFile(path).read() == expected
    # lock_wait_s=0: a single non-blocking try, so this fails unless the kernel already
    # released the dead writer's lock.
    assert AppsFile(path, lock_wait_s=0).add("Later").added is True
    assert AppsFile(path).read() == [*expected, "Later"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a file away")
def test_foreign_owner_is_refused(tmp_path: Path) -> None:
    """A private file that belongs to another uid is refused."""
    path = tmp_path / "apps.json"
    _write(path, {"version": 1, "apps": ["Calculator"]})
    os.chown(path, 12345, 12345)
    with pytest.raises(AppsFileError) as excinfo:
        AppsFile(path).read()
    assert _reason(excinfo) == "unsafe"
    assert "uid 12345" in excinfo.value.message
