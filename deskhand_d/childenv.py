"""The environment Deskhand gives the programs it starts: its own, minus every secret it knows.

What this owns: one rule, applied wherever the daemon starts a process (the backend, the
programs that identify an app for consent, ``launch_app``), so that no secret leaks to a
program that has no business with it. A variable is dropped when

* its name is one Deskhand reads a secret from (``TYPESAFE_API_KEY``) or one the
  configuration lists under ``secrets.redact_env``;
* its name is key-shaped and in one of Deskhand's namespaces (``DESKHAND_*``, ``JEV_*``,
  ``TYPESAFE_*``) — ``KEY``, ``TOKEN``, ``SECRET``, ``PASSWORD`` or ``CREDENTIAL`` in it — even
  when Deskhand does not read it (``DESKHAND_JEV_KEY``, say): a person who put a key there
  meant it for Deskhand, not for the apps it drives;
* its value is the value of any dropped secret (a copy under another name);
* it belongs to the service manager's hand-over to the daemon (``LISTEN_*``,
  ``NOTIFY_SOCKET``), which a child must never act on.

Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

ALWAYS_SECRET: Final = ("TYPESAFE_API_KEY",)
OUR_PREFIXES: Final = ("DESKHAND_", "JEV_", "TYPESAFE_")
KEY_WORDS: Final = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
SERVICE_HANDOVER: Final = frozenset({"LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET"})


def is_secret_name(name: str, configured: Iterable[str] = ()) -> bool:
    """Whether a variable of this name is a secret by the rule above (names only)."""
    if name in ALWAYS_SECRET or name in set(configured):
        return True
    upper = name.upper()
    return upper.startswith(OUR_PREFIXES) and any(word in upper for word in KEY_WORDS)


def child_env(env: Mapping[str, str], configured: Iterable[str] = ()) -> dict[str, str]:
    """``env`` without secrets and the service manager's hand-over (see the module notes)."""
    names = set(configured)
    secret_values = {v for k, v in env.items() if v and is_secret_name(k, names)}
    return {
        k: v
        for k, v in env.items()
        if k not in SERVICE_HANDOVER and not is_secret_name(k, names) and v not in secret_values
    }
