"""What an action needs of a real desktop, and how the simulated one is marked. Pure.

What this owns: :class:`Check`, one named check (``display``, ``xtest``, ``screenshot``,
``accessibility_bus``) with what was found and the fix; the first question of ``backend =
"auto"`` (is there a desktop session at all: ``DISPLAY``, ``WAYLAND_DISPLAY`` or a session
bus); the display check that needs only the environment (Wayland without XWayland included);
the refusal message when a desktop exists but cannot be operated; and the one-line note that
every reply from the simulated desktop carries, so that no person or model mistakes its
made-up apps for the real ones.

The checks that talk to the X server and the buses are in :mod:`.desktopprobe`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from deskhand_d.backends.a11ybus import Probe

Status = Literal["ok", "failed", "not_checked"]

#: Shown for each check in messages (the ``name`` is for scripts).
LABELS: Final = {
    "display": "display",
    "xtest": "XTEST (synthesised keys and clicks)",
    "input": "keys and clicks",
    "screenshot": "screenshots",
    "accessibility_bus": "accessibility bus",
}

NO_SESSION: Final = (
    "no desktop session here (no DISPLAY, WAYLAND_DISPLAY or session bus), as on a server or "
    "in CI; replies say that the desktop is simulated"
)

#: The first line of every list_apps, get_app_state and action text the simulator produced.
SIMULATED_NOTE: Final = (
    "[Simulated desktop: these apps and windows are Deskhand's made-up stand-ins, not this "
    "computer's real desktop; nothing done here reaches a real app.]"
)

USE_SIM: Final = (
    "Deskhand does not stand in with the simulated desktop where a real one exists; to use it "
    'on purpose, set backend.kind = "sim" (or DESKHAND_BACKEND=sim).'
)


@dataclass(frozen=True, slots=True)
class Check:
    name: str  # display | xtest | input | screenshot | accessibility_bus
    status: Status
    detail: str  # what was found, as a sentence
    fix: str = ""  # what to do, when it failed

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def to_data(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


#: The checks without which no action can work (auto refuses when one fails); the others
#: (``screenshot``, Wayland's ``input``) are doctor's to report.
ESSENTIAL: Final = frozenset({"display", "xtest", "accessibility_bus"})


def missing_display(env: Mapping[str, str]) -> Check | None:
    """The failed ``display`` check of an X11 session whose ``DISPLAY`` is unset (the X
    server decides otherwise). A Wayland session is checked by :mod:`.wlcheck` instead."""
    if env.get("DISPLAY"):
        return None
    return Check(
        "display",
        "failed",
        "no X display: DISPLAY is not set in deskhand-d's environment.",
        "start deskhand-d from inside the desktop session, or set DISPLAY (and XAUTHORITY if "
        "the server uses one) to the desktop's X display, for example DISPLAY=:0; under "
        "systemd `systemctl --user import-environment DISPLAY XAUTHORITY`. Then "
        "`deskhandctl shutdown` so that the next command starts it with that environment.",
    )


def not_checked(name: str, why: str) -> Check:
    return Check(name, "not_checked", why)


def bus_check(found: Probe) -> Check:
    """The accessibility-bus probe as a check."""
    return Check("accessibility_bus", "ok" if found.usable else "failed", found.why, found.fix)


def where(env: Mapping[str, str]) -> str:
    """The desktop session ``env`` describes, e.g. ``DISPLAY=:0 and a session bus``."""
    parts = [f"{name}={env[name]}" for name in ("DISPLAY", "WAYLAND_DISPLAY") if env.get(name)]
    if env.get("DBUS_SESSION_BUS_ADDRESS"):
        parts.append("a session bus")
    return " and ".join(parts) or "nothing"


def unreachable_message(failed: Sequence[Check], env: Mapping[str, str]) -> str:
    """Why a desktop that exists cannot be operated, with each fix and the way out."""
    problems = " ".join(
        f"{LABELS.get(c.name, c.name)}: {c.detail} Fix: {c.fix}" for c in failed if c.failed
    )
    return (
        f"there is a desktop session here ({where(env)}), but Deskhand cannot operate it. "
        f"{problems} {USE_SIM} `deskhandctl doctor` shows every check."
    )


def summary(checks: Sequence[Check]) -> str:
    """One sentence for the notice when every check passed."""
    return " ".join(c.detail for c in checks if c.status == "ok")


def mark_simulated(text: str) -> str:
    """``text`` with the simulated-desktop note as its first line.

    A line of its own that no tree parser takes for an element (it starts with ``[``), placed
    before the ``App=`` header so that a model reads it before anything the simulator made up.
    """
    return f"{SIMULATED_NOTE}\n{text}"
