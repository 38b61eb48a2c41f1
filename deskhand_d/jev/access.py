"""The daemon's access to Jev: the API key, the endpoint and one shared HTTP client.

The key comes from ``TYPESAFE_API_KEY`` or an owner-only env file (``DESKHAND_ENV_FILE``, or the
predecessor's ``JEV_CUA_ENV_FILE``) and is read once at start-up; it is held here and in the
client only, never logged, traced or returned. The client is created on the first run, and
httpx is imported only then: a daemon that never runs Jev does not pay its import time and
memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from deskhand_d import errors as E
from deskhand_d.jev.settings import KEY_ENV, load_key, resolve_url

if TYPE_CHECKING:
    from deskhand_d.jev.client import JevClient


_RESTART = {
    "": (
        "restart it so that it reads the key (`deskhandctl shutdown`: the next deskhandctl "
        "command starts it again, from that command's environment)"
    ),
    "systemd": (
        "restart the service so that it reads the key: give it the variable with "
        "`systemctl --user edit deskhand.service` (under [Service], for example "
        "`Environment=DESKHAND_ENV_FILE=/path/to/file`), then "
        "`systemctl --user restart deskhand.service`"
    ),
    "launchd": (
        "reload the service so that it reads the key: add the variable to EnvironmentVariables "
        "in ~/Library/LaunchAgents/dev.deskhand.daemon.plist (for example DESKHAND_ENV_FILE), "
        "then `launchctl bootout gui/$UID/dev.deskhand.daemon` and `launchctl bootstrap "
        "gui/$UID ~/Library/LaunchAgents/dev.deskhand.daemon.plist`"
    ),
}


def missing_key_help(
    problem: str = "", switch: str = "`deskhandctl mode jev`", managed_by: str = ""
) -> str:
    """What to do when jev mode is wanted and the daemon has no key: the variable to set, the
    restart that makes the daemon read it (the key is read once, at start; ``managed_by``:
    the service manager that runs it, if any), then ``switch`` (how the reader's client
    switches the mode). ``problem``: why the env file could not be used, if it was."""
    why = f" ({problem})" if problem else ""
    return (
        f"deskhand-d has no Jev key{why}. Set {KEY_ENV} in its environment (or put "
        f"{KEY_ENV}=... in an owner-only env file named by DESKHAND_ENV_FILE) and "
        f"{_RESTART.get(managed_by, _RESTART[''])}, then switch with {switch}"
    )


class JevAccess:
    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = dict(env)
        env_file = env.get("DESKHAND_ENV_FILE") or env.get("JEV_CUA_ENV_FILE") or None
        try:
            self._key = load_key(env, env_file)
            self.problem = ""
        except ValueError as exc:
            self._key, self.problem = None, str(exc)
        self._client: JevClient | None = None

    def __repr__(self) -> str:
        return f"JevAccess(key_present={self.key_present})"

    @property
    def key_present(self) -> bool:
        return bool(self._key)

    def secret_values(self) -> list[str]:
        """The key, for redaction only (never logged or returned)."""
        return [self._key] if self._key else []

    def client(self) -> JevClient:
        if not self._key:
            raise E.MissingJevKey(
                f"jev mode needs a TypeSafe API key: {missing_key_help(self.problem)}",
            )
        if self._client is None:
            try:
                url = resolve_url(self._env)
            except ValueError as exc:
                raise E.ConfigError(str(exc)) from None
            from deskhand_d.jev.client import JevClient

            self._client = JevClient(key=self._key, url=url)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
