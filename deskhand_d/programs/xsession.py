"""A private Linux desktop: its own session bus, Xvfb or a headless GNOME compositor, the
accessibility bus and real apps.

What this owns: bringing up one throw-away graphical session that touches nothing outside its
own temporary directory, and tearing every process of it down again by PID.

* ``dbus-daemon --session`` listening on a socket inside the temporary directory (its own
  address, never the machine's session bus);
* ``Xvfb`` on a display it picks itself (``-displayfd``), so parallel runs do not collide;
  or, for a Wayland session (``session="wayland"``), PipeWire with WirePlumber and Mutter as
  a headless Wayland compositor with one virtual monitor and no XWayland (``mutter --headless
  --wayland --no-x11``), its socket named after the temporary directory, with apps told to
  draw on Wayland (``GDK_BACKEND``, ``QT_QPA_PLATFORM``); or (``session="kde"``) KDE Plasma's
  compositor, KWin, on its virtual backend;
* ``at-spi-bus-launcher --launch-immediately`` (the accessibility bus; the registry daemon is
  D-Bus-activated on that bus the first time a client asks for it);
* GSettings on the keyfile backend under a private ``XDG_CONFIG_HOME`` (no dconf, and
  gnome-calculator's currency refresh switched off so it never reaches for the network);
* GTK 4 drawing with cairo (``GSK_RENDERER``), since there is no GPU to draw with;
* apps on demand (:meth:`Desktop.launch`).

Teardown: every process started here, and everything started on their behalf (the a11y bus
daemon, the registry, apps launched by a backend under test), carries a marker variable in its
environment. :meth:`Desktop.close` terminates the PIDs it started, then sweeps ``/proc`` for any
process still carrying the marker, or naming the session's directory on its command line, and
ends those by PID too. The second test is for programs that write over their environment when
they set their process title, as Chromium does: its processes name their profile directory,
which lives under the session's, and would otherwise outlive the session.

Used by ``deskhandctl demo`` when no desktop is present, and by the tests (through
``tests/dhtest/desktop.py``) to run real apps under Xvfb. Standard library only.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

MARKER = "DESKHAND_PRIVATE_DESKTOP"
BUS_LAUNCHER = "/usr/libexec/at-spi-bus-launcher"
REQUIRED = ("dbus-daemon", "Xvfb", BUS_LAUNCHER)
WAYLAND_REQUIRED = ("dbus-daemon", "mutter", "pipewire", "wireplumber", BUS_LAUNCHER)
KDE_REQUIRED = ("dbus-daemon", "kwin_wayland", BUS_LAUNCHER)
APPS = {"gnome-calculator": "gnome-calculator", "galculator": "galculator"}
_KEYFILE = "[org/gnome/calculator]\nrefresh-interval=0\n"


class DesktopUnavailable(RuntimeError):
    """A binary the private desktop needs is missing, or a part of it did not start."""


def missing_binaries(extra: tuple[str, ...] = (), *, session: str = "x11") -> list[str]:
    """The required programs (plus ``extra``) that are not installed."""
    out = []
    required = {"wayland": WAYLAND_REQUIRED, "kde": KDE_REQUIRED}.get(session, REQUIRED)
    for name in (*required, *extra):
        found = os.access(name, os.X_OK) if name.startswith("/") else shutil.which(name)
        if not found:
            out.append(name)
    return out


class Desktop:
    """One private session. Start it with :func:`private_desktop` or :func:`start_desktop`."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.procs: list[subprocess.Popen[bytes]] = []
        self.apps: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def display(self) -> str:
        return self.env["DISPLAY"]

    @property
    def wayland(self) -> bool:
        return "WAYLAND_DISPLAY" in self.env

    def log(self, name: str) -> Path:
        return self.root / f"{name}.log"

    def spawn(self, argv: list[str], name: str, **kw: object) -> subprocess.Popen[bytes]:
        """Start a process in this session, its output going to ``<root>/<name>.log``."""
        with open(self.log(name), "ab") as log:
            proc = subprocess.Popen(  # type: ignore[call-overload]
                argv,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=kw.pop("stdout", log),
                stderr=log,
                **kw,
            )
        self.procs.append(proc)
        return proc  # type: ignore[no-any-return]

    def launch(self, app: str) -> subprocess.Popen[bytes]:
        """Start ``app`` (``gnome-calculator`` or ``galculator``) unless it already runs."""
        running = self.apps.get(app)
        if running is not None and running.poll() is None:
            return running
        argv = [APPS.get(app, app)]
        if not shutil.which(argv[0]):
            raise DesktopUnavailable(f"{argv[0]} is not installed")
        proc = self.spawn(argv, app)
        self.apps[app] = proc
        return proc

    def stop_app(self, app: str) -> None:
        proc = self.apps.pop(app, None)
        if proc is not None:
            _end([proc.pid])
            _reap(proc)

    def close(self) -> None:
        """End every process of this session by PID, then remove the temporary directory."""
        _end([p.pid for p in reversed(self.procs) if p.poll() is None])
        for proc in self.procs:
            _reap(proc)
        _end(marked_pids(self.env[MARKER], str(self.root)))
        shutil.rmtree(self.root, ignore_errors=True)


def _end(pids: list[int], grace: float = 3.0) -> None:
    """SIGTERM each PID, give them ``grace`` seconds, then SIGKILL whatever is left."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        if alive:
            time.sleep(0.02)
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    if state == "Z":  # a zombie child of ours: reap it so it stops counting
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return True


def _reap(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def marked_pids(marker: str, directory: str = "") -> list[int]:
    """PIDs of processes whose environment carries ``MARKER=marker``, or whose command line
    names ``directory`` (or a path under it), never our own."""
    needle = f"{MARKER}={marker}".encode()
    named = os.fsencode(directory.rstrip("/") + "/") if directory else b""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            if needle in environ:
                out.append(int(entry))
                continue
            if named:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmdline = f.read()
                if named in cmdline:
                    out.append(int(entry))
        except OSError:
            continue
    return out


def _base_env(root: Path, base: Mapping[str, str]) -> dict[str, str]:
    env = {
        k: v
        for k, v in base.items()
        if k not in ("NO_AT_BRIDGE", "GTK_A11Y", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")
        and not k.startswith(("AT_SPI_", MARKER))
    }
    run = root / "run"
    run.mkdir(mode=0o700)
    config = root / "config"
    settings = config / "glib-2.0" / "settings"
    settings.mkdir(parents=True)
    (settings / "keyfile").write_text(_KEYFILE)
    env.update(
        {
            MARKER: str(root),
            "XDG_RUNTIME_DIR": str(run),
            "XDG_CONFIG_HOME": str(config),
            "XDG_CACHE_HOME": str(root / "cache"),
            # Apps keep restored documents and history here (Text Editor reopens its last
            # drafts): a private desktop starts with none of the person's.
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_STATE_HOME": str(root / "state"),
            "GSETTINGS_BACKEND": "keyfile",
            "GDK_BACKEND": "x11",
        }
    )
    # Xvfb has no GPU: GTK 4's default OpenGL renderer draws through llvmpipe in software,
    # which keeps an idle gnome-calculator at 45 % of a core (2 % with cairo) and makes every
    # accessibility answer wait on it (docs/performance.md). Cairo is GTK's own renderer for
    # exactly this case; a renderer the caller chose is kept.
    env.setdefault("GSK_RENDERER", "cairo")
    return env


def start_desktop(
    *,
    apps: tuple[str, ...] = (),
    size: str = "1280x900x24",
    base: Mapping[str, str] | None = None,
    session: str = "x11",
) -> Desktop:
    """Bring a private session up (and ``apps`` in it); the caller must :meth:`~Desktop.close`.
    ``session``: ``x11`` (Xvfb), ``wayland`` (headless Mutter) or ``kde`` (KWin's virtual
    Wayland backend), see the module notes."""
    missing = missing_binaries(session=session)
    if missing:
        raise DesktopUnavailable(f"missing: {', '.join(missing)}")
    root = Path(tempfile.mkdtemp(prefix="dhdesk", dir="/tmp"))
    desk = Desktop(root, _base_env(root, os.environ if base is None else base))
    try:
        _start_bus(desk)
        if session == "wayland":
            _start_wayland(desk, size)
        elif session == "kde":
            _start_kde(desk, size)
        else:
            _start_x(desk, size)
        desk.spawn([BUS_LAUNCHER, "--launch-immediately"], "at-spi-bus-launcher")
        for app in apps:
            desk.launch(app)
    except BaseException:
        desk.close()
        raise
    return desk


def _start_bus(desk: Desktop) -> None:
    address = f"unix:path={desk.root / 'bus'}"
    bus = desk.spawn(
        ["dbus-daemon", "--session", "--nofork", f"--address={address}", "--print-address=1"],
        "dbus",
        stdout=subprocess.PIPE,
    )
    assert bus.stdout is not None
    line = bus.stdout.readline().decode().strip()
    bus.stdout.close()
    if not line:
        raise DesktopUnavailable(f"dbus-daemon did not start: {desk.log('dbus').read_text()}")
    desk.env["DBUS_SESSION_BUS_ADDRESS"] = line


def _start_x(desk: Desktop, size: str) -> None:
    read, write = os.pipe()
    try:
        desk.spawn(
            # -noreset: without it Xvfb resets when its last client leaves, and a client
            # connecting at that moment is refused
            [
                "Xvfb",
                "-displayfd",
                str(write),
                "-screen",
                "0",
                size,
                "-nolisten",
                "tcp",
                "-noreset",
            ],
            "xvfb",
            pass_fds=(write,),
        )
    finally:
        os.close(write)
    try:
        number = b""
        deadline = time.monotonic() + 20
        while not number.endswith(b"\n") and time.monotonic() < deadline:
            chunk = os.read(read, 16)
            if not chunk:
                break
            number += chunk
    finally:
        os.close(read)
    if not number.strip():
        raise DesktopUnavailable(f"Xvfb did not start: {desk.log('xvfb').read_text()}")
    desk.env["DISPLAY"] = ":" + number.decode().strip()


def _wayland_env(desk: Desktop, desktop: str) -> dict[str, str]:
    env = desk.env
    for name in ("DISPLAY", "XAUTHORITY"):
        env.pop(name, None)
    env.setdefault("XDG_CURRENT_DESKTOP", desktop)  # the portals pick their backend by it
    env.update(
        {
            "XDG_SESSION_TYPE": "wayland",
            "GDK_BACKEND": "wayland",
            "QT_QPA_PLATFORM": "wayland",
            "MOZ_ENABLE_WAYLAND": "1",
        }
    )
    return env


def _start_wayland(desk: Desktop, size: str) -> None:
    """PipeWire and WirePlumber (for screen casts), then Mutter; returns once its Wayland
    socket accepts connections."""
    _wayland_env(desk, "GNOME")
    desk.spawn(["pipewire"], "pipewire")
    desk.spawn(["wireplumber"], "wireplumber")
    name = f"wayland-{desk.root.name}"
    width, height = size.split("x")[:2]
    desk.spawn(
        [
            "mutter",
            "--headless",
            "--wayland",
            "--no-x11",
            f"--wayland-display={name}",
            f"--virtual-monitor={width}x{height}",
        ],
        "mutter",
    )
    _wait_for_socket(desk, name, "mutter")


def _start_kde(desk: Desktop, size: str) -> None:
    """KWin on its virtual backend (KDE Plasma's compositor, no screen); returns once its
    Wayland socket accepts connections. Debian gives kwin_wayland a file capability
    (CAP_SYS_RESOURCE, to raise its own priority), which a sandbox that forbids gaining
    capabilities refuses to execute: a copy in the desktop's directory, which carries no
    capability, runs the same. KWin takes its Qt platform only from a program named
    kwin_wayland, so the copy keeps that name."""
    _wayland_env(desk, "KDE")
    found = shutil.which("kwin_wayland")
    if found is None:
        raise DesktopUnavailable("kwin_wayland is not installed")
    program = desk.root / "bin" / "kwin_wayland"
    program.parent.mkdir()
    shutil.copy(found, program)
    name = f"wayland-{desk.root.name}"
    width, height = size.split("x")[:2]
    desk.spawn(
        [str(program), "--virtual", "--socket", name, "--width", width, "--height", height,
         "--no-lockscreen"],
        "kwin",
    )  # fmt: skip
    _wait_for_socket(desk, name, "kwin")


def _wait_for_socket(desk: Desktop, name: str, log: str) -> None:
    env = desk.env
    path = Path(env["XDG_RUNTIME_DIR"]) / name
    deadline = time.monotonic() + 20
    while not (path.exists() and _accepts(path)):
        if time.monotonic() > deadline:
            raise DesktopUnavailable(f"{log} did not start: {desk.log(log).read_text()[-2000:]}")
        time.sleep(0.05)
    env["WAYLAND_DISPLAY"] = name
    # Services the bus starts on demand (the desktop portals, which show their dialogs as
    # Wayland windows) get the session's variables, as a desktop session manager gives them.
    names = ("WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "XDG_CURRENT_DESKTOP", "GDK_BACKEND")
    update = shutil.which("dbus-update-activation-environment")
    if update is not None:
        subprocess.run(
            [update, *(n for n in names if n in env)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )


def _accepts(path: Path) -> bool:
    import socket

    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


@contextmanager
def private_desktop(
    *, apps: tuple[str, ...] = (), size: str = "1280x900x24", session: str = "x11"
) -> Iterator[Desktop]:
    """A private session for the duration of the ``with`` block."""
    desk = start_desktop(apps=apps, size=size, session=session)
    try:
        yield desk
    finally:
        desk.close()
