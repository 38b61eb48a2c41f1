"""Writing a file's whole content through a descriptor, for the CLI's atomic writes.

What this owns: :func:`fill`, the one loop that sets a new file's exact mode, writes every
byte (``os.write`` may write less than asked) and makes it durable before the caller renames
it into place. Used by ``deskhandctl ... --screenshot`` and ``mcp config --write``. Standard
library ``os`` only, so the commands that need it keep their start-up light.
"""

from __future__ import annotations

import os


def fill(fd: int, data: bytes, mode: int) -> None:
    """Give the file behind ``fd`` exactly ``mode`` (whatever the umask), write all of
    ``data``, flush it to the disk and close ``fd``."""
    try:
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
