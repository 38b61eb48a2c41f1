"""Linux app identity: resolution, the package rule, and finding running processes.

Uses the real machine where that is the point (``dpkg-query``, ``/usr/bin/ls``, ``/proc``)
and temporary XDG directories, fake ``/proc`` trees and a fake runner elsewhere.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from deskhand_d.consent.identity import AppIdentity, IdentityUnavailable, Instance
from deskhand_d.consent.linux import (
    SYSTEM_TOOLS_PATH,
    LinuxPlatform,
    parse_dpkg_search,
    parse_rpm_query,
    parse_stat_starttime,
)
from deskhand_d.consent.probe import Runner, run_command
from deskhand_d.desktopentry import exec_args, exec_program, parse_desktop_entry

LS = os.path.realpath("/usr/bin/ls")
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"

needs_dpkg = pytest.mark.skipif(
    shutil.which("dpkg-query") is None or not os.path.exists(LS),
    reason="needs dpkg-query and /usr/bin/ls: the package rule is checked against a real dpkg database",
)


def sha256_of(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def xdg(tmp_path: Path) -> Path:
    """An empty XDG layout: ``home/applications`` and ``system/applications``."""
    for part in ("home", "system"):
        (tmp_path / part / "applications").mkdir(parents=True)
    return tmp_path


def linux(
    xdg: Path,
    *,
    run: Runner = run_command,
    proc: str = "/proc",
    tools_path: str = SYSTEM_TOOLS_PATH,
) -> LinuxPlatform:
    """A platform that sees only the temporary XDG directories and the system PATH."""
    env = {
        "HOME": str(xdg),
        "PATH": SYSTEM_PATH,
        "XDG_DATA_HOME": str(xdg / "home"),
        "XDG_DATA_DIRS": str(xdg / "system"),
    }
    return LinuxPlatform(env=env, run=run, proc=proc, tools_path=tools_path)


def entry(where: Path, name: str, body: str) -> Path:
    path = where / "applications" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("[Desktop Entry]\nType=Application\n" + body, encoding="utf-8")
    return path


def executable_copy(source: str, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, dest)
    dest.chmod(0o755)
    return dest


# --- parsers --------------------------------------------------------------------------------


def test_parse_desktop_entry() -> None:
    """Only the main group counts; comments, spacing, escapes and duplicate keys handled."""
    text = (
        "# a comment\n"
        "[Desktop Entry]\n"
        "Name = Lister\n"
        "Name[de]=Auflister\n"
        "Name=Second\n"
        "Comment=tab\\there\\sand\\\\slash \\;\n"
        "Exec=ls %F\n"
        "not a key line\n"
        "[Desktop Action new-window]\n"
        "Exec=something-else\n"
    )
    assert parse_desktop_entry(text) == {
        "Name": "Lister",
        "Name[de]": "Auflister",
        "Comment": "tab\there and\\slash \\;",
        "Exec": "ls %F",
    }
    assert parse_desktop_entry("[Other]\nExec=x\n") == {}


@pytest.mark.parametrize(
    ("line", "args"),
    [
        ("ls %F", ["ls"]),
        ("/usr/bin/ls --color %u %i %c %k", ["/usr/bin/ls", "--color"]),
        ('"/opt/My App/run" --x=%f', ["/opt/My App/run", "--x="]),
        ('app "quoted \\"inner\\" \\$HOME \\\\ \\`x\\`"', ["app", 'quoted "inner" $HOME \\ `x`']),
        ('app ""', ["app", ""]),
        ("app 100%% done", ["app", "100%", "done"]),
        ("  spaced\targs  ", ["spaced", "args"]),
        ('app "unterminated', None),
        ('app half"quoted"', None),
        ("app %z", None),
        ("app %", None),
        ("", []),
    ],
)
def test_exec_args(line: str, args: list[str] | None) -> None:
    """Quoting and field codes per the desktop entry spec; malformed lines give None."""
    assert exec_args(line) == args


@pytest.mark.parametrize(
    ("line", "program"),
    [
        ("gnome-calculator %U", "gnome-calculator"),
        ('"/opt/My App/run" %f', "/opt/My App/run"),
        ("env LANG=C GDK_BACKEND=x11 /usr/bin/ls %u", "/usr/bin/ls"),
        ("/usr/bin/env -u DISPLAY -i FOO=1 ls", "ls"),
        ("env FOO=bar", None),
        ("%f", None),
        ("", None),
        ('"broken', None),
    ],
)
def test_exec_program(line: str, program: str | None) -> None:
    """The program is the first word, past ``env`` and its options and assignments."""
    assert exec_program(line) == program


def test_parse_dpkg_search() -> None:
    """First owner of exactly that path; diversions and other paths ignored."""
    assert parse_dpkg_search("coreutils: /bin/ls\n", "/bin/ls") == "coreutils"
    assert parse_dpkg_search("coreutils: /bin/ls\n", "/usr/bin/ls") is None
    out = (
        "diversion by dash from: /bin/sh\n"
        "diversion by dash to: /bin/sh.distrib\n"
        "local diversion from: /bin/sh\n"
        "dash: /bin/sh\n"
    )
    assert parse_dpkg_search(out, "/bin/sh") == "dash"
    assert parse_dpkg_search("diversion by dash from: /bin/sh\n", "/bin/sh") is None
    assert parse_dpkg_search("libc-bin, libc6:amd64: /sbin/ldconfig\n", "/sbin/ldconfig") == (
        "libc-bin"
    )
    assert parse_dpkg_search("libc6:amd64: /lib/x.so\n", "/lib/x.so") == "libc6:amd64"
    assert parse_dpkg_search("bash: /usr/share/doc/bash\nbash: /bin/bash\n", "/bin/bash") == "bash"
    missing = "dpkg-query: no path found matching pattern /usr/bin/ls\n"
    assert parse_dpkg_search(missing, "/usr/bin/ls") is None


def test_parse_rpm_query() -> None:
    """A bare name is an owner; rpm's sentences about unowned or missing files are not."""
    assert parse_rpm_query("coreutils\n") == "coreutils"
    assert parse_rpm_query("coreutils-single\ncoreutils\n") == "coreutils-single"
    assert parse_rpm_query("file /opt/x is not owned by any package\n") is None
    assert parse_rpm_query("error: file /opt/y: No such file or directory\n") is None
    assert parse_rpm_query("") is None


def test_parse_stat_starttime() -> None:
    """Field 22, counted after the last ``)`` because the name may contain ``) (``."""
    tail = " ".join(str(n) for n in range(3, 53)).replace("3", "S", 1)
    assert parse_stat_starttime(f"42 (sleep) {tail}\n") == "22"
    assert parse_stat_starttime(f"42 (a) b (c)) {tail}") == "22"
    assert parse_stat_starttime(f"42 (with spaces  ) {tail}") == "22"
    assert parse_stat_starttime("42 (sleep) S 1 2") is None
    assert parse_stat_starttime("no parenthesis at all") is None


# --- the package rule, on the real machine --------------------------------------------------


@needs_dpkg
@pytest.mark.parametrize("asked", ["/usr/bin/ls", "/bin/ls", "ls"])
def test_system_binary_is_package(xdg: Path, asked: str) -> None:
    """``/usr/bin/ls`` is root-owned and belongs to coreutils, however it is named."""
    ident = linux(xdg).identify(asked)
    assert (ident.kind, ident.signer, ident.path) == ("package", "coreutils", LS)
    assert ident.verifiable and ident.app == asked
    assert ident.key == linux(xdg).identify("/usr/bin/ls").key


@needs_dpkg
def test_copy_is_content(xdg: Path, tmp_path: Path) -> None:
    """A byte-identical copy elsewhere is unverified, keyed by its content."""
    copy = executable_copy(LS, tmp_path / "bin" / "ls")
    ident = linux(xdg).identify(str(copy))
    assert ident.kind == "content" and not ident.verifiable
    assert ident.key == sha256_of(copy) == sha256_of(LS)
    assert ident.path == os.path.realpath(copy)
    assert "not owned by a system package" in ident.detail


@needs_dpkg
def test_unowned_root_file_is_content(xdg: Path, tmp_path: Path) -> None:
    """Root ownership is not enough without a package, and each failed check is named."""
    tool = tmp_path / "tool"
    tool.write_bytes(b"#!/bin/sh\nexit 0\n")
    tool.chmod(0o775)
    ident = linux(xdg).identify(str(tool))
    assert ident.kind == "content"
    assert "not owned by a system package" in ident.detail
    assert "writable by group or others" in ident.detail
    if os.geteuid() != 0:
        assert "not owned by root" in ident.detail and "writable by you" in ident.detail


class FakeTools:
    """A runner answering dpkg-query / rpm from a table of path -> output line."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> tuple[int, str]:
        self.calls.append(argv)
        paths = [arg for arg in argv[1:] if arg.startswith("/")]
        lines = [self.answers.get(p, f"no path found matching pattern {p}") for p in paths]
        return (0 if all(p in self.answers for p in paths) else 1), "\n".join(lines) + "\n"


def tools_dir(tmp_path: Path, *names: str) -> str:
    """A directory holding stand-in tool files, so the platform finds them on its tool path."""
    folder = tmp_path / "tools"
    folder.mkdir(exist_ok=True)
    for name in names:
        executable_copy("/bin/true", folder / name)
    return str(folder)


@pytest.mark.skipif(not os.path.exists(LS), reason="needs /usr/bin/ls")
def test_merged_usr_twin_is_asked(xdg: Path, tmp_path: Path) -> None:
    """dpkg may record ``/bin/x`` for the file found at ``/usr/bin/x``; both are asked."""
    twin = LS.removeprefix("/usr") if LS.startswith("/usr/") else "/usr" + LS
    fake = FakeTools({twin: f"coreutils: {twin}"})
    ident = linux(xdg, run=fake, tools_path=tools_dir(tmp_path, "dpkg-query")).identify(LS)
    assert (ident.kind, ident.signer) == ("package", "coreutils")
    assert [call[1:] for call in fake.calls] == [["-S", LS, twin]]


@pytest.mark.skipif(not os.path.exists(LS), reason="needs /usr/bin/ls")
def test_rpm_when_no_dpkg(xdg: Path, tmp_path: Path) -> None:
    """Without dpkg-query, rpm is asked instead; with neither, nothing owns the file."""
    fake = FakeTools({LS: "coreutils"})
    ident = linux(xdg, run=fake, tools_path=tools_dir(tmp_path, "rpm")).identify(LS)
    assert (ident.kind, ident.signer) == ("package", "coreutils")
    assert fake.calls[0][1:] == ["-qf", "--queryformat", "%{NAME}\n", LS]
    empty = str(tmp_path / "no-tools")
    ident = linux(xdg, run=fake, tools_path=empty).identify(LS)
    assert (ident.kind, ident.detail) == ("content", "not owned by a system package")


def test_package_claim_does_not_cover_writable_place(xdg: Path, tmp_path: Path) -> None:
    """Even if a package database claims a file, a directory others may write disqualifies it."""
    copy = executable_copy("/bin/true", tmp_path / "bin" / "true")
    real = os.path.realpath(copy)
    fake = FakeTools({real: f"coreutils: {real}"})
    ident = linux(xdg, run=fake, tools_path=tools_dir(tmp_path, "dpkg-query")).identify(real)
    assert ident.kind == "content"
    assert "is writable by someone other than root" in ident.detail


def test_stamp(xdg: Path, tmp_path: Path) -> None:
    """The stamp changes on rewrite and on a mode change, and is None once the file is gone."""
    copy = executable_copy("/bin/true", tmp_path / "t")
    plat = linux(xdg, tools_path="/nonexistent")
    ident = plat.identify(str(copy))
    first = plat.stamp(ident)
    assert plat.stamp(ident) == first
    copy.chmod(0o700)
    second = plat.stamp(ident)
    assert second != first
    copy.write_bytes(copy.read_bytes() + b"\0")
    assert plat.stamp(ident) not in (first, second)
    copy.unlink()
    assert plat.stamp(ident) is None


# --- resolution -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "asked", ["org.example.Lister", "ORG.EXAMPLE.LISTER", "lister", "Auflister"]
)
def test_desktop_entry_by_id_or_name(xdg: Path, asked: str) -> None:
    """File id and any Name / Name[xx] match, ignoring case; the entry is recorded."""
    path = entry(
        xdg / "system",
        "org.example.Lister.desktop",
        "Name=Lister\nName[de]=Auflister\nExec=ls %F\n",
    )
    ident = linux(xdg, tools_path="/nonexistent").identify(asked)
    assert (ident.path, ident.bundle) == (LS, str(path))


@pytest.mark.parametrize(
    "body",
    [
        'Exec="/usr/bin/ls" --color %U\n',
        "Exec=env LANG=C FOO=bar /usr/bin/ls %u\n",
        "TryExec=/usr/bin/ls\nExec=something-missing %f\n",
        "Exec=/usr/bin/ls\nX-Other=1\n[Desktop Action x]\nExec=/bin/false\n",
    ],
)
def test_desktop_entry_exec_forms(xdg: Path, body: str) -> None:
    """Quoted programs, field codes, ``env`` prefixes and TryExec all lead to the program."""
    entry(xdg / "home", "lister.desktop", "Name=Lister\n" + body)
    assert linux(xdg, tools_path="/nonexistent").identify("Lister").path == LS


def test_desktop_entry_quoted_path_with_space(xdg: Path, tmp_path: Path) -> None:
    """A quoted path with a space resolves to that file."""
    program = executable_copy("/bin/true", tmp_path / "My Tools" / "run")
    entry(xdg / "home", "mine.desktop", f'Name=Mine\nExec="{program}" %f\n')
    ident = linux(xdg, tools_path="/nonexistent").identify("mine")
    assert (ident.path, ident.kind) == (os.path.realpath(program), "content")


def test_desktop_entry_precedence_and_subdirs(xdg: Path, tmp_path: Path) -> None:
    """``XDG_DATA_HOME`` shadows the same id below; ``kde/x.desktop`` has the id ``kde-x``."""
    mine = executable_copy("/bin/true", tmp_path / "mine")
    entry(xdg / "home", "tool.desktop", f"Name=Tool\nExec={mine}\n")
    entry(xdg / "system", "tool.desktop", "Name=Tool\nExec=/usr/bin/ls\n")
    entry(xdg / "system", "kde/kt.desktop", "Name=KDE Tool\nExec=/usr/bin/ls\n")
    plat = linux(xdg, tools_path="/nonexistent")
    assert plat.identify("tool").path == os.path.realpath(mine)
    assert plat.identify("kde-kt").path == LS
    assert plat.identify("KDE tool").path == LS


@pytest.mark.parametrize("flag", ["NoDisplay=true", "Hidden=true"])
def test_hidden_entries_match_only_by_id(xdg: Path, flag: str) -> None:
    """Entries hidden from menus are not found by name, but still by file id."""
    entry(xdg / "system", "org.example.Secret.desktop", f"Name=Secret Lister\n{flag}\nExec=ls\n")
    plat = linux(xdg, tools_path="/nonexistent")
    with pytest.raises(IdentityUnavailable, match="install it or give the full path"):
        plat.identify("Secret Lister")
    assert plat.identify("org.example.Secret").path == LS


@pytest.mark.parametrize(
    "body",
    [
        "Exec=/usr/bin/flatpak run --branch=stable --arch=x86_64 --command=gnome-calculator org.gnome.Calculator\nX-Flatpak=org.gnome.Calculator\n",
        "Exec=/usr/bin/flatpak run org.gnome.Calculator\n",
        "Exec=/var/lib/flatpak/exports/bin/org.gnome.Calculator\n",
        "Exec=env BAMF_DESKTOP_FILE_HINT=/var/lib/snapd/desktop/applications/calc.desktop /snap/bin/calc %U\n",
    ],
)
def test_sandboxed_apps_are_refused(xdg: Path, body: str) -> None:
    """Flatpak and Snap launchers are not the app: refused with an explanation."""
    entry(xdg / "system", "org.gnome.Calculator.desktop", "Name=Calculator\n" + body)
    with pytest.raises(IdentityUnavailable, match="sandbox, which is not supported yet"):
        linux(xdg, tools_path="/nonexistent").identify("Calculator")


def test_shell_launchers_are_refused(xdg: Path) -> None:
    """``sh -c ...`` hides the real program, so the entry cannot name an app."""
    entry(xdg / "system", "wrapped.desktop", 'Name=Wrapped\nExec=sh -c "ls; true"\n')
    with pytest.raises(IdentityUnavailable, match="shell"):
        linux(xdg, tools_path="/nonexistent").identify("Wrapped")


def test_desktop_file_path(xdg: Path, tmp_path: Path) -> None:
    """An absolute path to a .desktop file is read directly."""
    path = entry(tmp_path / "loose", "x.desktop", "Name=X\nExec=/usr/bin/ls %f\n")
    ident = linux(xdg, tools_path="/nonexistent").identify(str(path))
    assert (ident.path, ident.bundle) == (LS, str(path))


def test_unresolvable(xdg: Path, tmp_path: Path) -> None:
    """Unknown names, relative paths and non-executables are refused with advice."""
    plat = linux(xdg, tools_path="/nonexistent")
    with pytest.raises(IdentityUnavailable, match="install it or give the full path"):
        plat.identify("surely-not-an-installed-program")
    with pytest.raises(IdentityUnavailable, match="relative path"):
        plat.identify("bin/ls")
    data = tmp_path / "data.txt"
    data.write_text("not a program")
    with pytest.raises(IdentityUnavailable, match="not an executable file"):
        plat.identify(str(data))
    with pytest.raises(IdentityUnavailable, match="not an executable file"):
        plat.identify(str(tmp_path / "missing"))
    entry(xdg / "system", "empty.desktop", "Name=Empty\nExec=\n")
    with pytest.raises(IdentityUnavailable, match="no usable Exec"):
        plat.identify("Empty")


# --- running instances ----------------------------------------------------------------------


def wait_for_instance(plat: LinuxPlatform, ident: AppIdentity, deadline: float = 10.0) -> Instance:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        found = plat.instance(ident)
        if found is not None:
            return found
        time.sleep(0.02)  # the child may not have reached exec() yet
    raise AssertionError("the child process never showed up in /proc")


def test_instance_of_real_process(xdg: Path, tmp_path: Path) -> None:
    """A child started from a copied executable is found, also after the file is deleted."""
    copy = executable_copy(os.path.realpath("/bin/sleep"), tmp_path / "napper")
    plat = linux(xdg)
    ident = plat.identify(str(copy))
    assert plat.instance(ident) is None
    proc = subprocess.Popen([str(copy), "30"])
    try:
        found = wait_for_instance(plat, ident)
        assert found.pid == proc.pid
        assert plat.instance(ident) == found
        assert found.token == f"{proc.pid}@{found.started}"
        copy.unlink()  # /proc now shows "<path> (deleted)"
        assert plat.instance(ident) == found
    finally:
        proc.kill()
        proc.wait()
    assert plat.instance(ident) is None


def test_instance_in_fake_proc(xdg: Path, tmp_path: Path) -> None:
    """Lowest matching pid wins; other programs, junk entries and vanished files are skipped."""
    proc = tmp_path / "proc"
    tail = " ".join(str(n) for n in range(3, 53)).replace("3", "S", 1)

    def process(pid: str, exe: str, stat: str | None) -> None:
        (proc / pid).mkdir(parents=True)
        (proc / pid / "exe").symlink_to(exe)
        if stat is not None:
            (proc / pid / "stat").write_text(stat)

    process("300", LS, f"300 (ls) {tail}")
    process("120", LS, f"120 (l s) ) {tail}".replace(" 22 ", " 777 "))
    process("90", LS, None)  # exited between readlink and reading stat
    process("80", "/usr/bin/other", f"80 (other) {tail}")
    (proc / "self").mkdir()
    plat = linux(xdg, proc=str(proc))
    ident = plat.identify(LS)
    assert plat.instance(ident) == Instance(120, "777")
    assert linux(xdg, proc=str(tmp_path / "no-proc")).instance(ident) is None
