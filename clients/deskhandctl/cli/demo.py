"""``deskhandctl demo``: one real task in a real app, from start to finish, then clean up.

The task: observe Calculator, press 6, +, 7 and = by element index, observe again and check the
display shows 13, then save the final screenshot as a PNG and print its path.

Where it runs: on Linux the AT-SPI backend drives the real Calculator (gnome-calculator). When
this session already has a desktop (X11 or Wayland) with an accessibility bus, that desktop is
used and you answer the consent question yourself; otherwise a private desktop (Xvfb, or with
``--wayland`` a headless GNOME compositor with PipeWire, and its own session and accessibility
buses) is started and torn down at the end. On the private Wayland desktop, which is the
demo's own, input goes through GNOME's remote-desktop interface rather than the portal's
dialog, which nobody would be there to answer. Where no
real desktop can be had (not Linux, or Xvfb or gnome-calculator missing), the simulated desktop
stands in, and the output says so.

Everything else is private too: a throwaway profile (config, grants, audit, log) and its own
daemon on its own socket, shut down at the end. Without a terminal nobody can answer the consent
question, so in a private desktop or the simulator, which are the demo's own, the demo stands in
with an "always" grant for Calculator in the throwaway profile; it never does so on your desktop.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from deskhandctl.exitcodes import DAEMON_ERROR, OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from deskhandctl.cli.grammar import Args
    from deskhandctl.wire.session import Session

APP = "Calculator"
KEYS = ("6", "+", "7", "=")
EXPECTED = "13"
_MAC_NAMES = {"+": "Add", "=": "Equals"}


def run_demo(args: Args) -> int:
    target = os.path.abspath(str(args.params.get("screenshot") or "deskhand-demo.png"))
    with contextlib.ExitStack() as cleanup:
        env, backend, private, where = _choose_desktop(
            cleanup, bool(args.params.get("sim")), wayland=bool(args.params.get("wayland"))
        )
        print(f"demo: {where}")
        profile = Path(tempfile.mkdtemp(prefix="deskhand-demo-"))
        cleanup.callback(shutil.rmtree, profile, True)
        env.update(
            DESKHAND_BACKEND=backend,
            DESKHAND_CONFIG=str(profile / "config.toml"),
            DESKHAND_SOCKET=str(profile / "run" / "deskhand.sock"),
            XDG_STATE_HOME=str(profile / "state"),
        )
        from deskhandctl.cli.events import terminal_attached

        interactive = terminal_attached()
        if private and not interactive:
            _stand_in_grant(profile, backend, env)
            print(f"demo: no terminal to answer the consent question; allowed {APP} in the demo")
        try:
            shown, target = _drive(env, interactive, cleanup, target)
        except Exception as exc:  # a refusal or a failure: say what happened, clean up anyway
            print(f"demo: failed: {exc}", file=sys.stderr)
            log = profile / "state" / "deskhand" / "daemon.log"
            if log.exists():
                tail = log.read_text(errors="replace").splitlines()[-8:]
                print("demo: the daemon's log ends with:\n  " + "\n  ".join(tail), file=sys.stderr)
            return DAEMON_ERROR
    if shown != EXPECTED:
        print(f"demo: {APP} shows {shown!r}, not {EXPECTED}", file=sys.stderr)
        return DAEMON_ERROR
    print(f"demo: {APP} shows {EXPECTED}: done. Screenshot: {target}")
    return OK


def _choose_desktop(
    cleanup: contextlib.ExitStack, sim: bool, *, wayland: bool = False
) -> tuple[dict[str, str], str, bool, str]:
    """(environment, backend, private, description) for where the task will run."""
    env = dict(os.environ)
    if sim:
        return env, "sim", True, "using the simulated desktop (--sim)"
    if not sys.platform.startswith("linux"):
        return env, "sim", True, "using the simulated desktop (the real one is Linux-only here)"
    from deskhand_d.backends import a11ybus as a11ybus
    from deskhand_d.programs import xsession as xsession

    if shutil.which("gnome-calculator") is None:
        return env, "sim", True, "using the simulated desktop: gnome-calculator is not installed"
    found = a11ybus.probe(env)
    yours = env.get("WAYLAND_DISPLAY") or env.get("DISPLAY")
    if found.usable and yours:
        return env, "atspi", False, f"using your desktop ({yours}) through AT-SPI"
    try:
        # the backend starts Calculator itself on the first observation, as Sky does
        desk = xsession.start_desktop(session="wayland" if wayland else "x11")
    except xsession.DesktopUnavailable as exc:
        return env, "sim", True, f"using the simulated desktop: no private desktop ({exc})"
    cleanup.callback(desk.close)
    if desk.wayland:
        desk.env["DESKHAND_WAYLAND_INPUT"] = "mutter"
        where = f"a private Wayland desktop ({desk.env['WAYLAND_DISPLAY']}, headless Mutter)"
        return dict(desk.env), "atspi", True, f"started {where}"
    return dict(desk.env), "atspi", True, f"started a private desktop on {desk.display}"


def _stand_in_grant(profile: Path, backend: str, env: dict[str, str]) -> None:
    from deskhand_d.consent.grants import GrantsFile

    if backend == "sim":
        from deskhand_d.consent.catalog import CatalogPlatform

        identity = CatalogPlatform().identify(APP)
        env["DESKHAND_SIM_SCENARIO"] = '{"preapproved": ["Calculator"]}'
    else:
        from deskhand_d.consent.linux import LinuxPlatform

        identity = LinuxPlatform(env=env).identify(APP)
    GrantsFile(profile / "grants.json").add(identity)


def _drive(
    env: dict[str, str],
    interactive: bool,
    cleanup: contextlib.ExitStack,
    target: str,
) -> tuple[str, str]:
    """Run the task through a daemon started for it: what the display shows, and where the
    screenshot went (``.png`` becomes ``.jpg`` for the simulator's JPEG screenshots)."""
    from deskhand_d import __version__
    from deskhandctl.cli.events import EventHandler
    from deskhandctl.wire.connect import open_session

    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)  # the autostarted daemon inherits it
    cleanup.callback(_restore, saved)
    handler = EventHandler(show_notices=True, interactive=interactive)
    session = open_session(
        env["DESKHAND_SOCKET"],
        timeout=60.0,
        autostart=True,
        client_version=__version__,
        on_event=handler,
        can_answer_questions=interactive,
    )
    handler.session = session
    cleanup.callback(_shutdown, session)
    state = _observe(session)
    for key in KEYS:
        index = _button(state["text"], key)
        print(f"demo: press {key} (element {index})")
        done = session.request("click", app=APP, state_id=state["state_id"], element_index=index)
        state = done if done.get("state_id") and done.get("text") else _observe(session)
    # The app may draw the result a moment after the last click has been delivered: look
    # again for a few seconds, as a person would, before calling it wrong.
    deadline = time.monotonic() + 5
    final = _observe(session)
    while _display(str(final["text"])) != EXPECTED and time.monotonic() < deadline:
        time.sleep(0.2)
        final = _observe(session)
    from deskhandctl.cli.commands import save_screenshot

    if not final.get("screenshot"):
        raise RuntimeError("the backend sent no screenshot of the result")
    if final.get("screenshot_mime") == "image/jpeg" and target.endswith(".png"):
        target = target.removesuffix(".png") + ".jpg"
    save_screenshot(target, str(final["screenshot"]))
    return _display(str(final["text"])), target


def _observe(session: Session) -> dict[str, Any]:
    """An observation once the app's keypad is there (a fresh app draws it a moment later)."""
    deadline = time.monotonic() + 20
    while True:
        state = session.request("get_app_state", app=APP)
        try:
            _button(str(state.get("text") or ""), KEYS[0])
            return state
        except LookupError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def _button(text: str, key: str) -> int:
    """The index of the button for ``key``: labelled with the symbol (gnome-calculator), or
    named as on macOS's Calculator (the simulator: ``Description: 6``, ``Add``, ``Equals``)."""
    from deskhand_d import ax

    names = {key, _MAC_NAMES.get(key, key)}
    for element in ax.parse(text).elements:
        if "button" not in element.role:
            continue
        if element.label.split(",")[0].strip() in names:
            return element.index
        if element.attributes.get("Description") in names:
            return element.index
    raise LookupError(f"no button for {key!r} in {APP}'s window")


def _display(text: str) -> str:
    """``EXPECTED`` when a text element of the window shows it, else the last text shown."""
    from deskhand_d import ax

    shown: list[str] = []
    for element in ax.parse(text).elements:
        if element.role.startswith("text"):
            value = element.attributes.get("Value") or element.label
            # keep what a person reads: digits, signs and letters, not direction marks
            visible = "".join(ch for ch in value if ch.isalnum() or ch in "+-=.,").strip()
            if visible:
                shown.append(visible)
    if EXPECTED in shown:
        return EXPECTED
    return shown[-1] if shown else ""


def _shutdown(session: Session) -> None:
    with contextlib.suppress(Exception):
        session.request("shutdown")
    with contextlib.suppress(Exception):
        session.close()


def _restore(saved: dict[str, str]) -> None:
    os.environ.clear()
    os.environ.update(saved)
