"""Which backend process to start, and how: ``sky``, ``atspi``, ``sim``, ``command``, ``auto``.

Pure apart from looking at the file system and, for Sky, asking the ``codex`` found what its
``sandbox`` command accepts (:mod:`deskhand_d.backends.codexprobe`: once per codex build, the
answer cached). Sky needs care (see the Sky protocol notes): ``SkyComputerUseClient mcp`` only
accepts tool calls when its parent process is signed by OpenAI, so it is started behind a
signed ``codex`` as a jump host, from ``$CODEX_HOME/computer-use`` (or the folder holding the
``Codex Computer Use.app`` the client was found in), with one of the command lines in
:mod:`deskhand_d.backends.skylaunch` (the predecessor's ``codex sandbox --permissions-profile
:danger-full-access --allow-unix-socket <IPC dir> -- <client> mcp`` first, spelt the way that
codex takes it), spawned as its own responsible process where macOS allows it. Every part of
Sky's runtime that is missing is named in the refusal.
Every backend gets the daemon's environment minus every secret (:mod:`deskhand_d.childenv`):
a backend has no business with them. ``secrets`` below are the configured secret variable
*names* (``secrets.redact_env``).

``auto`` never lets the simulator pass for a real desktop. It picks the simulator only where
there is no desktop session at all (no ``DISPLAY``, ``WAYLAND_DISPLAY`` or session bus: a
server, CI). Where there is one, it picks the real backend (Sky on macOS; on Linux the AT-SPI
server once :func:`.desktopprobe.run` finds the X display, XTEST and the accessibility bus), or
refuses with the fix (:class:`~deskhand_d.errors.DesktopUnreachable`, or Sky's own
``backend_unavailable``) rather than fall back.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

import structlog

from deskhand_d import paths, sessionkind
from deskhand_d.backends import codexprobe, desktop, desktopprobe, skylaunch
from deskhand_d.backends.mcpclient.connection import LaunchSpec
from deskhand_d.backends.skylaunch import codex_home
from deskhand_d.childenv import child_env
from deskhand_d.config import BackendConfig
from deskhand_d.errors import BackendUnavailable, DesktopUnreachable

log = structlog.get_logger("deskhand.backend")

_CLIENT_IN_APP = skylaunch.CLIENT_IN_APP


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
    """Sky behind the signed codex: the first recipe to try, the others as its fallbacks."""
    explicit = env.get("DESKHAND_SKY_CLIENT") or cfg.sky_client  # environment wins
    searched = [Path(explicit)] if explicit else sky_client_candidates(env)
    client = find_first(searched)
    override = env.get("DESKHAND_CODEX") or cfg.codex
    codex_searched = [Path(override)] if override else codex_candidates()
    codex = find_first(codex_searched)
    runtime, missing = skylaunch.check_runtime(
        client,
        searched,
        codex,
        codex_searched,
        skylaunch.ipc_dir(env),
        skylaunch.working_dir(cfg.cwd, env, client),
    )
    if runtime is None:
        raise BackendUnavailable(
            "Sky cannot start, its runtime is incomplete: "
            + "; ".join(f"{m.describe()}: {m.fix}" for m in missing),
            data={
                "backend": "sky",
                "reason": "runtime_missing",
                "missing": [m.to_data() for m in missing],
            },
        )
    state = paths.state_dir(dict(env))
    cache = codexprobe.ShapeCache(state / codexprobe.CACHE_NAME)
    answer = codexprobe.shape_for(runtime.codex, child_env(env, secrets), runtime.cwd, cache)
    shape = answer.shape
    offered = [r for r in skylaunch.RECIPES if shape.offers(r)]
    log.info(
        "backend.codex_shape",
        codex=str(runtime.codex),
        version=shape.version,
        shape=shape.describe(),
        origin=answer.origin,
        recipes=offered,
        **({"detail": answer.detail} if answer.detail else {}),
    )
    notice = ""
    if answer.origin == "assumed":
        notice = (
            f"could not tell which command lines this codex accepts ({answer.detail}); "
            "Deskhand tries each one it knows"
        )
    memory = skylaunch.RecipeMemory(state / skylaunch.MEMORY_NAME)
    remembered = memory.read(runtime.codex) if cfg.sky_recipe == "auto" else ""
    names, choice = skylaunch.order(cfg.sky_recipe, remembered, offered)

    def remember(recipe: str) -> None:
        if cfg.sky_recipe != "auto":
            return  # a pinned recipe is the person's choice, not something learnt
        try:
            memory.write(runtime.codex, recipe)
        except OSError as exc:
            log.warning("backend.recipe_not_remembered", path=str(memory.path), error=str(exc))

    specs = [
        LaunchSpec(
            kind="sky",
            argv=skylaunch.argv(name, runtime, shape),
            env=child_env(env, secrets),
            cwd=str(runtime.cwd),
            notice=notice,
            recipe=name,
            recipe_choice=choice,
            refusal=skylaunch.refusal,
            remember=remember,
            disclaim=True,
        )
        for name in names
    ]
    return dataclasses.replace(specs[0], fallbacks=tuple(specs[1:]))


WAYLAND_INPUT_ENV: Final = "DESKHAND_WAYLAND_INPUT"


def _bundled_spec(
    kind: str, cfg: BackendConfig, env: Mapping[str, str], secrets: Sequence[str], notice: str
) -> LaunchSpec:
    """A backend that ships with Deskhand: ``python -m deskhand_d.programs.<kind>``."""
    return LaunchSpec(
        kind=kind,
        argv=(sys.executable, "-m", f"deskhand_d.programs.{kind}"),
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
    spec = _bundled_spec("atspi", cfg, env, secrets, notice)
    # The backend reads the person's choice of Wayland input from its environment (see
    # deskhand_d.programs.atspi.wlscreen), whichever way the daemon was configured.
    return dataclasses.replace(spec, env={**spec.env, WAYLAND_INPUT_ENV: cfg.wayland_input})


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
    return desktopprobe.run(env, screenshot=False)


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
                f"{exc.message}. {desktop.USE_SIM}", data={**exc.data, "backend": "auto -> sky"}
            ) from None
    if not sessionkind.session_present(env):
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
    if any(c.failed and c.name in desktop.ESSENTIAL for c in found):
        raise DesktopUnreachable(
            desktop.unreachable_message(found, env),
            data={"backend": "auto -> atspi", "checks": [c.to_data() for c in found]},
        )
    return atspi_spec(cfg, env, secrets, notice=f"using AT-SPI: {desktop.summary(found)}")
