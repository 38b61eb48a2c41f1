"""``launch_app``: the command that opens an app (pure), and running it without a shell,
bounded in time.

macOS: ``open -a NAME``, ``open -b BUNDLE.ID`` or ``open PATH.app``. Linux: ``gtk-launch``
with a desktop-entry id. The simulated desktop opens its apps on ``get_app_state``, so there
is nothing to run. A launch never mints a stateId: the caller observes afterwards.

Starting a program on the person's desktop is an action: :meth:`NativeService.launch
<deskhand_d.native.service.NativeService.launch>` chooses the command once every gate has
passed, then runs it as the action queue's job, after its audit ``start`` record, like every
backend call. Errors say what reached the desktop: ``refused`` when the launcher could not be
started or said it failed, ``unknown`` when it did not finish in time.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import trio

from deskhand_d.childenv import child_env
from deskhand_d.errors import BackendError, BackendUnavailable

_BUNDLE_ID = re.compile(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+){2,}$")


def command_for(app: str, platform: str = sys.platform) -> list[str]:
    """The argv that opens ``app`` on ``platform`` (never through a shell)."""
    if platform == "darwin":
        if app.startswith("/"):
            return ["/usr/bin/open", app]
        if _BUNDLE_ID.match(app):
            return ["/usr/bin/open", "-b", app]
        return ["/usr/bin/open", "-a", app]
    launcher = shutil.which("gtk-launch")
    if launcher is None:
        raise BackendUnavailable(
            "cannot launch apps here: gtk-launch (from GTK) is not installed; open the app "
            "yourself, then observe it"
        )
    entry = app if app.endswith(".desktop") else app.lower().replace(" ", "-")
    return [launcher, entry]


def command(app: str, backend_kind: str) -> list[str] | None:
    """The argv that opens ``app`` for this backend, or None where there is nothing to run
    (the simulated desktop). :class:`BackendUnavailable` when there is no launcher here."""
    if backend_kind == "sim":
        return None
    return command_for(app)


async def run(app: str, argv: list[str] | None, *, timeout_s: float) -> str:
    """Run the launcher ``argv`` (from :func:`command`); what to tell the caller."""
    if argv is None:
        return "the simulated desktop opens its apps when they are observed; nothing to launch"
    try:
        with trio.fail_after(timeout_s):
            done = await trio.run_process(
                argv,
                check=False,
                env=child_env(os.environ),  # the app it opens gets no secret of ours
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                capture_stderr=True,
            )
    except trio.TooSlowError:
        raise BackendError(
            f"launching {app!r} did not finish within {timeout_s:g} s; observe it to see whether "
            "it opened",
            delivery="unknown",
        ) from None
    except OSError as exc:
        raise BackendUnavailable(
            f"cannot run {argv[0]}: {exc.strerror}; nothing was launched", delivery="refused"
        ) from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no details"]
        raise BackendError(
            f"launching {app!r} failed ({argv[0]} exited {done.returncode}: {why[0][:200]})",
            delivery="refused",
        )
    return f"asked the system to open {app!r}; observe it once it is open"
