"""Which backend process to start, and how: ``sky``, ``atspi``, ``sim``, ``command``, ``auto``.

Pure apart from looking at the file system. Sky needs care (see the Sky protocol notes):
``SkyComputerUseClient mcp`` only accepts tool calls when its parent process is signed by
OpenAI, so it is started behind a signed ``codex`` as a jump host
(``codex sandbox -c sandbox_mode="danger-full-access" -- <client> mcp``), from
``$CODEX_HOME/computer-use`` when that exists. Every backend gets the daemon's environment
minus every secret (:mod:`deskhand_d.childenv`): a backend has no business with them.
``secrets`` below are the configured secret variable *names* (``secrets.redact_env``).

``auto`` never lets the simulator pass for a real desktop. It picks the simulator only where
there is no desktop session at all (no ``DISPLAY``, ``WAYLAND_DISPLAY`` or session bus: a
server, CI). Where there is one, it picks the real backend (Sky on macOS; on Linux the AT-SPI
server once :func:`.deskcheck.run` finds the X display, XTEST and the accessibility bus), or
refuses with the fix (:class:`~deskhand_d.errors.DesktopUnreachable`, or Sky's own
``backend_unavailable``) rather than fall back.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from deskhand_d.backends import deskcheck, desktop
from deskhand_d.childenv import child_env
from deskhand_d.config import BackendConfig
from deskhand_d.errors import BackendUnavailable, DesktopUnreachable
from deskhand_d.mcp.connection import LaunchSpec

_CLIENT_IN_APP = (
    "Codex Computer Use.app/Contents/SharedSupport/SkyComputerUseClient.app/"
    "Contents/MacOS/SkyComputerUseClient"
)


def codex_home(env: Mapping[str, str]) -> Path:
    return Path(env.get("CODEX_HOME") or Path(env.get("HOME") or "~").expanduser() / ".codex")


def sky_client_candidates(env: Mapping[str, str]) -> list[Path]:
    """Where SkyComputerUseClient is installed, most canonical first."""
    home = codex_home(env)
    out = [home / "computer-use" / _CLIENT_IN_APP]
    cache = home / "plugins" / "cache" / "openai-bundled" / "computer-use"
    if cache.is_dir():
        versions = sorted(
            (p for p in cache.iterdir() if p.is_dir()), key=_version_key, reverse=True
        )
        out += [v / _CLIENT_IN_APP for v in versions]
    out.append(
        Path(
            "/Applications/Codex.app/Contents/Resources/plugins/openai-bundled/plugins/computer-use"
        )
        / _CLIENT_IN_APP
    )
    out.append(
        Path("/Applications/ChatGPT.app/Contents/Resources/cua_node/lib/node_modules/@oai/sky")
        / _CLIENT_IN_APP
    )
    return out


def codex_candidates() -> list[Path]:
    """Signed ``codex`` binaries that may serve as Sky's trusted parent."""
    return [
        Path("/Applications/ChatGPT.app/Contents/Resources/codex"),
        Path(
            "/Applications/ChatGPT.app/Contents/Resources/codex-cli/CodexCLI.app/Contents/MacOS/codex"
        ),
        Path("/Applications/Codex.app/Contents/Resources/codex"),
    ]


def _version_key(path: Path) -> tuple[int, ...]:
    parts = []
    for piece in path.name.split("."):
        parts.append(int(piece) if piece.isdigit() else -1)
    return tuple(parts)


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_first(
    paths: Sequence[Path], exists: Callable[[Path], bool] = _is_executable
) -> Path | None:
    return next((p for p in paths if exists(p)), None)


def sky_spec(cfg: BackendConfig, env: Mapping[str, str], secrets: Sequence[str]) -> LaunchSpec:
    explicit = env.get("DESKHAND_SKY_CLIENT") or cfg.sky_client  # environment wins
    client = Path(explicit) if explicit else find_first(sky_client_candidates(env))
    if client is None or not _is_executable(client):
        raise BackendUnavailable(
            "Sky (SkyComputerUseClient) was not found; install the Codex Computer Use plugin, "
            "or point DESKHAND_SKY_CLIENT / backend.sky_client at it",
            data={"backend": "sky"},
        )
    override = env.get("DESKHAND_CODEX") or cfg.codex
    codex = Path(override) if override else find_first(codex_candidates())
    if codex is None or not _is_executable(codex):
        raise BackendUnavailable(
            "no signed codex was found to start Sky from (Sky refuses tool calls from unsigned "
            "parents); install ChatGPT or Codex, or point DESKHAND_CODEX / backend.codex at it",
            data={"backend": "sky"},
        )
    cwd = cfg.cwd or str(codex_home(env) / "computer-use")
    argv = (
        str(codex),
        "sandbox",
        "-c",
        'sandbox_mode="danger-full-access"',
        "--",
        str(client),
        "mcp",
    )
    return LaunchSpec(
        kind="sky",
        argv=argv,
        env=child_env(env, secrets),
        cwd=cwd if Path(cwd).is_dir() else None,
    )


def _bundled_spec(
    kind: str, cfg: BackendConfig, env: Mapping[str, str], secrets: Sequence[str], notice: str
) -> LaunchSpec:
    """A backend that ships with Deskhand: ``python -m deskhand_d.backends.<kind>``."""
    return LaunchSpec(
        kind=kind,
        argv=(sys.executable, "-m", f"deskhand_d.backends.{kind}"),
        env=child_env(env, secrets),
        cwd=cfg.cwd or None,
        notice=notice,
    )


def sim_spec(
    cfg: BackendConfig, env: Mapping[str, str], secrets: Sequence[str], notice: str = ""
) -> LaunchSpec:
    return _bundled_spec("sim", cfg, env, secrets, notice)


def atspi_spec(
    cfg: BackendConfig, env: Mapping[str, str], secrets: Sequence[str], notice: str = ""
) -> LaunchSpec:
    return _bundled_spec("atspi", cfg, env, secrets, notice)


def command_spec(cfg: BackendConfig, env: Mapping[str, str], secrets: Sequence[str]) -> LaunchSpec:
    argv = tuple(cfg.command)
    if not argv or not all(isinstance(a, str) and a for a in argv):
        raise BackendUnavailable(
            "backend kind is command but no command is configured; set backend.command or "
            'DESKHAND_BACKEND_COMMAND to a JSON array such as ["python3", "/path/server.py"]',
            data={"backend": "command"},
        )
    return LaunchSpec(kind="command", argv=argv, env=child_env(env, secrets), cwd=cfg.cwd or None)


def _auto_checks(env: Mapping[str, str]) -> Sequence[desktop.Check]:
    # No screenshot here: a refusal is for what stops every action, and reading pixels is
    # doctor's to check.
    return deskcheck.run(env, screenshot=False)


def resolve(
    cfg: BackendConfig,
    env: Mapping[str, str],
    secrets: Sequence[str] = (),
    *,
    platform: str = sys.platform,
    checks: Callable[[Mapping[str, str]], Sequence[desktop.Check]] = _auto_checks,
) -> LaunchSpec:
    """The launch spec for the configured backend kind (``auto``: see the module notes)."""
    if cfg.kind == "sky":
        return sky_spec(cfg, env, secrets)
    if cfg.kind == "atspi":
        return atspi_spec(cfg, env, secrets)
    if cfg.kind == "sim":
        return sim_spec(cfg, env, secrets)
    if cfg.kind == "command":
        return command_spec(cfg, env, secrets)
    if platform == "darwin":
        try:
            return sky_spec(cfg, env, secrets)
        except BackendUnavailable as exc:
            # A Mac with a person at it is a desktop session: no stand-in for it.
            raise BackendUnavailable(
                f"{exc.message}. {desktop.USE_SIM}", data={"backend": "auto -> sky"}
            ) from None
    if not desktop.session_present(env):
        return sim_spec(
            cfg, env, secrets, notice=f"using the simulated desktop: {desktop.NO_SESSION}"
        )
    if not platform.startswith("linux"):
        raise BackendUnavailable(
            f"Deskhand has no backend for the desktop on this platform ({platform}) yet. "
            f"{desktop.USE_SIM}",
            data={"backend": "auto"},
        )
    found = list(checks(env))
    if any(c.failed for c in found):
        raise DesktopUnreachable(
            desktop.unreachable_message(found, env),
            data={"backend": "auto -> atspi", "checks": [c.to_data() for c in found]},
        )
    return atspi_spec(cfg, env, secrets, notice=f"using AT-SPI: {desktop.summary(found)}")
