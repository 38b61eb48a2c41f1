"""What a desktop entry's program is on disk: the binary behind a launcher, and its toolkit family.

What this owns: deciding whether a running process is an instance of an entry's program when
the entry starts a launcher script rather than the binary itself, and whether a program is of
the Chromium family, which builds its accessibility tree only when started with a switch.

Why it is needed. Many entries start a shell script that ``exec``s the real binary:
``/usr/bin/chromium`` starts ``/usr/lib/chromium/chromium``, ``libreoffice`` ends in
``/usr/lib/libreoffice/program/soffice.bin``, an Electron app's ``/usr/share/APP/bin/APP`` starts
``/usr/share/APP/APP``. The process's executable is then never the program's path, and an app
that runs would look as if it did not: started again on every observation (one more
"Untitled" window each time) or waited for in vain. The conventions read here are the ones
packagers follow: the binary sits beside the script with the same stem (``soffice`` and
``soffice.bin``), in a directory named after it (``/usr/lib/NAME/NAME``, ``/opt/NAME/NAME``),
or one level above a ``bin/`` script.

Chromium and every Electron app answer the accessibility bus from the start but leave their
windows empty (children announced, never delivered) unless the process was started with
``--force-renderer-accessibility``; neither the session's accessibility switch
(``org.a11y.Status``) nor an environment variable changes that in Chromium 156. The family is
recognised by the resource files it ships next to its binary.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

#: The switch that makes a Chromium-family program build its accessibility tree.
CHROMIUM_A11Y_SWITCH: Final = "--force-renderer-accessibility"
# Files every Chromium and Electron build ships beside its binary (any one suffices).
_CHROMIUM_MARKERS: Final = ("resources.pak", "v8_context_snapshot.bin", "snapshot_blob.bin")
_LIBRARY_DIRS: Final = ("/usr/lib", "/usr/lib64", "/usr/libexec", "/opt", "/usr/share")


def is_script(path: str) -> bool:
    """Whether ``path`` is an interpreted launcher (starts with ``#!``)."""
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def _stem(path: str) -> str:
    return os.path.basename(path).split(".", 1)[0]


def binaries(program_path: str) -> tuple[str, ...]:
    """The executables that stand for ``program_path`` (a real path): itself, and for a
    launcher script the binaries it starts by the packagers' conventions that exist here."""
    if not program_path:
        return ()
    if not is_script(program_path):
        return (program_path,)
    name = os.path.basename(program_path)
    here = os.path.dirname(program_path)
    candidates = [os.path.join(os.path.dirname(here), name)]  # .../APP/bin/APP -> .../APP/APP
    candidates += [os.path.join(d, name, name) for d in _LIBRARY_DIRS]
    found = [program_path]
    for candidate in candidates:
        real = os.path.realpath(candidate)
        if real not in found and os.path.isfile(real) and os.access(real, os.X_OK):
            found.append(real)
    return tuple(found)


def runs_program(exe: str, program_path: str) -> bool:
    """Is a process whose executable is ``exe`` (a real path) an instance of ``program_path``?

    The same file, or, for a launcher script, a binary it starts: one of :func:`binaries`, or
    one beside the script with the same stem (``soffice`` -> ``soffice.bin``)."""
    if not exe or not program_path:
        return False
    if exe == program_path:
        return True
    # Every convention keeps the name: a different stem settles it without reading a file.
    if _stem(exe) != _stem(program_path) or not is_script(program_path):
        return False
    return os.path.dirname(exe) == os.path.dirname(program_path) or exe in binaries(program_path)


def chromium_family(paths: Sequence[str]) -> bool:
    """Whether any of these executables is a Chromium or Electron build."""
    for path in paths:
        folder = os.path.dirname(path)
        if any(os.path.isfile(os.path.join(folder, m)) for m in _CHROMIUM_MARKERS):
            return True
    return False


def launch_argv(argv: Sequence[str], program_path: str) -> tuple[str, ...]:
    """The command line to start an entry with: as it is, plus the accessibility switch for
    a Chromium-family program that does not already carry it."""
    out = tuple(argv)
    if not out or CHROMIUM_A11Y_SWITCH in out:
        return out
    if chromium_family(binaries(program_path)):
        return (out[0], CHROMIUM_A11Y_SWITCH, *out[1:])
    return out


def started_with_switch(pid: int, proc: str = "/proc") -> bool:
    """Whether process ``pid`` was started with :data:`CHROMIUM_A11Y_SWITCH`."""
    try:
        with open(f"{proc}/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return False
    return CHROMIUM_A11Y_SWITCH.encode() in args
