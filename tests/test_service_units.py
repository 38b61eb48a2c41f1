"""The systemd units, the LaunchAgent and ``deskhandctl service install|uninstall``.

Static validation follows what works without a service manager on the CI machine:
``systemd-analyze --user verify`` for the units (package ``systemd``), and for the plist
``plistlib``, a binary round trip, ``launchd_check`` and ``xmllint --valid`` against the
local DTD in ``fixtures/plist`` (package ``libxml2-utils``). Missing tools fail these tests on
Linux instead of skipping them, so a CI image without them cannot pass silently. Each check
also has a negative control showing it can fail.

The install tests point HOME, XDG_CONFIG_HOME, XDG_RUNTIME_DIR and TMPDIR at a temporary
directory, and put fake ``systemctl`` / ``launchctl`` scripts (or none) first on PATH, so
they never touch the real user session.
"""

from __future__ import annotations

import os
import plistlib
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from deskhandctl.__main__ import main
from deskhandctl.setup import service
from deskhandctl.setup import units as _units
from launchd_check import problems

from deskhand_d import paths

REPO = Path(__file__).resolve().parents[1]
CATALOG = REPO / "fixtures" / "plist" / "catalog.xml"
HEADER = re.compile(r"^=== would (write|remove|create directory) (.+?)(?: \(mode (\d+)\))? ===$")


def service_cli(*words: str) -> int:
    """``deskhandctl service WORDS...`` in this process, through the CLI's one parser."""
    return main(["service", *words])


def _tool(name: str, package: str) -> str:
    found = shutil.which(name)
    if found is None:
        if name == "systemd-analyze" and sys.platform == "darwin":
            pytest.skip("systemd units are verified on Linux CI")
        pytest.fail(f"{name} is missing: install the Debian package {package!r}")
    return found


def analyze(tmp_path: Path, *units: Path) -> tuple[int, str]:
    """``systemd-analyze --user verify`` in a throwaway environment: (exit status, output)."""
    exe = _tool("systemd-analyze", "systemd")
    sandbox = tmp_path / "analyze"
    for sub in ("run", "home", "config"):
        (sandbox / sub).mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "XDG_RUNTIME_DIR": str(sandbox / "run"),
        "HOME": str(sandbox / "home"),
        "XDG_CONFIG_HOME": str(sandbox / "config"),
        "SYSTEMD_COLORS": "0",
    }
    done = subprocess.run(
        [exe, "--user", "verify", "--man=no", *map(str, units)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).strip()


def write_units(where: Path, service_text: str) -> tuple[Path, Path]:
    where.mkdir(parents=True, exist_ok=True)
    unit, sock = where / paths.SYSTEMD_SERVICE, where / paths.SYSTEMD_SOCKET
    unit.write_text(service_text)
    sock.write_text(_units.render_socket())
    return unit, sock


def xmllint(path: Path, catalog: Path | None = CATALOG) -> tuple[int, str]:
    """``xmllint --noout --nonet --valid`` with the local plist DTD: (exit status, output)."""
    exe = _tool("xmllint", "libxml2-utils")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if catalog is not None:
        env["XML_CATALOG_FILES"] = str(catalog)
    done = subprocess.run(
        [exe, "--noout", "--nonet", "--valid", str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).strip()


def rendered_plist(command: list[str] | None = None) -> str:
    return _units.render_plist(
        command or service.daemon_command(),
        "/Users/someone/tmp/deskhand/deskhand.sock",
        "/Users/someone/Library/Logs/Deskhand",
    )


# --- the checked-in copies -----------------------------------------------------------------


def test_repository_copies_match_the_units_module() -> None:
    """systemd/ and launchd/ hold byte-identical copies of the _units templates."""
    files = _units.canonical_files()
    assert set(files) == {
        "systemd/deskhand.service",
        "systemd/deskhand.socket",
        "launchd/dev.deskhand.daemon.plist",
    }
    for rel, text in files.items():
        assert (REPO / rel).read_bytes() == text.encode("utf-8"), (
            f"{rel} is stale: run .venv/bin/python -m deskhandctl.setup.units"
        )


def test_templates_name_the_shared_constants() -> None:
    """Unit names, label and socket name come from deskhand_d.paths, not retyped strings."""
    assert f"Requires={paths.SYSTEMD_SOCKET}" in _units.SERVICE_TEMPLATE
    assert f"Also={paths.SYSTEMD_SOCKET}" in _units.SERVICE_TEMPLATE
    assert f"Service={paths.SYSTEMD_SERVICE}" in _units.SOCKET_TEMPLATE
    assert f"ListenStream=%t/deskhand/{paths.SOCKET_NAME}" in _units.SOCKET_TEMPLATE
    job = plistlib.loads(_units.PLIST_TEMPLATE.encode())
    assert job["Label"] == paths.LAUNCHD_LABEL
    assert f"{paths.LAUNCHD_LABEL}.plist" == _units.PLIST_NAME


# --- systemd ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(service.daemon_command(), id="console-script"),
        pytest.param([sys.executable, "-P", "-m", "deskhand_d"], id="python-m"),
    ],
)
def test_rendered_units_pass_systemd_analyze(tmp_path: Path, command: list[str]) -> None:
    """The units rendered with this venv's daemon command verify with no output at all."""
    unit, sock = write_units(tmp_path / "units", _units.render_service(command))
    assert analyze(tmp_path, unit, sock) == (0, "")
    service_text = unit.read_text()
    assert "Type=notify\n" in service_text
    assert "NotifyAccess=main\n" in service_text
    assert f"ExecStart={' '.join(command)}\n" in service_text


def test_service_unit_settings() -> None:
    """The service has the restart, stop and hardening settings the daemon relies on."""
    lines = set(_units.render_service(["/usr/bin/deskhand-d"]).splitlines())
    for want in (
        "Restart=on-failure",
        "TimeoutStopSec=10",
        "UMask=0077",
        "NoNewPrivileges=yes",
        "PrivateTmp=no",
        "MemoryDenyWriteExecute=no",
        "WantedBy=default.target",
    ):
        assert want in lines
    # These would make the home directory read-only for apps the daemon launches.
    assert not any(line.startswith(("ProtectSystem=", "ProtectHome=")) for line in lines)
    socket_lines = set(_units.render_socket().splitlines())
    for want in ("SocketMode=0600", "DirectoryMode=0700", "RemoveOnStop=yes"):
        assert want in socket_lines
    assert "WantedBy=sockets.target" in socket_lines


BROKEN_EXECSTART = {
    "relative": "ExecStart=deskhand-not-absolute",
    "missing-binary": "ExecStart=/nonexistent/bin/deskhand-d",
    "no-execstart": "",
    "unrendered-template": f"ExecStart={_units.DESKHAND_D}",
}


@pytest.mark.parametrize("replacement", BROKEN_EXECSTART.values(), ids=BROKEN_EXECSTART.keys())
def test_systemd_analyze_rejects_a_bad_execstart(tmp_path: Path, replacement: str) -> None:
    """Negative control: a relative, missing or absent ExecStart fails verification."""
    good = _units.render_service(service.daemon_command())
    broken = re.sub(r"^ExecStart=.*$", replacement, good, count=1, flags=re.MULTILINE)
    assert broken != good
    status, output = analyze(tmp_path, *write_units(tmp_path / "units", broken))
    assert status != 0
    assert output


def test_systemd_analyze_output_alone_fails_the_check(tmp_path: Path) -> None:
    """Negative control: a misspelt key exits 0 but prints a warning, so output must count."""
    good = _units.render_service(service.daemon_command())
    broken = good.replace("Restart=on-failure", "Restartt=on-failure")
    status, output = analyze(tmp_path, *write_units(tmp_path / "units", broken))
    assert status == 0
    assert "Restartt" in output


@pytest.mark.parametrize("dirname", ["with space", "100%", "semi;colon", "ümlaut"])
def test_unusual_install_paths_are_quoted_for_systemd(tmp_path: Path, dirname: str) -> None:
    """Spaces, '%' and ';' in the venv path are quoted or escaped so the unit still verifies."""
    exe = tmp_path / dirname / "bin" / "deskhand-d"
    exe.parent.mkdir(parents=True)
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    unit, sock = write_units(tmp_path / "units", _units.render_service([str(exe)]))
    assert analyze(tmp_path, unit, sock) == (0, "")


@pytest.mark.parametrize(
    "command",
    [
        ["deskhand-d"],
        [],
        ["/opt/it's/deskhand-d"],
        ["/opt/back\\slash/deskhand-d"],
        ["/opt/$HOME/deskhand-d"],
        ["/opt/new\nline/deskhand-d"],
    ],
    ids=["relative", "empty", "quote", "backslash", "dollar", "newline"],
)
def test_render_service_refuses_unusable_commands(command: list[str]) -> None:
    """Commands systemd would reject or misread raise RenderError instead of a bad unit."""
    with pytest.raises(_units.RenderError):
        _units.render_service(command)


# --- launchd ---------------------------------------------------------------------------------


def test_checked_in_plist_is_valid() -> None:
    """The template parses, has the right key types and is valid against the plist DTD."""
    path = REPO / "launchd" / _units.PLIST_NAME
    assert problems(plistlib.loads(path.read_bytes()), rendered=False) == []
    assert xmllint(path) == (0, "")


def test_rendered_plist_round_trips_and_validates(tmp_path: Path) -> None:
    """The rendered plist survives XML and binary round trips and every static check."""
    from deskhand_d.activation import LAUNCHD_SOCKET_NAME

    command = service.daemon_command()
    text = rendered_plist(command)
    job = plistlib.loads(text.encode())
    assert plistlib.loads(plistlib.dumps(job, fmt=plistlib.FMT_BINARY)) == job
    assert plistlib.loads(plistlib.dumps(job, fmt=plistlib.FMT_XML)) == job
    assert problems(job) == []
    target = tmp_path / _units.PLIST_NAME
    target.write_text(text)
    assert xmllint(target) == (0, "")
    assert job["Label"] == paths.LAUNCHD_LABEL
    assert job["ProgramArguments"] == command
    assert job["RunAtLoad"] is True
    # Restarted at once only after a crash: an exit with a status (bad config, a socket launchd
    # did not hand over) waits for the next connection instead of looping.
    assert job["KeepAlive"] == {"Crashed": True}
    listener = job["Sockets"][LAUNCHD_SOCKET_NAME]
    assert listener == {
        "SockPathName": "/Users/someone/tmp/deskhand/deskhand.sock",
        "SockPathMode": 0o600,
    }
    assert job["StandardErrorPath"] == "/Users/someone/Library/Logs/Deskhand/deskhand-d.log"


def test_plist_escapes_xml_metacharacters() -> None:
    """Paths with &, <, > and quotes come back unchanged from the rendered plist."""
    odd = "/Users/a&b/<x>/\"q'/deskhand-d"
    job = plistlib.loads(rendered_plist([odd, "-P", "-m", "deskhand_d"]).encode())
    assert job["ProgramArguments"] == [odd, "-P", "-m", "deskhand_d"]


def test_render_plist_refuses_relative_paths() -> None:
    """A relative socket path or log directory raises RenderError."""
    with pytest.raises(_units.RenderError):
        _units.render_plist(["/bin/deskhand-d"], "deskhand.sock", "/Users/x/Library/Logs")
    with pytest.raises(_units.RenderError):
        _units.render_plist(["/bin/deskhand-d"], "/tmp/deskhand.sock", "Logs")


def _mutate(job: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copy: dict[str, Any] = plistlib.loads(plistlib.dumps(job))
    change(copy)
    return copy


BAD_JOBS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "integer-label": (lambda j: j.update(Label=7), "Label"),
    "string-keepalive": (lambda j: j.update(KeepAlive="yes"), "KeepAlive"),
    "string-mode": (
        lambda j: j["Sockets"]["Listeners"].update(SockPathMode="0600"),
        "SockPathMode",
    ),
    "misspelt-key": (lambda j: j.update(RunAtLogin=True), "RunAtLogin"),
    "relative-program": (lambda j: j.update(ProgramArguments=["deskhand-d"]), "absolute"),
    "bad-process-type": (lambda j: j.update(ProcessType="Fast"), "ProcessType"),
    "env-not-string": (lambda j: j.update(EnvironmentVariables={"X": 1}), "EnvironmentVariables"),
    "no-program": (lambda j: j.pop("ProgramArguments"), "ProgramArguments"),
    "placeholder-left": (
        lambda j: j.update(StandardOutPath=_units.LOG_DIR + "/x.log"),
        "@LOG_DIR@",
    ),
}


@pytest.mark.parametrize(("change", "mentions"), BAD_JOBS.values(), ids=BAD_JOBS.keys())
def test_launchd_check_flags_wrong_types(
    change: Callable[[dict[str, Any]], None], mentions: str
) -> None:
    """Negative control: launchd_check reports a wrong type, unknown key or leftover path."""
    job = plistlib.loads(rendered_plist().encode())
    found = problems(_mutate(job, change))
    assert found
    assert any(mentions in p for p in found), found


BROKEN_XML = {
    "tag-mismatch": ("<string>dev.deskhand.daemon</string>", "<string>dev.deskhand.daemon</strin>"),
    "key-after-key": ("<key>RunAtLoad</key>\n", "<key>RunAtLoad</key>\n  <key>Extra</key>\n"),
    "unknown-element": ("<true/>", "<yes/>"),
}


@pytest.mark.parametrize(("old", "new"), BROKEN_XML.values(), ids=BROKEN_XML.keys())
def test_xmllint_rejects_broken_plists(tmp_path: Path, old: str, new: str) -> None:
    """Negative control: xmllint with the local DTD fails malformed or off-grammar plists."""
    text = rendered_plist()
    assert old in text
    target = tmp_path / "broken.plist"
    target.write_text(text.replace(old, new, 1))
    status, output = xmllint(target)
    assert status != 0
    assert output


def test_plistlib_rejects_malformed_xml() -> None:
    """Negative control: plistlib refuses a plist whose tags do not match."""
    text = rendered_plist().replace("</string>", "</strin>", 1)
    with pytest.raises(Exception, match=r"mismatched tag|unexpected|invalid"):
        plistlib.loads(text.encode())


def test_xmllint_needs_the_local_catalog(tmp_path: Path) -> None:
    """Without the catalog xmllint finds no DTD offline, so passing proves the DTD was used."""
    target = tmp_path / _units.PLIST_NAME
    target.write_text(rendered_plist())
    status, output = xmllint(target, catalog=None)
    assert status != 0
    assert "no DTD found" in output


@pytest.mark.skipif(sys.platform != "darwin", reason="plutil exists only on macOS")
def test_plutil_lints_the_rendered_plist(tmp_path: Path) -> None:
    """On macOS, Apple's own linter accepts the rendered plist."""
    target = tmp_path / _units.PLIST_NAME
    target.write_text(rendered_plist())
    done = subprocess.run(
        ["plutil", "-lint", str(target)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- deskhandctl service ---------------------------------------------------------------------


@dataclass
class Sandbox:
    root: Path
    home: Path
    config: Path
    runtime: Path
    tmpdir: Path
    bin: Path

    def snapshot(self) -> set[str]:
        return {str(p.relative_to(self.root)) for p in self.root.rglob("*")}

    def fake(self, name: str, script: str) -> Path:
        """Put an executable ``name`` running ``script`` (sh) on PATH; calls go to calls.log."""
        exe = self.bin / name
        exe.write_text(
            f'#!/bin/sh\nprintf "%s\\n" "{name} $*" >> "{self.root}/calls.log"\n{script}\n'
        )
        exe.chmod(0o755)
        return exe

    def calls(self) -> list[str]:
        log = self.root / "calls.log"
        return log.read_text().splitlines() if log.exists() else []


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """A private HOME / XDG tree and a PATH holding only fake tools, under a short path (like a
    real home's, so the macOS socket fits under ~/Library as it would on a Mac)."""
    top = Path(tempfile.mkdtemp(prefix="dh", dir="/tmp"))
    root = top / "box"
    sb = Sandbox(root, root / "home", root / "config", root / "run", root / "T", root / "bin")
    for d in (sb.home, sb.config, sb.runtime, sb.tmpdir, sb.bin):
        d.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(sb.home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(sb.config))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(sb.runtime))
    monkeypatch.setenv("TMPDIR", str(sb.tmpdir))
    monkeypatch.setenv("PATH", str(sb.bin))
    monkeypatch.delenv("DESKHAND_SOCKET", raising=False)
    monkeypatch.setattr(service, "RETRY_PAUSE_S", 0.0)
    try:
        yield sb
    finally:
        shutil.rmtree(top, ignore_errors=True)


def macos_sock(home: Path) -> Path:
    return home / "Library" / "Application Support" / "Deskhand" / "run" / "deskhand.sock"


def blocks(output: str) -> dict[str, tuple[str, str, str]]:
    """Dry-run output by path: (verb, mode, file content that follows the header)."""
    found: dict[str, tuple[str, str, str]] = {}
    key: str | None = None
    for line in output.splitlines(keepends=True):
        if line.startswith("=== "):
            m = HEADER.match(line.rstrip("\n"))
            key = m.group(2) if m else None
            if m:
                found[m.group(2)] = (m.group(1), m.group(3) or "", "")
        elif key is not None:
            verb, mode, text = found[key]
            found[key] = (verb, mode, text + line)
    return found


def test_linux_dry_run_prints_units_and_changes_nothing(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """install --dry-run on Linux prints both units in full and the commands, writing nothing."""
    before = box.snapshot()
    assert service_cli("install", "--dry-run", "--platform", "linux") == 0
    out = capsys.readouterr().out
    assert box.snapshot() == before
    unit_dir = box.config / "systemd" / "user"
    got = blocks(out)
    assert got == {
        str(unit_dir / "deskhand.service"): (
            "write",
            "0644",
            _units.render_service(service.daemon_command()),
        ),
        str(unit_dir / "deskhand.socket"): ("write", "0644", _units.render_socket()),
    }
    assert all(Path(p).is_absolute() for p in got)
    assert (
        "$ systemctl --user daemon-reload\n$ systemctl --user enable --now deskhand.socket\n" in out
    )
    assert box.calls() == []


def test_macos_dry_run_prints_plist_and_changes_nothing(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """install --dry-run --platform macos prints the rendered plist and launchctl commands."""
    before = box.snapshot()
    assert service_cli("install", "--dry-run", "--platform", "macos") == 0
    out = capsys.readouterr().out
    assert box.snapshot() == before
    plist = box.home / "Library" / "LaunchAgents" / "dev.deskhand.daemon.plist"
    logs = box.home / "Library" / "Logs" / "Deskhand"
    sock = macos_sock(box.home)
    got = blocks(out)
    expected = _units.render_plist(service.daemon_command(), str(sock), str(logs))
    assert got[str(plist)] == ("write", "0644", expected)
    assert got[str(logs)] == ("create directory", "0700", "")
    assert got[str(sock.parent)] == ("create directory", "0700", "")
    job = plistlib.loads(expected.encode())
    assert problems(job) == []
    uid = os.getuid()
    assert f"$ launchctl bootstrap gui/{uid} {plist}\n" in out
    assert box.calls() == []


def test_macos_socket_follows_paths_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """The macOS socket lives under ~/Library (not the temp folder macOS may clean), whatever
    TMPDIR says; the plist and the clients compute the same path."""
    env = {"TMPDIR": "/var/folders/ab/cd/T/", "HOME": "/Users/x"}
    rendered_off_mac = _units.macos_socket(env)
    assert rendered_off_mac == macos_sock(Path("/Users/x"))
    monkeypatch.setattr(paths, "is_macos", lambda: True)
    assert paths.runtime_dir(env) / paths.SOCKET_NAME == rendered_off_mac
    assert paths.default_socket({"HOME": "/Users/x"}) == rendered_off_mac  # no TMPDIR needed


def test_macos_long_home_uses_the_users_own_temp_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """A home too long for a socket under ~/Library: $TMPDIR, else confstr(65537), the
    per-user temp folder, and never the shared /tmp."""
    monkeypatch.setattr(paths, "is_macos", lambda: True)
    long_home = "/Users/" + "x" * 60
    with_tmpdir = {"HOME": long_home, "TMPDIR": "/var/folders/ab/cd/T/"}
    assert paths.runtime_dir_str(with_tmpdir) == "/var/folders/ab/cd/T/deskhand"
    asked: list[int] = []

    def confstr(name: int) -> str:
        asked.append(name)
        return "/var/folders/zz/yy/T/"

    monkeypatch.setattr(paths.os, "confstr", confstr)
    assert paths.runtime_dir_str({"HOME": long_home}) == "/var/folders/zz/yy/T/deskhand"
    assert asked == [65537]
    assert paths.runtime_dir_str({"HOME": "/Users/x"}) == str(macos_sock(Path("/Users/x")).parent)
    assert asked == [65537]  # the short ~/Library path needs no temp folder at all

    def fails(name: int) -> str:
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(paths.os, "confstr", fails)
    nowhere = paths.runtime_dir_str({"HOME": long_home})
    assert not nowhere.startswith("/tmp") and nowhere.startswith(long_home)


def test_activation_failure_under_our_agent_stops_once_with_the_reason() -> None:
    """Started by our LaunchAgent without its socket, the daemon stops with exit 78 and a line
    saying why and what to do, instead of binding launchd's path (and finding it "already
    running"); the plist restarts only crashes, so this does not loop. Started any other way,
    binding the socket itself stays the right thing."""
    from deskhand_d.activation import activation_failed

    assert activation_failed(None, "no socket") is None
    assert activation_failed("application.com.apple.Terminal.1234", "no socket") is None
    refusal = activation_failed(paths.LAUNCHD_LABEL, 'launch_activate_socket("Listeners"): ESRCH')
    assert refusal is not None and refusal.exit_code == 78
    assert "did not hand over its socket" in refusal.message and "ESRCH" in refusal.message
    assert "deskhandctl service install" in refusal.message
    job = plistlib.loads(_units.PLIST_TEMPLATE.encode())
    assert job["KeepAlive"] == {"Crashed": True}  # an exit status is never restarted at once


def test_plist_refuses_a_socket_launchd_could_not_create() -> None:
    """The 104-byte sun_path limit is checked when the plist is written (103 bytes fit)."""
    command = ["/opt/deskhand/bin/deskhand-d"]
    fits = "/" + "s" * 102
    assert plistlib.loads(_units.render_plist(command, fits, "/logs").encode())
    with pytest.raises(_units.SocketPathTooLong, match=r"socket_path_too_long.*104 bytes.*103"):
        _units.render_plist(command, fits + "s", "/logs")


def test_macos_install_refuses_a_socket_path_too_long(
    box: Sandbox, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A home too long for a socket and no temp folder to fall back to: install says so with
    its code, writes nothing and runs nothing."""
    long_home = box.root / ("h" * 80)
    long_home.mkdir()
    monkeypatch.setenv("HOME", str(long_home))
    monkeypatch.delenv("TMPDIR")
    before = box.snapshot()
    assert service_cli("install", "--platform", "macos") == 1
    err = capsys.readouterr().err
    assert "socket_path_too_long" in err and "at most 103" in err
    assert box.snapshot() == before and box.calls() == []


def test_daemon_command_prefers_the_console_script(tmp_path: Path) -> None:
    """The deskhand-d script next to the interpreter wins; otherwise python -P -m deskhand_d."""
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text("")
    assert service.daemon_command(str(python)) == [str(python), "-P", "-m", "deskhand_d"]
    script = python.with_name("deskhand-d")
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert service.daemon_command(str(python)) == [str(script)]
    real = service.daemon_command()
    assert Path(real[0]).is_absolute() and os.access(real[0], os.X_OK)


def test_install_without_systemctl_writes_nothing_and_explains(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """No systemctl on PATH: exit 69, no file or directory made, on-demand start named."""
    before = box.snapshot()
    assert service_cli("install", "--platform", "linux") == service.NO_MANAGER == 69
    out, err = capsys.readouterr()
    assert box.snapshot() == before
    assert out == ""
    assert "nothing was installed" in err and "there is no systemctl on PATH" in err
    assert "deskhandctl starts deskhand-d on demand (try 'deskhandctl status')" in err
    assert "where 'systemctl --user show-environment' works" in err
    assert "enable --now" not in err  # no command that cannot work here
    assert "earlier installation" not in err

    assert service_cli("uninstall", "--platform", "linux") == 0
    assert "nothing to remove" in capsys.readouterr().out


def test_install_when_the_user_manager_does_not_answer(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """systemctl present but no user bus: the bus error is quoted and nothing is written."""
    box.fake("systemctl", 'echo "Failed to connect to bus: No medium found" >&2; exit 1')
    before = box.snapshot()
    assert service_cli("install", "--platform", "linux") == 69
    err = capsys.readouterr().err
    assert (
        "the service manager cannot be reached ('systemctl --user show-environment' failed: "
        "Failed to connect to bus: No medium found)" in err
    )
    assert box.calls() == ["systemctl --user show-environment"]
    assert box.snapshot() == before | {"calls.log"}


def test_install_without_a_manager_keeps_an_earlier_installation(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """Units from an earlier install are neither rewritten nor removed; the message names them."""
    box.fake("systemctl", "exit 1")
    unit, sock = write_units(box.config / "systemd" / "user", "[Unit]\n# older\n")
    assert service_cli("install", "--platform", "linux") == 69
    err = capsys.readouterr().err
    assert unit.read_text() == "[Unit]\n# older\n" and sock.is_file()
    assert f"left as they were: {unit}, {sock}. 'deskhandctl service uninstall' removes" in err


def test_uninstall_without_a_manager_removes_the_files_and_says_so(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """The files go (exit 0); the output says the manager was not told, never that they stay."""
    box.fake("systemctl", 'echo "Failed to connect to bus: No medium found" >&2; exit 1')
    unit_dir = box.config / "systemd" / "user"
    unit, sock = write_units(unit_dir, _units.render_service(service.daemon_command()))
    wants = unit_dir / "sockets.target.wants" / "deskhand.socket"
    wants.parent.mkdir()
    wants.symlink_to(sock)
    assert service_cli("uninstall", "--platform", "linux") == 0
    out, err = capsys.readouterr()
    assert list(unit_dir.rglob("deskhand*")) == []
    assert not os.path.lexists(wants)
    assert f"removed {unit}\nremoved {sock}\nremoved {wants}\n" in out
    assert "units are removed" in out and "on demand again" in out
    assert "Failed to connect to bus: No medium found), so it was not told." in err
    assert "stop it there with:\n  systemctl --user stop deskhand.socket deskhand.service\n" in err
    assert "in place" not in out + err
    assert box.calls() == ["systemctl --user show-environment"]


def test_macos_install_without_a_gui_session_writes_nothing(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """No GUI domain (ssh into a Mac): no plist, no log or socket directory, exit 69."""
    box.fake("launchctl", 'echo "Could not find domain for port identifier" >&2; exit 113')
    before = box.snapshot()
    assert service_cli("install", "--platform", "macos") == 69
    err = capsys.readouterr().err
    assert box.snapshot() == before | {"calls.log"}
    assert "Could not find domain for port identifier" in err
    assert f"where 'launchctl print gui/{os.getuid()}' works" in err
    assert box.calls() == [f"launchctl print gui/{os.getuid()}"]


def test_install_and_uninstall_drive_systemctl(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a working systemctl, install enables the socket and uninstall disables and cleans up."""
    box.fake("systemctl", "exit 0")
    assert service_cli("install", "--platform", "linux") == 0
    out = capsys.readouterr().out
    assert box.calls() == [
        "systemctl --user show-environment",
        "systemctl --user daemon-reload",
        "systemctl --user enable --now deskhand.socket",
    ]
    assert f"listens on {box.runtime / 'deskhand' / 'deskhand.sock'}" in out
    unit_dir = box.config / "systemd" / "user"
    wants = unit_dir / "sockets.target.wants" / "deskhand.socket"
    wants.parent.mkdir()
    wants.symlink_to(unit_dir / "deskhand.socket")  # what a real `enable` leaves behind

    assert service_cli("uninstall", "--platform", "linux") == 0
    assert box.calls()[3:] == [
        "systemctl --user show-environment",
        "systemctl --user disable --now deskhand.socket deskhand.service",
        "systemctl --user daemon-reload",
    ]
    assert not os.path.lexists(wants)
    assert list(unit_dir.rglob("deskhand*")) == []
    assert service_cli("uninstall", "--platform", "linux") == 0
    assert "nothing to remove" in capsys.readouterr().out


def test_failed_enable_exits_nonzero_with_the_next_steps(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failing `enable --now` is reported with its message and the command to retry."""
    box.fake("systemctl", 'case "$*" in *enable*) echo "Failed to enable: boom" >&2; exit 1;; esac')
    assert service_cli("install", "--platform", "linux") == 1
    out, err = capsys.readouterr()
    assert "Failed to enable: boom" in err
    assert (
        "The files are written. To finish, fix the error above and run:\n"
        "  systemctl --user enable --now deskhand.socket" in err
    )
    assert "Deskhand is installed" not in out


def test_failed_disable_names_commands_that_still_apply(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failing `disable --now`: the files still go (exit 1), and the commands offered to
    finish work on removed files (stop, daemon-reload), unlike `disable` itself."""
    box.fake(
        "systemctl", 'case "$*" in *disable*) echo "Failed to disable: boom" >&2; exit 1;; esac'
    )
    unit_dir = box.config / "systemd" / "user"
    write_units(unit_dir, _units.render_service(service.daemon_command()))
    assert service_cli("uninstall", "--platform", "linux") == 1
    out, err = capsys.readouterr()
    assert list(unit_dir.rglob("deskhand*")) == []
    assert "Failed to disable: boom" in err
    finish = err.split("The files are removed, but the service manager did not take the step")
    assert len(finish) == 2, err
    assert finish[1] == (
        " above. To finish, fix the error and run:\n"
        "  systemctl --user stop deskhand.socket deskhand.service\n"
        "  systemctl --user daemon-reload\n"
    )
    assert "units are removed" not in out
    assert box.calls() == [
        "systemctl --user show-environment",
        "systemctl --user disable --now deskhand.socket deskhand.service",
    ]


def test_install_reports_an_unwritable_unit_directory(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """When the unit directory cannot be created, install exits 1 and runs no command."""
    box.fake("systemctl", "exit 0")
    (box.config / "systemd").write_text("a file where a directory should be")
    assert service_cli("install", "--platform", "linux") == 1
    assert "install failed" in capsys.readouterr().err
    assert box.calls() == ["systemctl --user show-environment"]


def test_socket_override_is_pointed_out(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DESKHAND_SOCKET that differs from the service's socket gets a note after install."""
    box.fake("systemctl", "exit 0")
    monkeypatch.setenv("DESKHAND_SOCKET", "/elsewhere/deskhand.sock")
    assert service_cli("install", "--platform", "linux") == 0
    assert "DESKHAND_SOCKET is set to /elsewhere/deskhand.sock" in capsys.readouterr().err


def test_macos_install_and_uninstall_drive_launchctl(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """On macOS the plist is written and bootstrapped (retrying launchd's EIO), then removed."""
    state = box.root / "bootstrapped-once"
    box.fake(
        "launchctl",
        # The first bootstrap fails the way launchd does right after a bootout.
        f'case "$1" in bootstrap) [ -e "{state}" ] || {{ : > "{state}"; '
        'echo "Bootstrap failed: 5: Input/output error" >&2; exit 5; };; esac\n'
        + _PRINTS_JOB.format(runs=1),
    )
    assert service_cli("install", "--platform", "macos") == 0
    out = capsys.readouterr().out
    uid = os.getuid()
    plist = box.home / "Library" / "LaunchAgents" / "dev.deskhand.daemon.plist"
    assert box.calls() == [
        f"launchctl print gui/{uid}",
        f"launchctl bootout gui/{uid}/dev.deskhand.daemon",
        f"launchctl enable gui/{uid}/dev.deskhand.daemon",
        f"launchctl bootstrap gui/{uid} {plist}",
        f"launchctl bootstrap gui/{uid} {plist}",
        f"launchctl print gui/{uid}/dev.deskhand.daemon",  # launchd started it: runs = 1
    ]
    job = plistlib.loads(plist.read_bytes())
    assert problems(job) == []
    logs = box.home / "Library" / "Logs" / "Deskhand"
    assert stat.S_IMODE(logs.stat().st_mode) == 0o700
    assert stat.S_IMODE(macos_sock(box.home).parent.stat().st_mode) == 0o700
    assert not (box.tmpdir / "deskhand").exists()
    assert plistlib.loads(plist.read_bytes())["Sockets"]["Listeners"]["SockPathName"] == str(
        macos_sock(box.home)
    )
    assert f"Logs: {logs / 'deskhand-d.log'}" in out
    assert "Input/output error); retrying" in out

    assert service_cli("uninstall", "--platform", "macos") == 0
    assert box.calls()[6:] == [
        f"launchctl print gui/{uid}",
        f"launchctl bootout gui/{uid}/dev.deskhand.daemon",
    ]
    assert not plist.exists()


# What `launchctl print gui/<uid>/<label>` shows of a loaded job (the fields read; the rest of
# the real text is left out). Only `print` of the job prints it.
_PRINTS_JOB = (
    'case "$1 $2" in "print gui/"*/*) printf "gui/%s/dev.deskhand.daemon = {{\\n'
    '\\tstate = not running\\n\\truns = {runs}\\n\\tlast exit code = (never exited)\\n}}\\n" '
    '"$(id -u)";; esac'
)


def test_protected_folders_on_values() -> None:
    """Desktop, Documents, Downloads and iCloud Drive under the home folder, whatever the case
    of the names; nothing else, and nothing outside the home folder."""
    home = "/Users/ana"
    found = {
        path: _units.protected_folder(path, home)
        for path in (
            "/Users/ana/Documents/deskhand/.venv/bin/deskhand-d",
            "/Users/ana/documents/venv",
            "/Users/ana/Desktop",
            "/Users/ana/Downloads/x/../venv/bin/python3",
            "/Users/ana/Library/Mobile Documents/com~apple~CloudDocs/dev/venv",
            "/Users/ana/Documentsx/venv",
            "/Users/ana/Library/Application Support/venv",
            "/Users/ana/.local/share/deskhand-venv/bin/python3",
            "/Users/ana/x/../../bob/Documents/venv",
            "/opt/Documents/venv",
        )
    }
    assert found == {
        "/Users/ana/Documents/deskhand/.venv/bin/deskhand-d": "Documents",
        "/Users/ana/documents/venv": "Documents",
        "/Users/ana/Desktop": "Desktop",
        "/Users/ana/Downloads/x/../venv/bin/python3": "Downloads",
        "/Users/ana/Library/Mobile Documents/com~apple~CloudDocs/dev/venv": (
            "iCloud Drive (~/Library/Mobile Documents)"
        ),
        "/Users/ana/Documentsx/venv": None,
        "/Users/ana/Library/Application Support/venv": None,
        "/Users/ana/.local/share/deskhand-venv/bin/python3": None,
        "/Users/ana/x/../../bob/Documents/venv": None,
        "/opt/Documents/venv": None,
    }


def test_macos_install_warns_about_a_protected_folder(
    box: Sandbox, capsys: pytest.CaptureFixture[str]
) -> None:
    """A daemon under ~/Documents: the plan carries a protected_folder warning, shown by a
    dry run, that names the folder and what to do; an installation elsewhere gets none."""
    inside = [str(box.home / "Documents" / "dev" / ".venv" / "bin" / "deskhand-d")]
    plan = service.plan_install(service.Platform.MACOS, os.environ, inside)
    assert len(plan.warnings) == 1
    service.print_dry_run(plan)
    err = capsys.readouterr().err
    assert f"protected_folder: the daemon command ({inside[0]}) is in your Documents folder" in err
    assert "a prompt naming Python" in err and "outside Desktop, Documents, Downloads" in err
    elsewhere = [str(box.root / "venv" / "bin" / "deskhand-d")]
    assert service.plan_install(service.Platform.MACOS, os.environ, elsewhere).warnings == ()
    assert service.plan_install(service.Platform.LINUX, os.environ, inside).warnings == ()


def test_background_refusal_and_runs_on_values() -> None:
    """EIO from bootstrap (and only from bootstrap) reads as a background item switched off;
    launchctl print's runs count, a pid meaning at least one run, nothing when absent."""
    bootstrap = ("launchctl", "bootstrap", "gui/501", "/p.plist")
    assert _units.background_refused(bootstrap, 5, "Bootstrap failed: 5: Input/output error")
    assert _units.background_refused(bootstrap, 1, "Bootstrap failed: 5: Input/output error")
    assert not _units.background_refused(bootstrap, 1, "Bootstrap failed: 37: Operation already")
    assert not _units.background_refused(("launchctl", "enable", "gui/501/x"), 5, "")
    never = "gui/501/dev.deskhand.daemon = {\n\tstate = not running\n\truns = 0\n}\n"
    assert _units.launchd_runs(never) == 0
    assert _units.launchd_runs(never.replace("runs = 0", "runs = 3")) == 3
    assert _units.launchd_runs("x = {\n\tpid = 812\n\tstate = running\n}\n") == 1
    assert _units.launchd_runs("Could not find service") is None


def test_macos_install_explains_eio_from_a_background_item_switched_off(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """bootstrap keeps failing with EIO: after the retries, install exits 1 and says that
    Allow in the Background is the likely cause, with where to switch it on."""
    monkeypatch.setattr(service, "BOOTSTRAP_RETRY_S", 0.0)
    box.fake(
        "launchctl",
        'case "$1" in bootstrap) echo "Bootstrap failed: 5: Input/output error" >&2; exit 5;; esac',
    )
    assert service_cli("install", "--platform", "macos") == 1
    out, err = capsys.readouterr()
    assert "background_not_allowed: launchd kept refusing to load the agent (EIO)" in err
    assert "General → Login Items" in err and "Allow in the Background" in err
    assert "plutil -lint" in err and "Deskhand is installed" not in out


def test_macos_install_explains_an_agent_launchd_never_started(
    box: Sandbox, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """bootstrap works but launchd never starts the job (runs = 0): install exits 1 with the
    same explanation instead of claiming the daemon runs."""
    monkeypatch.setattr(service, "RUN_CHECK_S", 0.0)
    monkeypatch.setattr(service, "RUN_CHECK_PAUSE_S", 0.0)
    box.fake("launchctl", _PRINTS_JOB.format(runs=0))
    assert service_cli("install", "--platform", "macos") == 1
    out, err = capsys.readouterr()
    uid = os.getuid()
    assert box.calls()[-1] == f"launchctl print gui/{uid}/dev.deskhand.daemon"
    assert "background_not_allowed: launchd loaded the agent but has not started" in err
    assert "Allow in the Background" in err and "Deskhand is installed" not in out


def test_unknown_platform_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On an OS with neither systemd nor launchd, install refuses with exit status 2."""
    monkeypatch.setattr(sys, "platform", "freebsd14")
    assert service_cli("install", "--dry-run") == 2
    assert "--platform" in capsys.readouterr().err


def test_help_and_usage_errors_return_instead_of_exiting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--help (of service and of its actions) returns 0 and a bad or missing action 2, with
    the usage of the command concerned, so the dispatcher keeps control."""
    assert service_cli("--help") == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: deskhandctl service")
    assert "install" in out and "uninstall" in out and "service manager" in out
    assert service_cli("install", "--help") == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: deskhandctl service install")
    assert "--dry-run" in out and "--platform {linux,macos}" in out
    assert service_cli("reinstall") == 2
    assert "invalid choice: 'reinstall'" in capsys.readouterr().err
    assert service_cli() == 2
    assert "deskhandctl service: error:" in capsys.readouterr().err
    assert service_cli("install", "--platform", "windows") == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: deskhandctl service install")
    assert "invalid choice: 'windows'" in err


@pytest.mark.skipif(
    not (REPO / "clients" / "deskhandctl" / "__main__.py").exists(),
    reason="clients/deskhandctl/__main__.py (the CLI dispatcher) is not written yet",
)
def test_cli_dry_run_in_a_subprocess(box: Sandbox) -> None:
    """`python -m deskhandctl service install --dry-run` prints the units and writes nothing."""
    before = box.snapshot()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "deskhandctl",
            "service",
            "install",
            "--dry-run",
            "--platform",
            "linux",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert box.snapshot() == before
    unit = box.config / "systemd" / "user" / "deskhand.service"
    assert blocks(done.stdout)[str(unit)][2] == _units.render_service(service.daemon_command())
