"""A daemon whose ``launch_app`` starts a real program the test can read afterwards.

What this owns: :class:`FakeLauncher`, a ``gtk-launch`` put first on the daemon's ``PATH`` (a
shell script that records its arguments and the environment it was started with, read from
``/proc/$$/environ``, and exits with the status the test chose), and the environment that makes
a daemon use it. On the ``sim`` backend a launch starts nothing (the simulated desktop opens its
apps when they are observed), so the daemon runs the same simulator as a ``command`` backend:
to the daemon that is a real desktop, where a launch runs the system's launcher. Apps are
identified with the simulator's catalogue, as on ``sim``. Linux only, as ``gtk-launch`` is.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from dhtest.daemon import short_tmpdir


class FakeLauncher:
    """``gtk-launch`` in a private ``bin`` directory; every run leaves ``env.<pid>`` and a line
    in ``argv.log`` in :attr:`root`."""

    def __init__(self, status: int = 0) -> None:
        self.root = short_tmpdir()
        self.bin = self.root / "bin"
        self.bin.mkdir()
        self.set_status(status)

    def set_status(self, status: int) -> None:
        """What the launcher exits with from now on (non-zero: the launch failed)."""
        script = self.bin / "gtk-launch"
        script.write_text(
            "#!/bin/sh\n"
            f'printf "%s\\n" "$*" >> "{self.root}/argv.log"\n'
            f'/bin/cat "/proc/$$/environ" > "{self.root}/env.$$"\n'
            + (f'echo "gtk-launch: no such application {status}" >&2\n' if status else "")
            + f"exit {status}\n"
        )
        script.chmod(0o755)

    def daemon_env(self) -> dict[str, str]:
        """What a daemon (``dhtest.desk.desk_factory``'s ``**env``) needs to launch with it."""
        return {
            "DESKHAND_BACKEND": "command",
            "DESKHAND_BACKEND_COMMAND": json.dumps(
                [sys.executable, "-m", "deskhand_d.programs.sim"]
            ),
            "DESKHAND_CONSENT_PLATFORM": "catalog",
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        }

    def launches(self) -> list[str]:
        """The arguments of every run, in order."""
        log = self.root / "argv.log"
        return log.read_text().splitlines() if log.exists() else []

    def environs(self) -> list[dict[str, str]]:
        """The environment of every run (in no particular order)."""
        return [environ_of(path) for path in sorted(self.root.glob("env.*"))]

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def environ_of(path: Path) -> dict[str, str]:
    """A ``/proc/PID/environ``-style file (NUL-separated ``NAME=value``) as a dict."""
    items = (item.split(b"=", 1) for item in path.read_bytes().split(b"\0") if item)
    return {k.decode(): (v[0] if v else b"").decode(errors="replace") for k, *v in items}
