"""Daemon configuration: a TOML file plus ``DESKHAND_*`` environment overrides.

Pure apart from :func:`load`, which reads the file. Decoding goes through msgspec Structs that
forbid unknown keys, so a typo is an error that names the key instead of a setting silently
ignored. Precedence: built-in defaults < config file < environment < command line.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from deskhand_d import paths
from deskhand_d.errors import ConfigError
from deskhand_d.protocol.requests import Mode

LogLevel = Literal["debug", "info", "warning", "error"]


class DaemonConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    socket: str = ""
    """Socket path; empty means the platform default (see ``deskhand_d.paths``)."""
    max_message_bytes: Annotated[int, msgspec.Meta(ge=1024, le=1 << 30)] = 64 * 1024 * 1024
    max_outstanding_requests: Annotated[int, msgspec.Meta(ge=1, le=4096)] = 64
    max_clients: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 256
    hello_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 10.0
    """A connection that has not said hello this long after its WebSocket upgrade is closed
    (it would otherwise hold one of the ``max_clients`` slots for ever)."""
    idle_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=86_400)] = 60.0
    """A connection without a session (its session was closed) that has sent nothing and has
    no request in progress for this long is closed; connections with a session are kept."""
    log_level: LogLevel = "info"
    shutdown_grace_s: Annotated[float, msgspec.Meta(gt=0, le=60)] = 5.0


BackendKind = Literal["auto", "sky", "atspi", "sim", "command"]
SkyRecipe = Literal["auto", "permissions_profile", "config_override", "sandbox_state"]
WaylandInput = Literal["portal", "mutter"]


class BackendConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    kind: BackendKind = "auto"
    """Which computer-use backend to run (``auto``: the simulator only where there is no
    desktop session at all; otherwise Sky on macOS, AT-SPI on Linux, or a refusal with the fix,
    never a stand-in for a desktop it cannot reach)."""
    command: list[str] = msgspec.field(default_factory=list)
    """argv of an MCP stdio server, for ``kind = "command"``."""
    cwd: str = ""
    call_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 30.0
    start_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=600)] = 15.0
    sky_client: str = ""
    """Path of SkyComputerUseClient; empty means search the usual places."""
    codex: str = ""
    """Path of a signed ``codex`` used as the jump host for Sky; empty means search."""
    sky_recipe: SkyRecipe = "auto"
    """Which ``codex sandbox`` command line starts Sky (see ``deskhand_d.backends.skylaunch``);
    ``auto`` tries them in order, the one that last worked first."""
    wayland_input: WaylandInput = "portal"
    """How the Linux backend sends keys and clicks on a Wayland session: ``portal`` through the
    desktop's remote-desktop portal, which asks the person first; ``mutter`` through GNOME's
    own remote-desktop interface, which asks no one (only where the person chose it)."""


class NativeConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    default_mode: Mode = "native"
    allowed_apps: list[str] = msgspec.field(default_factory=list)
    """Base allowlist (empty: Calculator only); apps.json grants are added to it."""
    queue_depth: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 64
    session_grace_s: Annotated[float, msgspec.Meta(ge=0, le=86_400)] = 300.0
    launch_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=120)] = 10.0
    question_timeout_s: Annotated[float, msgspec.Meta(gt=0, le=86_400)] = 300.0
    """How long a question waits for the person (consent, an approval, a full trace) before
    it expires: refused, never accepted."""


class JevConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    turn_budget_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 180.0
    """Wall-clock time all of a turn's Jev runs may take together (approval waits count)."""
    turn_actions: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 30
    """Action attempts all of a turn's Jev runs may make together."""
    trace: Literal["off", "metadata"] = "off"
    """Metadata traces of every run (a full trace is asked for per run, with consent)."""
    trace_budget_bytes: Annotated[int, msgspec.Meta(ge=1024, le=1 << 34)] = 64 * 1024 * 1024
    """A trace that would grow past this stops its run (trace_incomplete)."""


class ConsentConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    platform: Literal["auto", "macos", "linux", "catalog"] = "auto"
    """How apps are identified (``auto``: the simulator's catalogue with the sim backend, else
    the platform this daemon runs on)."""
    catalog: str = ""
    """An identity catalogue file for ``platform = "catalog"`` (empty: the simulator's apps)."""


class SecretsConfig(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    redact_env: list[str] = msgspec.field(default_factory=lambda: ["TYPESAFE_API_KEY"])
    """Names of environment variables whose values are scrubbed from every log event, and
    which no program Deskhand starts gets (:mod:`deskhand_d.childenv`)."""


class Config(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    backend: BackendConfig = msgspec.field(default_factory=BackendConfig)
    native: NativeConfig = msgspec.field(default_factory=NativeConfig)
    consent: ConsentConfig = msgspec.field(default_factory=ConsentConfig)
    jev: JevConfig = msgspec.field(default_factory=JevConfig)
    secrets: SecretsConfig = msgspec.field(default_factory=SecretsConfig)

    def socket_path(self, env: Mapping[str, str]) -> Path:
        if self.daemon.socket:
            return Path(self.daemon.socket).expanduser()
        return paths.runtime_dir(dict(env)) / paths.SOCKET_NAME

    def secret_values(self, env: Mapping[str, str]) -> list[str]:
        """The configured secret values present in ``env`` (never logged themselves)."""
        return [env[name] for name in self.secrets.redact_env if env.get(name)]


def _json_argv(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        raise ValueError(
            'must be a JSON array of strings, e.g. ["python3", "/path/server.py"]'
        ) from None


def _number(value: str) -> Any:
    text = value.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"must be a number, not {value!r}") from None


# Environment variable -> (section, key, parser). The parsed value is then type-checked by
# msgspec like a value from the file.
ENV_OVERRIDES: dict[str, tuple[str, str, Callable[[str], Any]]] = {
    "DESKHAND_SOCKET": ("daemon", "socket", str),
    "DESKHAND_LOG_LEVEL": ("daemon", "log_level", str),
    "DESKHAND_MAX_MESSAGE_BYTES": ("daemon", "max_message_bytes", _number),
    "DESKHAND_MAX_OUTSTANDING_REQUESTS": ("daemon", "max_outstanding_requests", _number),
    "DESKHAND_BACKEND": ("backend", "kind", str),
    "DESKHAND_BACKEND_COMMAND": ("backend", "command", _json_argv),
    "DESKHAND_CALL_TIMEOUT_S": ("backend", "call_timeout_s", _number),
    "DESKHAND_SKY_RECIPE": ("backend", "sky_recipe", str),
    "DESKHAND_WAYLAND_INPUT": ("backend", "wayland_input", str),
    # The predecessor's name is accepted too; DESKHAND_MODE wins when both are set.
    "JEV_CUA_MODE": ("native", "default_mode", str),
    "DESKHAND_MODE": ("native", "default_mode", str),
    "DESKHAND_QUESTION_TIMEOUT_S": ("native", "question_timeout_s", _number),
    "DESKHAND_CONSENT_PLATFORM": ("consent", "platform", str),
    "DESKHAND_IDENTITY_CATALOG": ("consent", "catalog", str),
}


def config_file(env: Mapping[str, str]) -> Path:
    override = env.get("DESKHAND_CONFIG")
    if override:
        return Path(override)
    return paths.config_dir(dict(env)) / "config.toml"


def parse(
    text: str, *, source: str, env: Mapping[str, str], cli: Mapping[str, tuple[str, str, Any]] = {}
) -> Config:
    """Build a :class:`Config` from TOML text, environment and command-line overrides.

    Raises :class:`ConfigError` with a message naming the file and the offending key.
    """
    try:
        raw: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    origin: dict[tuple[str, str], str] = {}
    for var, (section, key, parser) in ENV_OVERRIDES.items():
        if var in env:
            raw.setdefault(section, {})
            if not isinstance(raw[section], dict):
                break  # let the decoder report the section's type error
            try:
                raw[section][key] = parser(env[var])
            except ValueError as exc:
                raise ConfigError(f"environment variable {var} {exc}") from None
            origin[(section, key)] = f"environment variable {var}"
    for flag, (section, key, value) in cli.items():
        raw.setdefault(section, {})
        if isinstance(raw[section], dict):
            raw[section][key] = value
            origin[(section, key)] = f"option {flag}"
    try:
        return msgspec.convert(raw, Config, strict=True)
    except msgspec.ValidationError as exc:
        raise ConfigError(_explain(exc, source, origin)) from None


def _explain(exc: msgspec.ValidationError, source: str, origin: dict[tuple[str, str], str]) -> str:
    text = str(exc)
    where = ""
    if " - at `$." in text:
        text, _, path = text.partition(" - at `$.")
        where = path.rstrip("`")
    if text.startswith("Object contains unknown field"):
        key = text.split("`")[1] if "`" in text else "?"
        full = f"{where}.{key}" if where else key
        return (
            f"{source}: unknown key `{full}`; remove it or check its spelling "
            "(see docs/configuration.md for the keys Deskhand reads)"
        )
    section, _, key = where.partition(".")
    if (section, key) in origin:
        return f"{origin[(section, key)]} (key `{where}`): {text}"
    if where:
        return f"{source}: key `{where}`: {text}"
    return f"{source}: {text}"


def load(
    env: Mapping[str, str] = os.environ, cli: Mapping[str, tuple[str, str, Any]] = {}
) -> Config:
    """Read the config file (missing is fine) and apply overrides."""
    path = config_file(env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the config file is not UTF-8 text") from None
    return parse(text, source=str(path), env=env, cli=cli)
