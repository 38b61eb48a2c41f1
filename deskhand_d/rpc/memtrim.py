"""Give freed heap pages back to the system (glibc's ``malloc_trim``); nothing elsewhere.

A message received in thousands of small chunks leaves the C heap fragmented once it is freed:
Python has released the memory, but the allocator keeps the pages, so the daemon's resident
size stays at its peak after a client that sent a large message (or many half-messages) has
gone. ``malloc_trim(0)`` returns every wholly free page. Other C libraries (macOS, musl) have
no such call or return pages on their own; there this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable

_trim: Callable[[int], int] | None = None
_looked = False


def trim() -> bool:
    """Return free heap pages to the system; False where the C library cannot."""
    global _trim, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                fn = libc.malloc_trim
            except (OSError, AttributeError):
                fn = None  # not glibc
            if fn is not None:
                fn.argtypes = [ctypes.c_size_t]
                fn.restype = ctypes.c_int
                _trim = fn
    if _trim is None:
        return False
    _trim(0)
    return True
