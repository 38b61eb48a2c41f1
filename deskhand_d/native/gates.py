"""The gates every call to the backend passes first (the cheap, synchronous ones).

What this owns: the emergency lock, the effective allowlist (with ``apps.json`` re-read only
when the file changes), a session's recovery state, its launch bans and its mode. The native
service holds one :class:`Gates` and runs them in its pipeline, before the stateId and consent
(:mod:`deskhand_d.native.service`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

from deskhand_d import errors as E
from deskhand_d.config import Config
from deskhand_d.native import allowlist
from deskhand_d.native.sessions import Session
from deskhand_d.nextsteps import PROTOCOL, Words


class Gates:
    def __init__(self, config: Config, env: Mapping[str, str]) -> None:
        self.config = config
        self.env = env
        self.apps_file = allowlist.AppsFile(allowlist.default_apps_path(env))
        self._granted_cache: list[str] | None = None
        self._granted_key: tuple[int, ...] | None = None
        self.locked_by = ""

    def allowed_apps(self) -> list[str]:
        return allowlist.effective_allowlist(
            self.config.native.allowed_apps, self.env, self._granted()
        )

    def _granted(self) -> list[str]:
        """apps.json's entries, re-read (with all its safety checks) whenever the file changes.

        The key includes ctime, mode and owner, so a chmod or chown is noticed too.
        """
        try:
            st = os.stat(self.apps_file.path)
            key: tuple[int, ...] | None = (
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_mode,
                st.st_uid,
            )
        except FileNotFoundError:
            key = None
        if self._granted_cache is None or key != self._granted_key:
            self._granted_cache = self.apps_file.read()
            self._granted_key = key
        return self._granted_cache

    def check_unlocked(self) -> None:
        if self.locked_by:
            raise E.Locked(
                f"the emergency stop is engaged (by {self.locked_by}); nothing runs until "
                "`deskhandctl unlock`",
                data={"by": self.locked_by},
                delivery="refused",
            )

    def check_app(self, app: str) -> None:
        if not allowlist.is_allowed(app, self.allowed_apps()):
            raise E.AppNotAllowed(
                f"{app!r} is not on the allowlist, so nothing was sent; only the person may add "
                f"it, with `deskhandctl apps add {shlex.quote(app)}`",
                data={"app": app},
                delivery="refused",
            )

    def check_recovery(self, session: Session, app: str, *, observing: bool) -> None:
        if session.recovery and not (observing and app in session.recovery):
            pending = ", ".join(sorted(session.recovery))
            raise E.RecoveryPending(
                f"the person changed {pending}, so nothing was sent; observe it again before "
                "anything else",
                data={"apps": sorted(session.recovery)},
            )

    def check_launch(self, session: Session, app: str) -> None:
        if app in session.launch_banned:
            raise E.LaunchBanned(
                f"launching {app!r} is off for the rest of this turn (after a stop, a declined "
                "approval or an unknown outcome there); the person decides what happens next"
            )

    def check_mode(
        self, session: Session, app: str, token: str | None = None, words: Words = PROTOCOL
    ) -> None:
        """In jev mode a native action needs the active planner handoff for this app."""
        if session.mode != "jev":
            return
        handoff = session.handoff
        why = (
            "there is no active handoff"
            if handoff is None
            else handoff.refusal(
                token=token, session_id=session.session_id, turn=session.turn, app=app
            )
        )
        if why is not None:
            raise E.HandoffRequired(
                f"this session is in jev mode, so native actions need Jev's planner handoff for "
                f"this app ({why}); nothing was sent. Hand the goal to Jev with {words.run()}, "
                f"or the person may switch this session to native mode with "
                f"{words.set_mode('native')}",
                data={"app": app},
            )
