"""Workarounds for two python-xlib 0.33 bugs, kept apart from the X11 code that needs them.

What this owns: putting the core protocol's error classes back after a connection registered
extension error classes over them, and closing the socket a failed connection attempt leaves
open. Each function says what goes wrong without it.
"""

from __future__ import annotations

import socket
from typing import Any

from Xlib import error as xerror


def restore_core_errors(conn: Any) -> None:
    """python-xlib 0.33 registers RANDR's and DAMAGE's error classes at their raw codes,
    forgetting the extension's first_error, so they shadow core errors: a BadValue (2) would
    be parsed as BadRRMode and crash with AttributeError. Core codes are below 128 and
    extension codes never are, so putting the core classes back is safe."""
    conn.display.error_classes.update(xerror.xerror_class)


def close_abandoned_sockets(exc: BaseException | None) -> None:
    """Close the sockets python-xlib leaves open when a connection attempt fails.

    Its connect helpers keep the socket only in a local variable of the frame that raised,
    so it lives on in the traceback and is closed (with a ResourceWarning) whenever the
    error is garbage-collected. Closing it here makes the failure path tidy and quiet.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            for value in tb.tb_frame.f_locals.values():
                if isinstance(value, socket.socket):
                    value.close()
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__
