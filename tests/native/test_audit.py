"""The audit log: metadata-only entries, a private directory, 0600 JSONL with size rotation."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest

from deskhand_d import paths
from deskhand_d.audit import AuditEntry, AuditLog, default_audit_dir, entry_for
from deskhand_d.errors import StartupError

FIELDS = (
    "time",
    "session",
    "client",
    "client_pid",
    "app",
    "tool",
    "delivery",
    "latency_ms",
    "code",
    "approval_reason",
    "text_length",
    "run_id",  # reviewed: a random run id links a dispatch to its Jev trace, nothing more
    "delivered",  # reviewed: counts only (93 of 240 characters), never what was typed
    "phase",  # reviewed: start (written before the call) or end
    "dispatch",  # reviewed: a random id pairing a start with its end
    "effect",  # reviewed: changed, unchanged or unreadable; never the value read back
    "late",  # reviewed: whether the end was written after the fact (a full disk); no content
)

SECRET = "hunter2-SECRET-typed"
TREE = "AXButton 'Transfer 1000 EUR to Mallory'"
LABEL = "Password field label"
COORD = 98765.4321


def _entry(n: int = 0, **overrides: Any) -> AuditEntry:
    fields: dict[str, Any] = {
        "now": 1_700_000_000.0 + n,
        "session": f"s{n}",
        "client": "pi",
        "client_pid": 4242,
        "tool": "click",
        "delivery": "dispatched",
        "latency_ms": 12.5,
        "app": "Calculator",
    }
    fields.update(overrides)
    return entry_for(**fields)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_entry_has_exactly_the_metadata_fields() -> None:
    """AuditEntry's field list is fixed; a new field must be a deliberate, reviewed change."""
    assert AuditEntry.__struct_fields__ == FIELDS


def test_entry_for_keeps_only_the_length_of_typed_text() -> None:
    """type_text and set_value arguments become a length; the app comes from the arguments."""
    typed = entry_for(
        now=0.0,
        session="s",
        client="pi",
        client_pid=None,
        tool="type_text",
        delivery="dispatched",
        latency_ms=-3.0,
        arguments={"app": "TextEdit", "state_id": "st-1", "text": SECRET},
    )
    assert typed == AuditEntry(
        time="1970-01-01T00:00:00.000Z",
        session="s",
        client="pi",
        client_pid=0,
        app="TextEdit",
        tool="type_text",
        delivery="dispatched",
        latency_ms=0.0,
        code="",
        approval_reason="",
        text_length=len(SECRET),
    )
    value = _entry(tool="set_value", arguments={"element_index": 3, "value": ""})
    assert value.text_length == 0
    assert value.app == "Calculator"
    assert _entry(tool="click", arguments={"x": COORD, "y": COORD}).text_length is None


def test_entry_for_formats_time_and_clips_long_identifiers() -> None:
    """Time is ISO 8601 UTC with milliseconds; over-long identifiers are cut to 200 chars."""
    entry = _entry(now=1_700_000_000.1234, session="x" * 10_000, code="outcome_unknown")
    assert entry.time == "2023-11-14T22:13:20.123Z"
    assert entry.session == "x" * 200
    assert entry.code == "outcome_unknown"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("type_text", {"text": SECRET}),
        ("set_value", {"element_index": 7, "value": SECRET}),
        ("select_text", {"element_index": 7, "text": SECRET, "prefix": TREE, "suffix": LABEL}),
        ("click", {"x": COORD, "y": COORD, "element_index": 7, "label": LABEL}),
        ("drag", {"from_x": COORD, "from_y": COORD, "to_x": COORD, "to_y": COORD}),
        ("press_key", {"key": SECRET}),
        ("perform_secondary_action", {"element_index": 7, "action": LABEL}),
        ("get_app_state", {"tree": TREE, "screenshot": SECRET, "labels": [LABEL]}),
    ],
)
def test_no_content_reaches_the_file(tmp_path: Path, tool: str, arguments: dict[str, Any]) -> None:
    """Typed text, keys, tree text, labels and coordinates never appear in the log file."""
    with AuditLog(tmp_path / "audit") as log:
        log.record(_entry(tool=tool, arguments={"app": "Calculator", **arguments}))
    raw = (tmp_path / "audit" / "audit.jsonl").read_text(encoding="utf-8")
    for needle in (SECRET, "hunter2", TREE, "Mallory", LABEL, "98765", "4321"):
        assert needle not in raw
    [line] = _lines(tmp_path / "audit" / "audit.jsonl")
    assert tuple(line) == FIELDS
    assert line["tool"] == tool
    assert line["app"] == "Calculator"


def test_record_appends_jsonl_in_private_places(tmp_path: Path) -> None:
    """Missing parents are created; the directory is 0700, the file 0600, one line per record."""
    directory = tmp_path / "state" / "deskhand" / "audit"
    with AuditLog(directory) as log:
        log.record(_entry(0))
        log.record(_entry(1, delivery="refused", code="app_not_allowed"))
        log.record(_entry(2, delivery="unknown", code="outcome_unknown", approval_reason="ask"))
    path = directory / "audit.jsonl"
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(directory.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = _lines(path)
    assert [(r["session"], r["delivery"], r["code"]) for r in lines] == [
        ("s0", "dispatched", ""),
        ("s1", "refused", "app_not_allowed"),
        ("s2", "unknown", "outcome_unknown"),
    ]
    assert lines[2]["approval_reason"] == "ask"
    assert all(msgspec.json.decode(json.dumps(r), type=AuditEntry) for r in lines)


def test_reopening_appends_and_repairs(tmp_path: Path) -> None:
    """A second log appends, ends a torn last line first, and tightens a loose file to 0600."""
    directory = tmp_path / "audit"
    with AuditLog(directory) as log:
        log.record(_entry(0))
    path = directory / "audit.jsonl"
    with path.open("a") as f:
        f.write('{"time": "torn')
    os.chmod(path, 0o644)
    with AuditLog(directory) as log:
        log.record(_entry(1))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = path.read_text().splitlines()
    assert lines[1] == '{"time": "torn'
    assert [json.loads(lines[i])["session"] for i in (0, 2)] == ["s0", "s1"]


def test_rotation_keeps_the_newest_files(tmp_path: Path) -> None:
    """Past max_bytes the file rotates to .1 ... .keep; the oldest are dropped, order kept."""
    directory = tmp_path / "audit"
    line_len = len(msgspec.json.encode(_entry(10))) + 1
    with AuditLog(directory, max_bytes=3 * line_len, keep=2) as log:
        for n in range(10, 30):
            log.record(_entry(n))
    names = sorted(p.name for p in directory.iterdir())
    assert names == ["audit.jsonl", "audit.jsonl.1", "audit.jsonl.2"]
    sessions = [
        r["session"]
        for name in ("audit.jsonl.2", "audit.jsonl.1", "audit.jsonl")
        for r in _lines(directory / name)
    ]
    assert sessions == [f"s{n}" for n in range(30 - len(sessions), 30)]
    assert len(sessions) == 8  # 3 + 3 + the 2 written since the last rotation
    for name in names:
        assert (directory / name).stat().st_size <= 3 * line_len
        assert stat.S_IMODE((directory / name).stat().st_mode) == 0o600


def test_rotation_counts_what_was_there(tmp_path: Path) -> None:
    """The size limit includes what an earlier run wrote; keep=0 just starts a new file."""
    directory = tmp_path / "audit"
    line_len = len(msgspec.json.encode(_entry(0))) + 1
    with AuditLog(directory, max_bytes=2 * line_len, keep=0) as log:
        log.record(_entry(0))
    with AuditLog(directory, max_bytes=2 * line_len, keep=0) as log:
        log.record(_entry(1))
        log.record(_entry(2))
    assert sorted(p.name for p in directory.iterdir()) == ["audit.jsonl"]
    assert [r["session"] for r in _lines(directory / "audit.jsonl")] == ["s2"]


def test_concurrent_threads_write_whole_lines(tmp_path: Path) -> None:
    """Records from several threads never interleave inside a line."""
    with AuditLog(tmp_path / "audit", max_bytes=4096, keep=50) as log:

        def work(t: int) -> None:
            for n in range(50):
                log.record(_entry(t * 1000 + n))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
    records = [r for p in (tmp_path / "audit").iterdir() for r in _lines(p)]
    assert len(records) == 400
    assert len({r["session"] for r in records}) == 400


def test_record_after_close_fails(tmp_path: Path) -> None:
    """A closed log refuses records instead of silently dropping them."""
    log = AuditLog(tmp_path / "audit")
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.record(_entry())


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o701, 0o770])
def test_loose_existing_directory_is_refused(tmp_path: Path, mode: int) -> None:
    """A pre-existing audit directory with group/other bits is refused and not chmodded."""
    directory = tmp_path / "audit"
    directory.mkdir()
    os.chmod(directory, mode)
    with pytest.raises(StartupError, match="chmod 700"):
        AuditLog(directory)
    assert stat.S_IMODE(directory.stat().st_mode) == mode
    assert list(directory.iterdir()) == []


def test_symlinked_directory_and_file_are_refused(tmp_path: Path) -> None:
    """A symlink in place of the directory, or of audit.jsonl inside it, is refused."""
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "audit").symlink_to(real)
    with pytest.raises(StartupError, match="symlink"):
        AuditLog(tmp_path / "audit")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "audit.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(OSError):  # O_NOFOLLOW: ELOOP
        AuditLog(private)
    assert not (tmp_path / "elsewhere.jsonl").exists()


def test_default_directory_is_under_state() -> None:
    """By default the log lives in <state dir>/audit."""
    env = {"HOME": "/home/someone", "XDG_STATE_HOME": "/home/someone/.st"}
    assert default_audit_dir(env) == paths.state_dir(env) / "audit"


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a directory away")
def test_foreign_directory_is_refused(tmp_path: Path) -> None:
    """A private audit directory that belongs to another uid is refused."""
    directory = tmp_path / "audit"
    directory.mkdir(mode=0o700)
    os.chown(directory, 12345, 12345)
    with pytest.raises(StartupError, match="uid 12345"):
        AuditLog(directory)
