"""The environment Deskhand gives the programs it starts: its own, minus every secret it knows.

What this owns: one rule, and the one function that applies it (:func:`child_env`), used
wherever the daemon starts a process (the backend, the programs that identify an app for
consent, ``launch_app``'s launcher, the desktop checks' tools) and wherever ``deskhandctl``
calls the service manager, so that no secret leaks to a program that has no business with it.
A variable is dropped when

* its name is one Deskhand reads a secret from (``TYPESAFE_API_KEY``) or one the
  configuration lists under ``secrets.redact_env``;
* its name is key-shaped and in one of Deskhand's namespaces (``DESKHAND_*``, ``JEV_*``,
  ``TYPESAFE_*``) — ``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD`` or ``CREDENTIAL`` in it — even
  when Deskhand does not read it (``DESKHAND_JEV_KEY``, say): a person who put a key there
  meant it for Deskhand, not for the apps it drives;
* its value is the value of any dropped secret (a copy under another name);
* it belongs to the service manager's hand-over to the daemon (``LISTEN_*``,
  ``NOTIFY_SOCKET``), which a child must never act on.

The configured names are known to :func:`child_env` itself: the composition root registers
them once at start-up (:func:`configure`, from ``secrets.redact_env``), before anything can
start a child, so no caller has to pass them along, and none can forget them. That one
registry is the module's only state; the rest is pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

ALWAYS_SECRET: Final = ("TYPESAFE_API_KEY",)
OUR_PREFIXES: Final = ("DESKHAND_", "JEV_", "TYPESAFE_")
KEY_WORDS: Final = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
SERVICE_HANDOVER: Final = frozenset({"LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET"})

_configured: frozenset[str] = frozenset()
"""The secret names registered by :func:`configure`; every :func:`child_env` call drops them."""


def configure(names: Iterable[str]) -> None:
    """Register the configuration's secret names for every process this one starts from now on.

    Called once at start-up by the composition root (``app.open_services``). Names are only ever
    added, never taken away: dropping a variable that only an earlier configuration named (two
    daemons in one test process, say) costs nothing, while forgetting one would leak it.
    """
    global _configured
    _configured = _configured | frozenset(names)


def is_secret_name(name: str, configured: Iterable[str] = ()) -> bool:
    """Whether a variable of this name is a secret by the rule above (names only)."""
    if name in ALWAYS_SECRET or name in set(configured):
        return True
    upper = name.upper()
    return upper.startswith(OUR_PREFIXES) and any(word in upper for word in KEY_WORDS)


def child_env(env: Mapping[str, str], configured: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without secrets and the service manager's hand-over (see the module notes).

    The names registered with :func:`configure` are always dropped; ``configured`` adds more
    (``deskhandctl``, which starts no daemon, passes the configuration's names here).
    """
    names = _configured | set(configured)
    secret_values = {v for k, v in env.items() if v and is_secret_name(k, names)}
    return {
        k: v
        for k, v in env.items()
        if k not in SERVICE_HANDOVER and not is_secret_name(k, names) and v not in secret_values
    }
