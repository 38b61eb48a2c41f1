"""macOS app identity: bundle lookup, signature rules and process lookup, with codesign faked.

Bundles are fake directories in ``tmp_path``; ``codesign`` answers come from the files in
``fixtures/codesign``; ``ps`` output is written inline.
"""

from __future__ import annotations

import hashlib
import os
import plistlib
import sys
from pathlib import Path

import pytest

from deskhand_d.consent.identity import IdentityUnavailable, Instance
from deskhand_d.consent.macos import (
    CODESIGN,
    PS,
    MacPlatform,
    parse_designated,
    parse_ps,
    proc_pidpath,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "codesign"


def recorded(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def requirement_in(name: str) -> str:
    found = parse_designated(recorded(name)).requirement
    assert found
    return found


def make_bundle(
    folder: Path,
    name: str,
    bundle_id: str,
    *,
    exe: str | None = None,
    data: bytes = b"\xcf\xfa\xed\xfe fake Mach-O",
    display: str | None = None,
) -> Path:
    bundle = folder / f"{name}.app"
    (bundle / "Contents" / "MacOS").mkdir(parents=True)
    info: dict[str, str] = {"CFBundleIdentifier": bundle_id, "CFBundleName": name}
    if exe != "":
        info["CFBundleExecutable"] = exe or name
        binary = bundle / "Contents" / "MacOS" / (exe or name)
        binary.write_bytes(data)
        binary.chmod(0o755)
    if display:
        info["CFBundleDisplayName"] = display
    with open(bundle / "Contents" / "Info.plist", "wb") as f:
        plistlib.dump(info, f)
    return bundle


class FakeCommands:
    """Stands in for codesign and ps; records every argv it is given."""

    def __init__(self) -> None:
        self.display: dict[str, tuple[int, str]] = {}  # bundle -> ``codesign -d -r-`` result
        self.verify: dict[str, tuple[int, str]] = {}  # bundle -> ``--verify`` result
        self.ps: tuple[int, str] = (0, "")
        self.calls: list[list[str]] = []

    def sign(self, bundle: Path, fixture: str, *, status: int = 0) -> None:
        self.display[os.path.realpath(bundle)] = (status, recorded(fixture))

    def __call__(self, argv: list[str]) -> tuple[int, str]:
        self.calls.append(argv)
        if argv[0] == PS:
            return self.ps
        assert argv[0] == CODESIGN, argv
        if argv[1:3] == ["-d", "-r-"]:
            return self.display[argv[3]]
        assert argv[1] == "--verify" and argv[2].startswith("-R="), argv
        return self.verify.get(argv[3], (0, ""))


@pytest.fixture
def apps(tmp_path: Path) -> Path:
    folder = tmp_path / "Applications"
    folder.mkdir()
    return folder


@pytest.fixture
def fake() -> FakeCommands:
    return FakeCommands()


def platform(apps: Path, fake: FakeCommands, *extra: Path) -> MacPlatform:
    return MacPlatform(search_dirs=[str(apps), *map(str, extra)], run=fake)


def exe_of(bundle: Path, name: str | None = None) -> str:
    return os.path.realpath(bundle / "Contents" / "MacOS" / (name or bundle.stem))


# --- the parsers ----------------------------------------------------------------------------


def test_parse_designated_apple() -> None:
    """``anchor apple`` alone is Apple's own signature."""
    found = parse_designated(recorded("calculator-designated.txt"))
    assert found.requirement == 'identifier "com.apple.calculator" and anchor apple'
    assert (found.adhoc, found.signer) == (False, "Apple")


def test_parse_designated_developer_id_implicit() -> None:
    """An implicit requirement (printed after ``#``) counts; the team comes from the leaf OU."""
    found = parse_designated(recorded("developer-id-designated.txt"))
    assert found.requirement.startswith('identifier "com.example.editor" and anchor apple generic')
    assert found.requirement.endswith("certificate leaf[subject.OU] = ABCDE12345")
    assert (found.adhoc, found.signer) == (False, "ABCDE12345")


def test_parse_designated_quoted_team() -> None:
    """The App Store style requirement quotes the team id; ``anchor apple generic`` is not Apple."""
    found = parse_designated(recorded("app-store-designated.txt"))
    assert (found.adhoc, found.signer) == (False, "ABCDE12345")


@pytest.mark.parametrize("fixture", ["adhoc-designated.txt", "adhoc-universal-designated.txt"])
def test_parse_designated_adhoc(fixture: str) -> None:
    """A requirement that only pins code hashes is ad-hoc, for one or several architectures."""
    found = parse_designated(recorded(fixture))
    assert found.requirement.startswith('cdhash H"')
    assert (found.adhoc, found.signer) == (True, "")


def test_parse_designated_none() -> None:
    """No designated line (unsigned code, or an error) gives an empty requirement."""
    found = parse_designated(recorded("unsigned-designated.txt"))
    assert (found.requirement, found.adhoc, found.signer) == ("", False, "")
    assert parse_designated("designated => identifier x and anchor trusted").signer == ""


def test_parse_ps() -> None:
    """A pid and five words of start time per line; junk lines (and a command column, which
    is not asked for) are skipped."""
    out = (
        "    1 Mon Jan  1 09:00:00 2024\n"
        "  412 Tue Feb 13 10:11:12 2024\n"
        "  413 Tue Feb 13 10:11:12 2024 /bin/extra\n"
        "garbage line\n"
        "\n"
    )
    assert parse_ps(out) == [(1, "Mon Jan 1 09:00:00 2024"), (412, "Tue Feb 13 10:11:12 2024")]


# --- signature rules ------------------------------------------------------------------------


def test_apple_signed(apps: Path, fake: FakeCommands) -> None:
    """An Apple-signed bundle that verifies is a ``signed`` identity keyed on its requirement."""
    bundle = make_bundle(apps, "Calculator", "com.apple.calculator")
    fake.sign(bundle, "calculator-designated.txt")
    ident = platform(apps, fake).identify("Calculator")
    assert (ident.kind, ident.signer, ident.app) == ("signed", "Apple", "Calculator")
    assert ident.path == exe_of(bundle)
    assert ident.bundle == os.path.realpath(bundle)
    assert ident.detail == requirement_in("calculator-designated.txt")
    assert ident.verifiable
    # The requirement it verifies against is exactly the one codesign reported.
    assert fake.calls == [
        [CODESIGN, "-d", "-r-", ident.bundle],
        [CODESIGN, "--verify", f"-R={ident.detail}", ident.bundle],
    ]


def test_third_party_team(apps: Path, fake: FakeCommands) -> None:
    """A Developer ID app is signed by its team id."""
    bundle = make_bundle(apps, "Example Editor", "com.example.editor")
    fake.sign(bundle, "developer-id-designated.txt")
    ident = platform(apps, fake).identify("Example Editor")
    assert (ident.kind, ident.signer) == ("signed", "ABCDE12345")
    assert "ABCDE12345" in ident.describe()


def test_adhoc_is_content(apps: Path, fake: FakeCommands) -> None:
    """Ad-hoc signing vouches for nothing: the key is the executable's SHA-256."""
    data = b"ad-hoc body" * 100_000  # more than one read chunk
    bundle = make_bundle(apps, "Home Tool", "me.home.tool", exe="hometool", data=data)
    fake.sign(bundle, "adhoc-designated.txt")
    ident = platform(apps, fake).identify("Home Tool")
    assert ident.kind == "content" and not ident.verifiable
    assert ident.key == hashlib.sha256(data).hexdigest()
    assert "ad-hoc" in ident.detail
    assert ident.path == exe_of(bundle, "hometool")
    assert len(fake.calls) == 1  # nothing to verify


def test_unsigned_is_content(apps: Path, fake: FakeCommands) -> None:
    """``code object is not signed at all`` (exit 1) gives a content identity."""
    bundle = make_bundle(apps, "Plain Tool", "com.example.plain", data=b"plain")
    fake.sign(bundle, "unsigned-designated.txt", status=1)
    ident = platform(apps, fake).identify("Plain Tool")
    assert (ident.kind, ident.detail) == ("content", "not signed")
    assert ident.key == hashlib.sha256(b"plain").hexdigest()


def test_codesign_error_is_content(apps: Path, fake: FakeCommands) -> None:
    """Any other codesign failure is not trusted either, and the reason is kept."""
    bundle = make_bundle(apps, "Odd", "com.example.odd")
    fake.display[os.path.realpath(bundle)] = (1, f"{bundle}: invalid signature\n")
    ident = platform(apps, fake).identify("Odd")
    assert ident.kind == "content"
    assert "invalid signature" in ident.detail


def test_verify_failure_is_content(apps: Path, fake: FakeCommands) -> None:
    """A bundle that no longer satisfies its own requirement (exit 3) is content."""
    bundle = make_bundle(apps, "Example Editor", "com.example.editor", data=b"tampered")
    fake.sign(bundle, "developer-id-designated.txt")
    fake.verify[os.path.realpath(bundle)] = (3, recorded("verify-failed.txt"))
    ident = platform(apps, fake).identify("com.example.editor")
    assert ident.kind == "content"
    assert ident.key == hashlib.sha256(b"tampered").hexdigest()
    assert "does not verify" in ident.detail and "failed to satisfy" in ident.detail


def test_copy_elsewhere_is_another_app(apps: Path, fake: FakeCommands, tmp_path: Path) -> None:
    """The same signed app at another path gets another key."""
    other = tmp_path / "Elsewhere"
    other.mkdir()
    first = make_bundle(apps, "Example Editor", "com.example.editor")
    copy = make_bundle(other, "Example Editor", "com.example.editor")
    fake.sign(first, "developer-id-designated.txt")
    fake.sign(copy, "developer-id-designated.txt")
    mac = platform(apps, fake)
    a, b = mac.identify(str(first)), mac.identify(str(copy))
    assert a.kind == b.kind == "signed" and a.detail == b.detail
    assert a.key != b.key


def test_resigned_impostor_is_another_app(apps: Path, fake: FakeCommands) -> None:
    """Re-signed by another team at the same path: another key."""
    bundle = make_bundle(apps, "Example Editor", "com.example.editor")
    fake.sign(bundle, "developer-id-designated.txt")
    mac = platform(apps, fake)
    genuine = mac.identify("Example Editor")
    fake.sign(bundle, "impostor-designated.txt")
    impostor = mac.identify("Example Editor")
    assert impostor.kind == "signed" and impostor.signer == "ZYXWV98765"
    assert (impostor.path, impostor.key == genuine.key) == (genuine.path, False)


def test_signed_update_keeps_key(apps: Path, fake: FakeCommands) -> None:
    """New bytes that still satisfy the same requirement keep the key; the stamp changes."""
    bundle = make_bundle(apps, "Example Editor", "com.example.editor", data=b"version 1")
    seal = bundle / "Contents" / "_CodeSignature" / "CodeResources"
    seal.parent.mkdir()
    seal.write_text("seal 1")
    fake.sign(bundle, "developer-id-designated.txt")
    mac = platform(apps, fake)
    before = mac.identify("Example Editor")
    stamp = mac.stamp(before)
    assert mac.stamp(before) == stamp
    binary = Path(before.path)
    binary.unlink()  # an updater replaces the file, so the inode changes too
    binary.write_bytes(b"version 2 is longer")
    after = mac.identify("Example Editor")
    assert after.key == before.key
    assert mac.stamp(after) != stamp


def test_stamp_follows_the_seal(apps: Path, fake: FakeCommands) -> None:
    """Re-signing rewrites CodeResources, which alone changes the stamp."""
    bundle = make_bundle(apps, "Example Editor", "com.example.editor")
    seal = bundle / "Contents" / "_CodeSignature" / "CodeResources"
    seal.parent.mkdir()
    seal.write_text("seal 1")
    fake.sign(bundle, "developer-id-designated.txt")
    mac = platform(apps, fake)
    ident = mac.identify("Example Editor")
    stamp = mac.stamp(ident)
    seal.write_text("seal 2, re-signed")
    assert mac.stamp(ident) != stamp
    seal.unlink()
    assert mac.stamp(ident) not in (stamp, None)


# --- resolution -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "asked", ["Calculator", "calculator", "Calculator.app", "COM.APPLE.CALCULATOR", "Rechner"]
)
def test_resolve_by_name_or_id(apps: Path, fake: FakeCommands, asked: str) -> None:
    """Directory name, bundle id and display name all match, ignoring case."""
    make_bundle(apps, "Decoy", "com.example.decoy")
    bundle = make_bundle(apps, "Calculator", "com.apple.calculator", display="Rechner")
    fake.sign(bundle, "calculator-designated.txt")
    ident = platform(apps, fake).identify(asked)
    assert (ident.bundle, ident.app) == (os.path.realpath(bundle), asked)


def test_resolve_by_path(apps: Path, fake: FakeCommands) -> None:
    """An absolute bundle path, or the path of its main executable, names the bundle."""
    bundle = make_bundle(apps, "Calculator", "com.apple.calculator")
    fake.sign(bundle, "calculator-designated.txt")
    mac = platform(apps, fake)
    by_bundle = mac.identify(str(bundle) + "/")
    by_exe = mac.identify(exe_of(bundle))
    assert by_bundle.bundle == by_exe.bundle == os.path.realpath(bundle)
    assert by_bundle.key == by_exe.key


def test_resolve_plain_tool(apps: Path, fake: FakeCommands, tmp_path: Path) -> None:
    """An executable outside any bundle is checked on its own."""
    tool = tmp_path / "tool"
    tool.write_bytes(b"tool")
    tool.chmod(0o755)
    fake.display[os.path.realpath(tool)] = (1, f"{tool}: code object is not signed at all\n")
    mac = platform(apps, fake)
    ident = mac.identify(str(tool))
    assert (ident.kind, ident.bundle, ident.path) == ("content", "", os.path.realpath(tool))
    stamp = mac.stamp(ident)
    assert isinstance(stamp, tuple) and len(stamp) == 1  # no bundle, so no seal to watch


def test_resolve_utilities_and_order(apps: Path, fake: FakeCommands, tmp_path: Path) -> None:
    """``Utilities`` is searched; an earlier directory wins; a bundle id beats a name."""
    (apps / "Utilities").mkdir()
    terminal = make_bundle(apps / "Utilities", "Terminal", "com.apple.Terminal")
    later = tmp_path / "Later"
    later.mkdir()
    shadowed = make_bundle(later, "Terminal", "com.example.other-terminal")
    named_like_id = make_bundle(later, "com.apple.Terminal", "com.example.confusing")
    for bundle in (terminal, shadowed, named_like_id):
        fake.sign(bundle, "calculator-designated.txt")
    mac = platform(apps, fake, later)
    assert mac.identify("Terminal").bundle == os.path.realpath(terminal)
    assert mac.identify("com.apple.Terminal").bundle == os.path.realpath(terminal)
    assert mac.identify("com.example.other-terminal").bundle == os.path.realpath(shadowed)


def test_unknown_app(apps: Path, fake: FakeCommands) -> None:
    """Nothing matches: the message says what to do, and nothing was run."""
    make_bundle(apps, "Calculator", "com.apple.calculator")
    with pytest.raises(IdentityUnavailable, match="install it"):
        platform(apps, fake).identify("Nonexistent")
    with pytest.raises(IdentityUnavailable, match=r"path of the \.app bundle"):
        platform(apps, fake).identify(str(apps / "Missing.app"))
    assert fake.calls == []


def test_broken_bundle(apps: Path, fake: FakeCommands) -> None:
    """No CFBundleExecutable, or a missing executable, cannot be identified."""
    make_bundle(apps, "Hollow", "com.example.hollow", exe="")
    gone = make_bundle(apps, "Gone", "com.example.gone")
    (gone / "Contents" / "MacOS" / "Gone").unlink()
    (apps / "Junk.app" / "Contents").mkdir(parents=True)
    (apps / "Junk.app" / "Contents" / "Info.plist").write_text("<?xml not a plist")
    mac = platform(apps, fake)
    with pytest.raises(IdentityUnavailable, match="CFBundleExecutable"):
        mac.identify("Hollow")
    with pytest.raises(IdentityUnavailable, match="reinstall"):
        mac.identify("com.example.gone")
    with pytest.raises(IdentityUnavailable, match="CFBundleExecutable"):
        mac.identify("Junk")
    assert fake.calls == []


# --- running instances ----------------------------------------------------------------------


def test_instance(apps: Path, fake: FakeCommands, tmp_path: Path) -> None:
    """The lowest pid whose image (the kernel's path, proc_pidpath) is exactly this
    executable, with its start time; the name a process was launched by does not count."""
    bundle = make_bundle(apps, "Example Editor", "com.example.editor")
    fake.sign(bundle, "developer-id-designated.txt")
    link = tmp_path / "editor-link"
    images: dict[int, str] = {}
    mac = MacPlatform(search_dirs=[str(apps)], run=fake, pidpath=images.get)
    ident = mac.identify("Example Editor")
    link.symlink_to(ident.path)
    images.update(
        {
            700: ident.path,
            650: str(link),  # started through a symlink: resolves to the same file
            600: ident.path + " Helper",
            1: "/sbin/launchd",
        }
    )
    fake.ps = (
        0,
        "  700 Tue Feb 13 10:11:12 2024\n"
        "  650 Tue Feb 13 10:00:01 2024\n"
        "  600 Tue Feb 13 09:00:00 2024\n"
        "  550 Tue Feb 13 08:00:00 2024\n"  # gone, or not described: never matches
        "    1 Mon Jan  1 09:00:00 2024\n",
    )
    assert mac.instance(ident) == Instance(650, "Tue Feb 13 10:00:01 2024")
    assert fake.calls[-1] == [PS, "-axww", "-o", "pid=,lstart="]
    del images[650], images[700]
    assert mac.instance(ident) is None
    fake.ps = (1, "ps: failed\n")
    assert mac.instance(ident) is None


@pytest.mark.skipif(sys.platform == "darwin", reason="off macOS only")
def test_proc_pidpath_is_macos_only() -> None:
    """The libproc lookup is behind the platform check: elsewhere it says nothing."""
    assert proc_pidpath(os.getpid()) is None


@pytest.mark.skipif(sys.platform != "darwin", reason="macOS only: not run on Linux CI")
def test_proc_pidpath_names_our_own_image() -> None:
    assert proc_pidpath(os.getpid()) == os.path.realpath(sys.executable)


@pytest.mark.parametrize("call", ["-d", "--verify"])
def test_codesign_timeout_is_reported_not_downgraded(
    apps: Path, fake: FakeCommands, call: str
) -> None:
    """codesign running out of time (a very large bundle) is an error the person sees, never
    a silent "unverified" identity that could only get task access."""
    bundle = make_bundle(apps, "Huge", "com.example.huge")
    timed_out = (124, "/usr/bin/codesign did not finish within 10 s")
    if call == "-d":
        fake.display[os.path.realpath(bundle)] = timed_out
    else:
        fake.sign(bundle, "developer-id-designated.txt")
        fake.verify[os.path.realpath(bundle)] = timed_out
    with pytest.raises(IdentityUnavailable, match=r"codesign did not finish.*within 10 s"):
        platform(apps, fake).identify("Huge")
