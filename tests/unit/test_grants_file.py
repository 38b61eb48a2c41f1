"""grants.json: saved grants on real files, refusals of unsafe files, and concurrent writers."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from deskhand_d.consent import identity
from deskhand_d.consent.grants import (
    MAX_GRANTS,
    GrantsFile,
    GrantsStore,
    SavedGrant,
)
from deskhand_d.consent.identity import AppIdentity
from deskhand_d.errors import GrantNotFound, GrantsFileError

ROOT = Path(__file__).resolve().parents[2]

REQUIREMENT = 'identifier "x" and anchor apple'
CALC = identity.signed(
    "Calculator", "/Applications/Calc.app/Contents/MacOS/Calc", REQUIREMENT, signer="Apple"
)
CALC_COPY = identity.signed(
    "Calculator", "/Users/me/Downloads/Calc.app/Contents/MacOS/Calc", REQUIREMENT, signer="Apple"
)
LS = identity.package("ls", "/usr/bin/ls", "coreutils")
TOOL = identity.content("Tool", "/home/me/bin/tool", "ab" * 32, why="unsigned")


def numbered(tag: str, n: int) -> AppIdentity:
    """A distinct signed identity per (tag, n)."""
    return identity.signed(
        f"App {tag}-{n}", f"/opt/{tag}/{n}/app", f'identifier "{tag}.{n}"', signer="Team"
    )


def grant_doc(ident: AppIdentity, **override: object) -> dict[str, object]:
    """One entry of grants.json as the file stores it."""
    doc: dict[str, object] = {
        "app": ident.app,
        "path": ident.path,
        "kind": ident.kind,
        "key": ident.key,
        "signer": ident.signer,
        "detail": ident.detail,
        "granted_at": "2024-01-01T00:00:00Z",
        "revoked_at": None,
        "restored_at": None,
    }
    doc.update(override)
    return doc


def write_file(path: Path, doc: object, mode: int = 0o600) -> None:
    if isinstance(doc, bytes):
        path.write_bytes(doc)
    else:
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    os.chmod(path, mode)


def temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# -- reading and adding ---------------------------------------------------------------------


def test_missing_file_means_no_grants(tmp_path: Path) -> None:
    """A file that does not exist reads as no grants, and reading creates nothing."""
    assert GrantsFile(tmp_path / "grants.json").read() == []
    assert list(tmp_path.iterdir()) == []


def test_add_creates_a_private_version_1_file(tmp_path: Path) -> None:
    """The first add creates the directory and an exactly-0600 file holding version 1."""
    path = tmp_path / "cfg" / "deskhand" / "grants.json"
    old = os.umask(0o000)
    try:
        grant, changed = GrantsFile(path).add(CALC)
    finally:
        os.umask(old)
    assert changed is True
    assert (grant.app, grant.path, grant.kind, grant.key) == (
        CALC.app,
        CALC.path,
        "signed",
        CALC.key,
    )
    assert (grant.signer, grant.detail) == ("Apple", REQUIREMENT)
    assert grant.active and grant.revoked_at is None and grant.restored_at is None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["version"] == 1
    assert set(doc) == {"version", "grants"}
    assert [g["key"] for g in doc["grants"]] == [CALC.key]
    assert doc["grants"][0]["kind"] == "signed"
    assert sorted(p.name for p in path.parent.iterdir()) == ["grants.json", "grants.json.lock"]
    assert GrantsFile(path).read() == [grant]


def test_add_keeps_file_order_and_kinds(tmp_path: Path) -> None:
    """Signed and package identities are both saved, in the order they were added."""
    path = tmp_path / "grants.json"
    grants = GrantsFile(path)
    grants.add(CALC)
    grants.add(LS)
    grants.add(CALC_COPY)
    read = grants.read()
    assert [(g.key, g.kind) for g in read] == [
        (CALC.key, "signed"),
        (LS.key, "package"),
        (CALC_COPY.key, "signed"),
    ]
    assert read[1].signer == "coreutils"
    assert len({g.key for g in read}) == 3


def test_second_add_changes_nothing(tmp_path: Path) -> None:
    """Adding an identity that is already active returns changed=False and leaves the file."""
    path = tmp_path / "grants.json"
    grants = GrantsFile(path)
    first, changed = grants.add(CALC)
    assert changed is True
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.stat()
    body = path.read_bytes()
    again, changed = grants.add(CALC)
    assert changed is False
    assert again == first
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, 1_000_000_000)
    assert path.read_bytes() == body


def test_content_identity_cannot_be_saved(tmp_path: Path) -> None:
    """add() of an unverifiable identity raises ValueError before touching anything."""
    with pytest.raises(ValueError, match="content"):
        GrantsFile(tmp_path / "new" / "grants.json").add(TOOL)
    assert list(tmp_path.iterdir()) == []


def test_content_identity_add_leaves_existing_file(tmp_path: Path) -> None:
    """The refused content add leaves an existing file byte for byte."""
    path = tmp_path / "grants.json"
    grants = GrantsFile(path)
    grants.add(CALC)
    before = path.read_bytes()
    with pytest.raises(ValueError):
        grants.add(TOOL)
    assert path.read_bytes() == before


# -- revoke and restore ---------------------------------------------------------------------


def test_revoke_keeps_the_entry_and_restore_brings_it_back(tmp_path: Path) -> None:
    """revoke sets revoked_at (entry kept); restore clears it and sets restored_at."""
    path = tmp_path / "grants.json"
    grants = GrantsFile(path)
    original, _ = grants.add(CALC)
    grants.add(LS)

    revoked = grants.revoke("Calculator")
    assert [g.key for g in revoked] == [CALC.key]
    assert revoked[0].revoked_at is not None and not revoked[0].active
    assert revoked[0].granted_at == original.granted_at
    read = grants.read()
    assert [g.key for g in read] == [CALC.key, LS.key]
    assert read[0] == revoked[0]
    assert read[1].active
    on_disk = json.loads(path.read_text(encoding="utf-8"))["grants"]
    assert on_disk[0]["revoked_at"] == revoked[0].revoked_at
    assert on_disk[1]["revoked_at"] is None

    restored = grants.restore("Calculator")
    assert [g.key for g in restored] == [CALC.key]
    assert restored[0].revoked_at is None and restored[0].active
    assert restored[0].restored_at is not None
    assert restored[0].granted_at == original.granted_at
    assert grants.read() == [restored[0], read[1]]
    on_disk = json.loads(path.read_text(encoding="utf-8"))["grants"]
    assert on_disk[0]["revoked_at"] is None
    assert on_disk[0]["restored_at"] == restored[0].restored_at


@pytest.mark.parametrize(
    ("given", "expected_keys"),
    [
        pytest.param("ls", [LS.key], id="name"),
        pytest.param("  LS ", [LS.key], id="name-case-and-spaces"),
        pytest.param("CALCULATOR", [CALC.key, CALC_COPY.key], id="name-names-every-match"),
        pytest.param("/usr/bin/ls", [LS.key], id="path"),
        pytest.param("/usr/bin/ls/", [LS.key], id="path-trailing-slash"),
        pytest.param(CALC_COPY.path, [CALC_COPY.key], id="path-picks-one-of-same-name"),
        pytest.param(CALC.path.upper(), [CALC.key], id="path-case-insensitive"),
    ],
)
def test_revoke_and_restore_by_name_or_path(
    tmp_path: Path, given: str, expected_keys: list[str]
) -> None:
    """A grant is named by its app name (case-insensitive, trimmed) or its path."""
    grants = GrantsFile(tmp_path / "grants.json")
    for ident in (CALC, LS, CALC_COPY):
        grants.add(ident)
    assert [g.key for g in grants.revoke(given)] == expected_keys
    assert {g.key for g in grants.read() if not g.active} == set(expected_keys)
    assert [g.key for g in grants.restore(given)] == expected_keys
    assert all(g.active for g in grants.read())
    assert len(grants.read()) == 3


@pytest.mark.parametrize(
    ("setup", "action", "given"),
    [
        pytest.param("none", "revoke", "Calculator", id="revoke-empty-file"),
        pytest.param("active", "revoke", "Safari", id="revoke-unknown-app"),
        pytest.param("active", "revoke", "Calc", id="revoke-prefix-is-not-a-name"),
        pytest.param("active", "revoke", "", id="revoke-empty-name"),
        pytest.param("active", "revoke", " / ", id="revoke-root"),
        pytest.param("revoked", "revoke", "Calculator", id="revoke-already-revoked"),
        pytest.param("active", "restore", "Calculator", id="restore-active"),
        pytest.param("active", "restore", "Safari", id="restore-unknown-app"),
        pytest.param("none", "restore", "Calculator", id="restore-empty-file"),
    ],
)
def test_grant_not_found(tmp_path: Path, setup: str, action: str, given: str) -> None:
    """Nothing to flip raises GrantNotFound pointing at `grants list`; the file is unchanged."""
    path = tmp_path / "grants.json"
    grants = GrantsFile(path)
    if setup != "none":
        grants.add(CALC)
    if setup == "revoked":
        grants.revoke("Calculator")
    before = path.read_bytes() if path.exists() else None
    flip: Callable[[str], list[SavedGrant]] = getattr(grants, action)
    with pytest.raises(GrantNotFound) as excinfo:
        flip(given)
    assert excinfo.value.code == "grant_not_found"
    assert "deskhandctl grants list" in excinfo.value.message
    assert repr(given) in excinfo.value.message
    assert excinfo.value.data == {"app": given}
    assert (path.read_bytes() if path.exists() else None) == before


def test_add_after_revoke_reactivates(tmp_path: Path) -> None:
    """Saying "always" again for a revoked identity reactivates its one entry."""
    path = tmp_path / "grants.json"
    grants = GrantsFile(path)
    original, _ = grants.add(CALC)
    grants.add(LS)
    grants.revoke(CALC.path)
    again, changed = grants.add(CALC)
    assert changed is True
    assert again.active and again.revoked_at is None and again.restored_at is not None
    assert again.granted_at == original.granted_at
    read = grants.read()
    assert [g.key for g in read] == [CALC.key, LS.key]
    assert read[0] == again


# -- refusals -------------------------------------------------------------------------------

VALID = {"version": 1, "grants": [grant_doc(CALC)]}


def _plant_symlink(path: Path) -> None:
    real = path.with_name("real.json")
    write_file(real, VALID)
    path.symlink_to(real)


def _plant_directory(path: Path) -> None:
    path.mkdir(mode=0o700)
    (path / "inside").write_text("x")


def _plant(doc: object, mode: int = 0o600) -> Callable[[Path], None]:
    return lambda path: write_file(path, doc, mode)


@pytest.mark.parametrize(
    ("plant", "reason", "phrase"),
    [
        pytest.param(_plant_symlink, "unsafe", "symbolic link", id="symlink"),
        pytest.param(_plant(VALID, 0o640), "unsafe", "chmod 600", id="mode-0640"),
        pytest.param(_plant(VALID, 0o604), "unsafe", "chmod 600", id="mode-0604"),
        pytest.param(_plant(VALID, 0o644), "unsafe", "chmod 600", id="mode-0644"),
        pytest.param(_plant_directory, "unsafe", "not a regular file", id="directory"),
        pytest.param(_plant("{not json"), "corrupt", "version", id="corrupt-json"),
        pytest.param(_plant(""), "corrupt", "version", id="empty-file"),
        pytest.param(_plant(b'{"version": 1, "grants": ["\xff"]}'), "corrupt", "", id="not-utf8"),
        pytest.param(_plant([]), "corrupt", "version", id="list-not-object"),
        pytest.param(_plant({"version": 2, "grants": []}), "corrupt", "", id="version-2"),
        pytest.param(_plant({"version": "1", "grants": []}), "corrupt", "", id="version-string"),
        pytest.param(_plant({"grants": []}), "corrupt", "", id="version-missing"),
        pytest.param(
            _plant({"version": 1, "grants": [], "comment": "x"}),
            "corrupt",
            "comment",
            id="unknown-top-level-field",
        ),
        pytest.param(
            _plant({"version": 1, "grants": [grant_doc(CALC, note="hand edited")]}),
            "corrupt",
            "note",
            id="unknown-grant-field",
        ),
        pytest.param(
            _plant({"version": 1, "grants": [grant_doc(TOOL)]}),
            "corrupt",
            "",
            id="content-kind-in-file",
        ),
        pytest.param(
            _plant({"version": 1, "grants": [{"app": "Calculator"}]}),
            "corrupt",
            "",
            id="grant-missing-fields",
        ),
        pytest.param(
            _plant(
                {
                    "version": 1,
                    "grants": [grant_doc(numbered("many", n)) for n in range(MAX_GRANTS + 1)],
                }
            ),
            "corrupt",
            f"more than {MAX_GRANTS}",
            id="too-many-grants",
        ),
        pytest.param(
            _plant(json.dumps(VALID) + " " * 131_072), "unsafe", "larger than", id="oversized"
        ),
    ],
)
def test_refused_file_is_left_alone(
    tmp_path: Path, plant: Callable[[Path], None], reason: str, phrase: str
) -> None:
    """Unsafe or invalid files raise grants_file_invalid naming the path; nothing is changed."""
    path = tmp_path / "grants.json"
    plant(path)
    snapshot = {
        p.name: (p.is_symlink(), p.read_bytes() if p.is_file() else None)
        for p in tmp_path.iterdir()
    }
    mode = path.lstat().st_mode

    grants = GrantsFile(path)
    attempts: list[Callable[[], object]] = [
        grants.read,
        lambda: grants.add(LS),
        lambda: grants.add(CALC),
        lambda: grants.revoke("Calculator"),
        lambda: grants.restore("Calculator"),
    ]
    for attempt in attempts:
        with pytest.raises(GrantsFileError) as excinfo:
            attempt()
        err = excinfo.value
        assert err.code == "grants_file_invalid"
        assert str(path) in err.message
        assert err.data == {"path": str(path), "reason": reason}
        assert phrase in err.message
        assert "Nothing was changed" in err.message

    after = {
        p.name: (p.is_symlink(), p.read_bytes() if p.is_file() else None)
        for p in tmp_path.iterdir()
    }
    after.pop("grants.json.lock")  # the writers' lock file is created and kept; nothing else
    assert after == snapshot
    assert path.lstat().st_mode == mode
    assert temps(tmp_path) == []


def test_full_file_refuses_a_new_grant(tmp_path: Path) -> None:
    """With MAX_GRANTS saved, a new identity is refused unchanged; a present one is fine."""
    path = tmp_path / "grants.json"
    write_file(
        path, {"version": 1, "grants": [grant_doc(numbered("full", n)) for n in range(MAX_GRANTS)]}
    )
    before = path.read_bytes()
    grants = GrantsFile(path)
    assert len(grants.read()) == MAX_GRANTS
    with pytest.raises(GrantsFileError) as excinfo:
        grants.add(CALC)
    assert excinfo.value.data["reason"] == "limit"
    assert str(path) in excinfo.value.message
    assert path.read_bytes() == before
    assert grants.add(numbered("full", 7))[1] is False
    assert path.read_bytes() == before


# -- concurrency ----------------------------------------------------------------------------


class CountingGrantsFile(GrantsFile):
    """Records how many adds run at the same moment."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._guard = threading.Lock()
        self.active = 0
        self.peak = 0
        self.threads: set[int] = set()

    def add(self, identity: AppIdentity) -> tuple[SavedGrant, bool]:
        with self._guard:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.threads.add(threading.get_ident())
        try:
            return super().add(identity)
        finally:
            with self._guard:
                self.active -= 1


def test_store_mutations_run_one_at_a_time(tmp_path: Path) -> None:
    """8 tasks x 10 adds through one GrantsStore: all land once, never two at the same time."""
    path = tmp_path / "grants.json"
    file = CountingGrantsFile(path)
    store = GrantsStore(file)
    results: list[tuple[SavedGrant, bool]] = []

    async def add(ident: AppIdentity) -> tuple[SavedGrant, bool]:
        return await store.mutate(lambda f: f.add(ident))

    async def worker(w: int) -> None:
        for n in range(10):
            results.append(await add(numbered(f"task{w}", n)))

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for w in range(8):
                nursery.start_soon(worker, w)

    trio.run(main)
    assert file.peak == 1
    assert threading.get_ident() not in file.threads  # file work ran in worker threads
    assert len(results) == 80 and all(changed for _, changed in results)
    expected = {numbered(f"task{w}", n).key for w in range(8) for n in range(10)}
    keys = [g.key for g in store.read()]
    assert len(keys) == 80
    assert set(keys) == expected
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["version"] == 1 and len(doc["grants"]) == 80
    assert store.path == path


_CHILD_ADD = """
import sys
from deskhand_d.consent import identity
from deskhand_d.consent.grants import GrantsFile
path, tag = sys.argv[1], sys.argv[2]
idents = [
    identity.signed(f"App {tag}-{n}", f"/opt/{tag}/{n}/app", f'identifier "{tag}.{n}"', signer="Team")
    for n in range(20)
]
print("ready", flush=True)
sys.stdin.readline()  # every process is imported and waiting; then all go at once
grants = GrantsFile(path)
print(sum(grants.add(ident)[1] for ident in idents), flush=True)
"""


def _close(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


@pytest.mark.slow
def test_processes_and_this_one_adding_at_once(tmp_path: Path) -> None:
    """2 other processes and this one add 20 identities each at once: all 60 land once."""
    path = tmp_path / "grants.json"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD_ADD, str(path), f"proc{w}"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(2)
    ]
    outputs: list[tuple[int, str, str]] = []
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        grants = GrantsFile(path)
        mine = sum(grants.add(numbered("self", n))[1] for n in range(20))
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            outputs.append((proc.returncode, out.strip(), err))
    finally:
        for proc in procs:
            _close(proc)
    assert mine == 20
    assert outputs == [(0, "20", "")] * 2
    expected = [numbered(tag, n).key for tag in ("proc0", "proc1", "self") for n in range(20)]
    keys = [g.key for g in GrantsFile(path).read()]
    assert sorted(keys) == sorted(expected)  # each exactly once
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert set(doc) == {"version", "grants"} and doc["version"] == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert temps(tmp_path) == []


_CHILD_CHURN = """
import sys
from deskhand_d.consent import identity
from deskhand_d.consent.grants import GrantsFile
path = sys.argv[1]
idents = [
    identity.signed(f"Churn {n}", f"/opt/churn/{n}/app", f'identifier "churn.{n}"', signer="Team")
    for n in range(20)
]
grants = GrantsFile(path)
print("ready", flush=True)
while True:
    for ident in idents:
        grants.add(ident)
    for ident in idents:
        grants.revoke(ident.path)
"""


@pytest.mark.slow
def test_writer_killed_mid_update(tmp_path: Path) -> None:
    """A writer SIGKILLed while churning leaves a readable file; the next add cleans up."""
    path = tmp_path / "grants.json"
    GrantsFile(path).add(CALC)
    rng = random.Random(20240101)
    churn_keys = {
        identity.signed(
            f"Churn {n}", f"/opt/churn/{n}/app", f'identifier "churn.{n}"', signer="Team"
        ).key
        for n in range(20)
    }
    survivors: list[str] = []
    for round_ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD_CHURN, str(path)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n", proc.stderr.read() if proc.stderr else ""
            time.sleep(rng.uniform(0.02, 0.2))
            assert proc.poll() is None  # still churning, not crashed
            os.kill(proc.pid, signal.SIGKILL)
            assert proc.wait(timeout=10) == -signal.SIGKILL
        finally:
            _close(proc)

        read = GrantsFile(path).read()  # old or new content, never a mix
        keys = [g.key for g in read]
        assert len(keys) == len(set(keys))
        assert read[0].key == CALC.key and read[0].active
        assert set(keys) <= {CALC.key, *churn_keys, *survivors}
        assert set(survivors) <= set(keys)
        # lock_wait_s=0: one non-blocking try, so the dead writer's lock must already be free.
        later = numbered("later", round_)
        assert GrantsFile(path, lock_wait_s=0).add(later)[1] is True
        survivors.append(later.key)
        assert temps(tmp_path) == []
        assert [g.key for g in GrantsFile(path).read()][-1] == later.key
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["version"] == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
